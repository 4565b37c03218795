import { describe, expect, it } from 'vitest';
import { ZzRepo } from '../../src/core/index.js';
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
