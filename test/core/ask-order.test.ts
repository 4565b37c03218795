import { describe, expect, it } from 'vitest';
import { askOrderStats, compareAsks, sortedAsks } from '../../src/core/ask-order.js';
import { CowMap } from '../../src/core/cow-map.js';
import type { LaneState } from '../../src/core/lane-state.js';
import { leaseEndMs } from '../../src/core/views.js';
import type { AskDoc } from '../../src/schema/lane.js';
import { prng, testSeed } from '../helpers/seeded.js';

// sortedAsks carries a Lane's last order to its next state (ask-order.ts orderFrom) instead of
// sorting every Ask again: each state's answer must still be the full sort of that state,
// whatever changed between the two (new Asks, a priority or posting time that moved, a claim
// that moved nothing) and whichever state came before (a draft's second fork, a map rebuilt in
// another order, another Lane's states in between). Chunks of 2 in the maps, so that forks
// share and split chunks in every round, as cow-map.test.ts does.

type Doc = Pick<
  AskDoc,
  'ask_id' | 'priority' | 'posted_at' | 'state' | 'lease_expires_at' | 'title'
>;

const REPO = 'example/repo';

const stateOf = (laneId: string, asks: CowMap<string, Doc>) =>
  ({ lane: { lane_id: laneId }, asks }) as unknown as LaneState;

/** What sortedAsks must answer: every Ask of the state sorted whole, lease ends beside. */
function expected(s: LaneState) {
  const asks = s.asks.valuesArray().sort(compareAsks);
  return { ids: asks.map((a) => a.ask_id), ends: asks.map((a) => leaseEndMs(a)) };
}

function got(s: LaneState) {
  const r = sortedAsks(s, REPO);
  return { ids: r.asks.map((a) => a.ask_id), ends: [...r.leaseEnds] };
}

const idsOf = (s: LaneState, repoKey: string) => sortedAsks(s, repoKey).asks.map((x) => x.ask_id);

describe('sortedAsks from the Lane’s previous order', () => {
  it('answers the full sort of every state of a changing Lane', () => {
    const random = prng(testSeed('sortedAsks'));
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)]!;
    // Few priorities and posting times: ties that the id must break are common.
    const times = Array.from({ length: 6 }, (_, i) => `2026-12-03T10:00:0${i}.000Z`);
    let made = 0;
    const newAsk = (): Doc => ({
      ask_id: `ask-${Math.floor(random() * 1e9).toString(36)}-${made++}`,
      priority: pick([0, 1, 2, 3]),
      posted_at: pick(times),
      state: 'open',
      lease_expires_at: null,
      title: 't',
    });
    const lanes = ['one', 'two'].map((id) => {
      const asks = new CowMap<string, Doc>(undefined, 1);
      for (let i = 0; i < 20; i++) {
        const a = newAsk();
        asks.set(a.ask_id, a);
      }
      return { id, asks };
    });
    for (let round = 0; round < 400; round++) {
      const lane = pick(lanes);
      const r = random();
      let next: CowMap<string, Doc>;
      if (r < 0.1) {
        // The map built again in another order (a Lane read again from its ref): the prior's
        // positions name other Asks.
        const docs = lane.asks.valuesArray().reverse();
        next = new CowMap(
          docs.map((d) => [d.ask_id, d] as const),
          1,
        );
      } else {
        next = lane.asks.fork();
        if (r < 0.2) {
          // A draft thrown away: a second fork of the same state is what becomes the next one.
          const draft = next;
          draft.set('thrown-away', newAsk());
          expect(got(stateOf(lane.id, draft))).toEqual(expected(stateOf(lane.id, draft)));
          next = lane.asks.fork();
        }
        const ids = next.valuesArray().map((a) => a.ask_id);
        for (let k = Math.floor(random() * 4); k > 0; k--) {
          const a = newAsk();
          next.set(a.ask_id, a);
        }
        for (let k = Math.floor(random() * 4); k > 0; k--) {
          const id = pick(ids);
          const a = next.get(id)!;
          const change = random();
          if (change < 0.35) next.set(id, { ...a, priority: pick([0, 1, 2, 3]) });
          else if (change < 0.5) next.set(id, { ...a, posted_at: pick(times) });
          else {
            // A claim: the key stays, the lease end changes.
            next.set(id, {
              ...a,
              state: 'claimed',
              lease_expires_at: pick([null, '2026-12-03T11:00:00.000Z']),
            });
          }
        }
      }
      lane.asks = next;
      const s = stateOf(lane.id, next);
      expect(got(s)).toEqual(expected(s));
      // Asked again: the same answer (the state's own cache).
      expect(sortedAsks(s, REPO)).toBe(sortedAsks(s, REPO));
    }
  });

  it('keeps an older state’s order when a newer one was sorted first', () => {
    const a = (id: string, priority: number): Doc => ({
      ask_id: id,
      priority,
      posted_at: '2026-12-03T10:00:00.000Z',
      state: 'open',
      lease_expires_at: null,
      title: 't',
    });
    const v1 = new CowMap<string, Doc>([['x', a('x', 1)] as const, ['y', a('y', 2)] as const], 1);
    const v2 = v1.fork();
    v2.set('y', a('y', 0));
    v2.set('z', a('z', 1));
    expect(got(stateOf('l', v2)).ids).toEqual(['y', 'x', 'z']);
    // The older state, read after: more Asks in the prior than in it, sorted in full.
    expect(got(stateOf('l', v1)).ids).toEqual(['x', 'y']);
  });

  it("carries each repository's _repo order: two repositories read in turn both hit", () => {
    const a = (id: string): Doc => ({
      ask_id: id,
      priority: 2,
      posted_at: '2026-12-03T10:00:00.000Z',
      state: 'open',
      lease_expires_at: null,
      title: 't',
    });
    const repos = ['one/repo', 'two/repo'].map((key) => {
      const asks = new CowMap<string, Doc>(undefined, 1);
      for (let i = 0; i < 10; i++) asks.set(`${key}-${i}`, a(`${key}-${i}`));
      return { key, asks };
    });
    // First read of each: nothing to carry from.
    for (const r of repos) sortedAsks(stateOf('_repo', r.asks), r.key);
    const before = { ...askOrderStats };
    for (let round = 0; round < 5; round++) {
      for (const r of repos) {
        r.asks = r.asks.fork();
        r.asks.set(`${r.key}-new-${round}`, a(`${r.key}-new-${round}`));
        const s = stateOf('_repo', r.asks);
        expect(idsOf(s, r.key)).toEqual(expected(s).ids);
      }
    }
    expect(askOrderStats.carried - before.carried).toBe(10);
    expect(askOrderStats.sorted - before.sorted).toBe(0);
  });
});
