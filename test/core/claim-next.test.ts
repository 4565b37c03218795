import { describe, expect, it } from 'vitest';
import { askClaimNext, ZzRepo } from '../../src/core/index.js';
import { LIMITS } from '../../src/schema/limits.js';
import { ALICE, BOB, call, gitRepo, memoryRepo, OWNER, rejects } from '../helpers/core-fixture.js';

// ask_claim_next (issue 18): the server picks and claims in one commit.

type Ask = { ask_id: string; title: string; holder: string | null };

describe('ask_claim_next', () => {
  it('claims the highest-priority, oldest claimable Ask in scope; null when none', async () => {
    const { repo, clock } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', {
      lane_id: 'l',
      title: 'L',
      maintainers: [ALICE.actor],
    });
    const post = async (title: string, extra: Record<string, unknown> = {}) => {
      clock.advance(1);
      return (await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title, ...extra }))
        .ask as Ask;
    };
    const low = await post('low', { priority: 3 });
    const oldHigh = await post('old high', { priority: 1 });
    const newHigh = await post('new high', { priority: 1 });
    const blocked = await post('blocked', { priority: 0, depends_on: [low.ask_id] });
    // Only maintainers (ALICE) may claim reviews: BOB never gets this one.
    await call(repo, ALICE, 'ask_post', {
      lane_id: 'l',
      kind: 'changeset_review',
      title: 'review',
      priority: 0,
    });
    const next = async (who = BOB, extra: Record<string, unknown> = {}) =>
      (await call(repo, who, 'ask_claim_next', { lane_id: 'l', ...extra })).ask as Ask | null;

    expect((await next())?.ask_id).toBe(oldHigh.ask_id);
    expect((await next())?.ask_id).toBe(newHigh.ask_id);
    const got = await next();
    expect(got?.ask_id).toBe(low.ask_id);
    expect(got?.holder).toBe(BOB.actor);
    expect(await next()).toBeNull(); // blocked by low (claimed, not answered); review out of scope
    expect(await next(BOB, { kinds: ['changeset_review'] })).toBeNull();

    await call(repo, BOB, 'ask_answer', {
      lane_id: 'l',
      ask_id: low.ask_id,
      outcome: 'complete',
      result: 'ok',
    });
    expect((await next())?.ask_id).toBe(blocked.ask_id);

    // An expired lease is free again (the highest priority first); a live one is not.
    clock.advance(31 * 60);
    const again = await next(ALICE, { kinds: ['work'] });
    expect(again?.ask_id).toBe(blocked.ask_id);
    expect(again?.holder).toBe(ALICE.actor);
    expect((await next(ALICE, { kinds: ['work'] }))?.ask_id).toBe(oldHigh.ask_id);
    // ALICE maintains the Lane: the review is hers to take.
    expect((await next(ALICE))?.title).toBe('review');
  });

  it('the same idempotency_key returns the same Ask; refuses a caller without a token', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    for (const t of ['a', 'b'])
      await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: t });
    const first = await call(repo, BOB, 'ask_claim_next', { lane_id: 'l', idempotency_key: 'k1' });
    const retry = await call(repo, BOB, 'ask_claim_next', { lane_id: 'l', idempotency_key: 'k1' });
    expect(retry.ask!.ask_id).toBe(first.ask!.ask_id);
    expect(retry.replayed).toBe(true);
    expect(first.replayed).toBe(false);
    const other = await call(repo, BOB, 'ask_claim_next', { lane_id: 'l', idempotency_key: 'k2' });
    expect(other.ask!.ask_id).not.toBe(first.ask!.ask_id);
    await rejects(call(repo, null, 'ask_claim_next', { lane_id: 'l' }), 'unauthorized');
    await rejects(call(repo, BOB, 'ask_claim_next', { lane_id: 'nope' }), 'not_found');
  });

  it('exclude passes over the Asks named and keeps the order of the rest', async () => {
    const { repo, clock } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    const ids: string[] = [];
    for (const [t, priority] of [
      ['p0', 0],
      ['p1-old', 1],
      ['p1-new', 1],
      ['p2', 2],
    ] as const) {
      clock.advance(1);
      const r = await call(repo, ALICE, 'ask_post', {
        lane_id: 'l',
        kind: 'work',
        title: t,
        priority,
      });
      ids.push(r.ask.ask_id);
    }
    const [p0, p1old, p1new, p2] = ids as [string, string, string, string];
    const next = async (exclude: string[]) =>
      (await call(repo, BOB, 'ask_claim_next', { lane_id: 'l', exclude })).ask?.ask_id ?? null;
    // An id that names no Ask is simply not met; the head is passed over, the next in order taken.
    expect(await next([p0, 'ask-0000000000'])).toBe(p1old);
    expect(await next([p0, p1old])).toBe(p1new);
    // Every Ask left excluded: nothing is claimable for this call, though p0 and p2 are open.
    expect(await next([p0, p2])).toBeNull();
    expect(await next([])).toBe(p0);
    expect(await next([])).toBe(p2);
    expect(await next([])).toBeNull();
  });

  it('the same key and the same exclude replay the claim; another exclude is another request', async () => {
    const { repo, clock } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    const ids: string[] = [];
    for (const title of ['a', 'b', 'c']) {
      clock.advance(1);
      const r = await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title });
      ids.push(r.ask.ask_id);
    }
    const [a, b, c] = ids as [string, string, string];
    const claim = (exclude: string[] | undefined, key: string) =>
      call(repo, BOB, 'ask_claim_next', {
        lane_id: 'l',
        idempotency_key: key,
        ...(exclude ? { exclude } : {}),
      });
    const first = await claim([a, c], 'k1');
    expect(first.ask!.ask_id).toBe(b);
    // Listed in another order, twice: the same set, so the same request.
    const retry = await claim([c, a, c], 'k1');
    expect(retry).toMatchObject({ replayed: true, ask: { ask_id: b, holder: BOB.actor } });
    expect(retry.revision).toBe(first.revision);
    await rejects(claim([a], 'k1'), 'idempotency_conflict');
    await rejects(claim(undefined, 'k1'), 'idempotency_conflict');
    // An empty exclude is no exclude: a key used without one replays with [] as well.
    const plain = await claim(undefined, 'k2');
    expect(plain.ask!.ask_id).toBe(a);
    expect(await claim([], 'k2')).toMatchObject({ replayed: true, ask: { ask_id: a } });
    // Only one claim each was recorded: the replays wrote nothing.
    const lane = await call(repo, OWNER, 'lane_get', { lane_id: 'l' });
    const claims = (lane.history as { op: string }[]).filter((h) => h.op === 'ask_claim');
    expect(claims).toHaveLength(2);
  });

  it(`exclude holds at most ${LIMITS.claimExclude} Ask ids, each an ask id`, async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: 'a' });
    const ids = (n: number) =>
      Array.from({ length: n }, (_, i) => `ask-${i.toString(16).padStart(10, '0')}`);
    const atBound = await call(repo, BOB, 'ask_claim_next', {
      lane_id: 'l',
      exclude: ids(LIMITS.claimExclude),
    });
    expect(atBound.ask!.title).toBe('a');
    await rejects(
      call(repo, BOB, 'ask_claim_next', { lane_id: 'l', exclude: ids(LIMITS.claimExclude + 1) }),
      'invalid_argument',
      /^exclude: at most 100 Ask ids: pass over only the Asks you mean to retry later$/,
    );
    await rejects(
      call(repo, BOB, 'ask_claim_next', { lane_id: 'l', exclude: ['README.md'] }),
      'invalid_argument',
      /^exclude\.0: ask_id must look like ask-<10 hex>$/,
    );
    // Core refuses it too, for a caller that does not come through the tool's schema.
    await rejects(
      askClaimNext(repo, BOB, { lane_id: 'l', exclude: ids(LIMITS.claimExclude + 1) }),
      'invalid_argument',
      /exclude: at most 100 Ask ids, got 101/,
    );
  });

  it('many parallel callers on two daemons of one git repo: each Ask claimed exactly once', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    // A second ZzRepo on the same checkout: its own Entities and queues, so the two race
    // through the ref's compare-and-swap as two processes would.
    const other = await ZzRepo.open(dir, { key: 'local/test' });
    try {
      await call(repo, OWNER, 'lane_propose', { lane_id: 'q', title: 'Queue' });
      const N = 60;
      for (let i = 0; i < N; i++) {
        await call(repo, OWNER, 'ask_post', { lane_id: 'q', kind: 'work', title: `t${i}` });
      }
      const claims = new Map<string, string>();
      const agents = Array.from({ length: 24 }, (_, i) => ({ actor: `agent${i}@example.com` }));
      await Promise.all(
        agents.map(async (agent, i) => {
          const r = i % 2 === 0 ? repo : other;
          for (;;) {
            const res = await call(r, agent, 'ask_claim_next', { lane_id: 'q' });
            if (res.ask === null) return;
            const prev = claims.get(res.ask.ask_id);
            expect(prev, `${res.ask.ask_id} claimed by ${prev} and ${agent.actor}`).toBeUndefined();
            claims.set(res.ask.ask_id, agent.actor);
            expect(res.ask.holder).toBe(agent.actor);
          }
        }),
      );
      expect(claims.size).toBe(N);
      // What is stored agrees: every Ask claimed, by the agent that was told it won.
      const lane = await call(repo, OWNER, 'lane_get', { lane_id: 'q', include_history: false });
      for (const a of lane.asks as Ask[]) expect(a.holder).toBe(claims.get(a.ask_id));
    } finally {
      other.close();
      cleanup();
    }
  });
});
