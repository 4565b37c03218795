import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { ZzRepo } from '../../src/core/index.js';
import { pageEnd } from '../../src/core/paging.js';
import { commitOps, configureOpCache, opCacheSize } from '../../src/store/index.js';
import { ALICE, BOB, call, FakeClock, gitRepo, memoryRepo } from '../helpers/core-fixture.js';
import { testSeed } from '../helpers/seeded.js';

// The read path's caches answer exactly what a fresh computation would: ops parsed once per
// commit (and shared, frozen, by every reader), a lane_get history view served again only
// while no lease passes, and pages cut at the same place by running totals.

const DEFAULT_LIMITS = configureOpCache({});
afterEach(() => configureOpCache(DEFAULT_LIMITS));

async function laneWithAsks(repo: ZzRepo, n: number): Promise<string[]> {
  await call(repo, ALICE, 'lane_propose', { lane_id: 'feat', title: 'Feature' });
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await call(repo, ALICE, 'ask_post', {
      lane_id: 'feat',
      kind: 'work',
      title: `t${i}`,
    });
    ids.push(r.ask.ask_id);
  }
  return ids;
}

describe('op parse cache', () => {
  it('a reopened repository folds the ops the first one parsed (validated once per commit)', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    try {
      await laneWithAsks(repo, 3);
      const again = await ZzRepo.open(dir, { key: 'local/test' });
      const third = await ZzRepo.open(dir, { key: 'local/test' });
      try {
        const a = (await again.lane('feat').read()).log;
        const b = (await third.lane('feat').read()).log;
        expect(a.map((o) => o.op)).toEqual(['lane_propose', 'ask_post', 'ask_post', 'ask_post']);
        // The same typed op objects: neither JSON nor zod ran again for the second reader.
        a.forEach((op, i) => expect(b.at(i)!.args).toBe(op.args));
      } finally {
        again.close();
        third.close();
      }
    } finally {
      cleanup();
    }
  });

  it('holds at most maxOps ops, shares them frozen, and still parses what it evicted', async () => {
    configureOpCache({ maxOps: 3 });
    const { repo, dir, cleanup } = await gitRepo();
    try {
      await laneWithAsks(repo, 6);
      const history = await repo.store.history('refs/zz/lanes/feat');
      expect(history.flatMap((c) => c.ops.map((o) => o.op))).toHaveLength(7);
      expect(opCacheSize().ops).toBeLessThanOrEqual(3);
      const op = history[history.length - 1]!.ops[0]!;
      expect(Object.isFrozen(op) && Object.isFrozen(op.args)).toBe(true);
      expect(() => {
        (op.args as Record<string, unknown>).title = 'changed';
      }).toThrow(TypeError);
      const again = await ZzRepo.open(dir, { key: 'local/test' });
      try {
        expect((await again.lane('feat').read()).state.asks.size).toBe(6);
      } finally {
        again.close();
      }
    } finally {
      cleanup();
    }
  });

  it('a malformed commit is reported the same from the cache', () => {
    const message = 'x\n\nzz-ops [{"id":1}]\n';
    const first = commitOps(message, 'f'.repeat(40));
    expect(first.malformed).toMatch(/an op is malformed: 0\.id/);
    expect(commitOps(message, 'f'.repeat(40))).toEqual(first);
  });
});

describe('lane_get views', () => {
  it('history shows a lease passing after an earlier read of the same state, and the clock going back', async () => {
    const clock = new FakeClock();
    const { repo } = await memoryRepo(clock);
    const [id] = await laneWithAsks(repo, 1);
    await call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: id!, lease_seconds: 10 });
    const ops = async () =>
      (await call(repo, ALICE, 'lane_get', { lane_id: 'feat' })).history.map((h) => h.op);
    expect(await ops()).not.toContain('ask_lease_expired');
    clock.advance(11);
    expect(await ops()).toContain('ask_lease_expired');
    clock.advance(-11);
    expect(await ops()).not.toContain('ask_lease_expired');
  });

  it('lane_list counts leases running out one by one on one state, exactly at their end, and the clock going back', async () => {
    const clock = new FakeClock();
    const { repo } = await memoryRepo(clock);
    const ids = await laneWithAsks(repo, 4);
    // Claimed in an order other than their lease ends: the counts must not lean on claim order.
    for (const [i, secs] of [
      [0, 30],
      [1, 10],
      [2, 20],
    ] as const) {
      await call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: ids[i]!, lease_seconds: secs });
    }
    const counts = async () => {
      const lanes = (await call(repo, ALICE, 'lane_list', {})).lanes;
      const c = lanes.find((l) => l.lane_id === 'feat')!.counts;
      return [c.open, c.claimed, c.total];
    };
    expect(await counts()).toEqual([1, 3, 4]);
    clock.advance(10); // the 10 s lease ends now: ended
    expect(await counts()).toEqual([2, 2, 4]);
    clock.advance(9.999);
    expect(await counts()).toEqual([2, 2, 4]);
    clock.advance(0.001);
    expect(await counts()).toEqual([3, 1, 4]);
    clock.advance(60);
    expect(await counts()).toEqual([4, 0, 4]);
    clock.advance(-80);
    expect(await counts()).toEqual([1, 3, 4]);
  });

  it('after a write, Asks the write changed (or whose dependencies it changed) are shown anew', async () => {
    const { repo } = await memoryRepo();
    const [a] = await laneWithAsks(repo, 2);
    const b = await call(repo, ALICE, 'ask_post', {
      lane_id: 'feat',
      kind: 'work',
      title: 'after a',
      depends_on: [a!],
    });
    const view = async (id: string) =>
      (await call(repo, ALICE, 'lane_get', { lane_id: 'feat' })).asks.find((x) => x.ask_id === id)!;
    expect((await view(b.ask.ask_id)).blocked).toBe(true);
    await call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: a! });
    expect((await view(a!)).holder).toBe(BOB.actor);
    await call(repo, BOB, 'ask_answer', {
      lane_id: 'feat',
      ask_id: a!,
      outcome: 'complete',
      result: 'ok',
    });
    expect((await view(a!)).state).toBe('answered');
    // b's document did not change, but its dependency did.
    expect((await view(b.ask.ask_id)).blocked).toBe(false);
  });

  it('pageEnd cuts pages where summing the page item by item does', () => {
    // The rule, written out plainly: at most `limit` items; past the first, stop before the
    // item that takes the page over maxBytes of JSON.
    const naive = (items: object[], start: number, limit: number | undefined, max: number) => {
      const last = Math.min(items.length, start + (limit ?? items.length));
      let bytes = 0;
      for (let i = start; i < last; i++) {
        bytes += Buffer.byteLength(JSON.stringify(items[i]));
        if (bytes > max && i > start) return i;
      }
      return last;
    };
    const seed = testSeed('pageEnd');
    fc.assert(
      fc.property(
        fc.array(fc.nat({ max: 60 }), { maxLength: 40 }),
        fc.array(
          fc.tuple(
            fc.nat({ max: 45 }),
            fc.option(fc.integer({ min: 1, max: 45 }), { nil: undefined }),
          ),
          { minLength: 1, maxLength: 4 },
        ),
        fc.integer({ min: 1, max: 400 }),
        (sizes, pages, maxBytes) => {
          const items = sizes.map((n) => ({ s: 'x'.repeat(n) }));
          // Several pages of one array: later ones answer from the totals earlier ones filled.
          for (const [start, limit] of pages) {
            expect(pageEnd(items, start, limit, maxBytes)).toBe(
              naive(items, start, limit, maxBytes),
            );
          }
        },
      ),
      { seed, numRuns: 2000 },
    );
  });
});
