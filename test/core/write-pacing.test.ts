import { describe, expect, it } from 'vitest';
import { ANSWERS_PER_TURN } from '../../src/core/write-op.js';
import { ALICE, call, memoryRepo } from '../helpers/core-fixture.js';

// Issue 17: the answers of one group commit are let out a few per turn of the event loop, so
// that requests arriving meanwhile (reads) are served between them instead of after them all.
// Counted in turns (a setImmediate probe), not timed.

describe('answers of a group commit', () => {
  it(`reach their callers at most ${ANSWERS_PER_TURN} per turn of the event loop`, async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'p', title: 'P' });
    let turn = 0;
    let probing = true;
    const tick = () => {
      turn++;
      if (probing) setImmediate(tick);
    };
    setImmediate(tick);
    const WRITES = 3 * ANSWERS_PER_TURN;
    const answeredIn: number[] = [];
    const posted = await Promise.all(
      Array.from({ length: WRITES }, (_, i) =>
        call(repo, ALICE, 'ask_post', { lane_id: 'p', kind: 'work', title: `t${i}` }).then((r) => {
          answeredIn.push(turn);
          return r;
        }),
      ),
    );
    probing = false;
    // They were committed together (one revision), and answered over several turns.
    expect(new Set(posted.map((r) => r.revision)).size).toBe(1);
    const perTurn = new Map<number, number>();
    for (const t of answeredIn) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    expect(Math.max(...perTurn.values())).toBeLessThanOrEqual(ANSWERS_PER_TURN);
    expect(perTurn.size).toBeGreaterThanOrEqual(WRITES / ANSWERS_PER_TURN);
    // Every write is in the Lane, each once.
    const lane = await call(repo, ALICE, 'lane_get', { lane_id: 'p', asks_limit: 100 });
    expect(lane.asks.map((a: { title: string }) => a.title).sort()).toEqual(
      Array.from({ length: WRITES }, (_, i) => `t${i}`).sort(),
    );
  });
});
