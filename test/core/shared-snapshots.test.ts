import { describe, expect, it } from 'vitest';
import { asksOf, historyView, type HistoryEntry } from '../../src/core/index.js';
import type { Seq } from '../../src/core/paging.js';
import type { LaneState, ZzRepo } from '../../src/core/index.js';
import type { Snapshot } from '../../src/store/index.js';
import { ALICE, BOB, call, FakeClock, memoryRepo } from '../helpers/core-fixture.js';
import { prng, testSeed } from '../helpers/seeded.js';

// Snapshots handed to readers never change under them, though the newest one shares what it
// holds with the next (issue 17): a Lane's maps share chunks of values (cow-map.ts), its derived
// history is one append-only array whose views each keep their own length (views.ts), and the
// op log is shared the same way (store/op-log.ts). Here readers hold old snapshots while the
// Lane is written and read on; every held snapshot must read, after each step, exactly as it
// did when it was taken, and as a derivation of its own that shares nothing.

const list = <T>(s: Seq<T>): T[] => Array.from({ length: s.length }, (_, i) => s.at(i)!);

/** The history of `log` derived afresh: a log whose first op is a copy shares no cache. */
function freshHistory(snap: Snapshot<LaneState>, now: Date): HistoryEntry[] {
  const log = [{ ...snap.log.at(0)! }, ...snap.log.slice(1)];
  return list(historyView(log, now, snap.state.rejected));
}

type Held = {
  snap: Snapshot<LaneState>;
  log: string;
  asks: string;
  history: string;
  /** The history list as a reader holds it across awaits (lane_get pages it after one). */
  view: Seq<HistoryEntry>;
  at: number;
};

async function laneSnap(repo: ZzRepo): Promise<Snapshot<LaneState>> {
  return repo.lane('feat').read();
}

describe('snapshots shared between versions', () => {
  it('an old snapshot reads as it did, whatever is committed and read after it', async () => {
    const seed = testSeed('shared-snapshots');
    const random = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const clock = new FakeClock();
    const { repo } = await memoryRepo(clock);
    await call(repo, ALICE, 'lane_propose', { lane_id: 'feat', title: 'Feature' });
    const ids: string[] = [];
    const held: Held[] = [];
    const take = (snap: Snapshot<LaneState>): Held => {
      const view = historyView(snap.log, new Date(clock.t), snap.state.rejected);
      return {
        snap,
        at: clock.t,
        log: JSON.stringify(snap.log),
        asks: JSON.stringify(list(asksOf(snap.state))),
        history: JSON.stringify(list(view)),
        view,
      };
    };
    for (let step = 0; step < 250; step++) {
      const r = random();
      // Writes of every kind, several at once now and then (one group commit).
      const writes: Array<Promise<unknown>> = [];
      for (let k = random() < 0.3 ? 4 : 1; k > 0; k--) {
        if (r < 0.45 || ids.length === 0) {
          writes.push(
            call(repo, ALICE, 'ask_post', {
              lane_id: 'feat',
              kind: 'work',
              title: `t${step}`,
              ...(ids.length > 0 && random() < 0.2 ? { depends_on: [pick(ids)] } : {}),
            }).then((p) => ids.push(p.ask.ask_id)),
          );
        } else if (r < 0.7) {
          const lease = 5 + Math.floor(random() * 15);
          writes.push(
            call(repo, BOB, 'ask_claim', {
              lane_id: 'feat',
              ask_id: pick(ids),
              lease_seconds: lease,
            }).catch(() => {}),
          );
        } else if (r < 0.8) {
          writes.push(
            call(repo, BOB, 'ask_answer', {
              lane_id: 'feat',
              ask_id: pick(ids),
              outcome: 'complete',
              result: 'ok',
            }).catch(() => {}),
          );
        } else if (r < 0.85) {
          writes.push(
            call(repo, BOB, 'ask_release', { lane_id: 'feat', ask_id: pick(ids) }).catch(() => {}),
          );
        }
      }
      await Promise.all(writes);
      if (random() < 0.5) clock.advance(Math.floor(random() * 30));
      // Readers: the newest state read through lane_get (which derives and caches its
      // history and sizes pages), and now and then held for later.
      const snap = await laneSnap(repo);
      if (random() < 0.7) {
        await call(repo, ALICE, 'lane_get', {
          lane_id: 'feat',
          asks_limit: 1 + Math.floor(random() * 20),
          history_limit: 1 + Math.floor(random() * 20),
        });
      }
      if (random() < 0.25) held.push(take(snap));
      // A held snapshot read again at its own time: as it was, and as a fresh derivation.
      const h = held.length > 0 ? pick(held) : null;
      if (h) {
        const again = take(h.snap);
        const then = new Date(h.at);
        const history = list(historyView(h.snap.log, then, h.snap.state.rejected));
        const where = `seed ${seed}, step ${step}, a snapshot of ${h.snap.log.length} ops`;
        expect(again.log, where).toBe(h.log);
        expect(again.asks, where).toBe(h.asks);
        expect(JSON.stringify(history), where).toBe(h.history);
        expect(JSON.stringify(list(h.view)), where).toBe(h.history);
        expect(history, where).toEqual(freshHistory(h.snap, then));
        // And at the time now (a view made after later ops were appended to shared arrays).
        const now = new Date(clock.t);
        expect(list(historyView(h.snap.log, now, h.snap.state.rejected)), where).toEqual(
          freshHistory(h.snap, now),
        );
      }
    }
    expect(held.length).toBeGreaterThan(10);
  });
});
