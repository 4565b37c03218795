import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/schema/limits.js';
import {
  MAX_BACKOFF_MS,
  MAX_GIVE_BACKS,
  MAX_WAITING,
  REMEMBER_MS,
  Waiting,
} from '../../src/work/waiting.js';

// The Asks a worker gave back and waits on: pruned as they stop mattering, bounded always.

const id = (i: number) => `ask-${i.toString(16).padStart(10, '0')}`;

function clocked() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('Waiting', () => {
  it('doubles an Ask’s wait per give-back, up to 5 min, and passes over it only while it waits', () => {
    const c = clocked();
    const w = new Waiting(2000, c.now);
    expect(w.gaveBack(id(1))).toEqual({ ms: 4000, failures: 1, parked: false });
    expect(w.now()).toEqual(new Set([id(1)]));
    expect(w.until(30_000)).toBe(4000);
    c.advance(4000);
    // Its wait is over: claimable again, but remembered, so the next give-back waits longer.
    expect(w.now()).toEqual(new Set());
    expect(w.size).toBe(1);
    expect(w.gaveBack(id(1))).toEqual({ ms: 8000, failures: 2, parked: false });
    const slow = new Waiting(60_000, c.now);
    for (let i = 0; i < 3; i++) slow.gaveBack(id(1));
    expect(slow.gaveBack(id(1)).ms).toBe(MAX_BACKOFF_MS);
  });

  it(`parks an Ask given back ${MAX_GIVE_BACKS} times: passed over until it is answered or cancelled`, () => {
    const c = clocked();
    const w = new Waiting(2000, c.now);
    for (let i = 1; i < MAX_GIVE_BACKS; i++) {
      expect(w.gaveBack(id(1)).parked).toBe(false);
      c.advance(MAX_BACKOFF_MS);
    }
    expect(w.gaveBack(id(1))).toEqual({ ms: 0, failures: MAX_GIVE_BACKS, parked: true });
    // Days later it is still passed over, and an idle wait is not cut short by it.
    c.advance(7 * 24 * 3600_000);
    expect(w.now()).toEqual(new Set([id(1)]));
    expect(w.until(30_000)).toBe(30_000);
    w.forget([id(1)]); // answered or cancelled by someone
    expect(w.size).toBe(0);
    // Bounded like any other entry: a Lane of parked Asks keeps the newest MAX_WAITING.
    const v = new Waiting(2000, c.now, 3);
    for (let k = 1; k <= 5; k++) for (let i = 0; i < MAX_GIVE_BACKS; i++) v.gaveBack(id(k));
    expect(v.now()).toEqual(new Set([id(3), id(4), id(5)]));
  });

  it('drops an entry REMEMBER_MS after its wait, and an Ask that will not come back at once', () => {
    const c = clocked();
    const w = new Waiting(2000, c.now);
    w.gaveBack(id(1)); // waits 4 s
    w.gaveBack(id(2));
    w.gaveBack(id(2)); // waits 8 s
    w.gaveBack(id(3));
    w.forget([id(3), id(99)]); // answered (here, or seen in the Lane's events)
    expect(w.size).toBe(2);
    c.advance(4000 + REMEMBER_MS - 1);
    expect(w.now()).toEqual(new Set());
    expect(w.size).toBe(2);
    c.advance(1);
    w.now();
    expect(w.size).toBe(1); // id(1) forgotten: given back again, it starts from the first wait
    expect(w.gaveBack(id(1)).failures).toBe(1);
    c.advance(4000);
    // id(2)'s wait ended REMEMBER_MS ago: forgotten; id(1)'s wait just ended: remembered.
    expect(w.now()).toEqual(new Set());
    expect(w.size).toBe(1);
    expect(w.gaveBack(id(1)).failures).toBe(2);
  });

  it(`never holds more than ${MAX_WAITING} (what one ask_claim_next may exclude), over thousands of Asks`, () => {
    expect(MAX_WAITING).toBe(LIMITS.claimExclude);
    const c = clocked();
    const w = new Waiting(2000, c.now);
    // id(0) given back often: it waits the longest and must not be the one evicted.
    for (let i = 0; i < 8; i++) w.gaveBack(id(0));
    for (let i = 1; i <= 5000; i++) {
      w.gaveBack(id(i));
      c.advance(10);
      expect(w.size).toBeLessThanOrEqual(MAX_WAITING);
    }
    const waiting = w.now();
    expect(waiting.size).toBe(MAX_WAITING);
    expect(waiting.has(id(0))).toBe(true);
    // Those due soonest (given back first) went; the latest are all kept.
    for (let i = 5000 - (MAX_WAITING - 2); i <= 5000; i++) expect(waiting.has(id(i))).toBe(true);
    // The one just given back stays even when its wait is the shortest of all.
    const v = new Waiting(2000, c.now, 3);
    for (let i = 0; i < 5; i++) v.gaveBack(id(1)); // 64 s
    for (let i = 0; i < 3; i++) v.gaveBack(id(2)); // 16 s
    for (let i = 0; i < 2; i++) v.gaveBack(id(3)); // 8 s
    expect(v.now()).toEqual(new Set([id(1), id(2), id(3)]));
    v.gaveBack(id(4)); // shortest wait of all (4 s), yet kept: id(3), due soonest of the rest, goes
    expect(v.now()).toEqual(new Set([id(1), id(2), id(4)]));
  });
});
