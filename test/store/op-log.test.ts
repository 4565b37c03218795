import { describe, expect, it } from 'vitest';
import { OpLog } from '../../src/store/index.js';
import { prng, testSeed } from '../helpers/seeded.js';

// Snapshots' op logs share one append-only array (op-log.ts): every log must read as the array
// it was made from, whatever logs are made from it or from older ones afterwards (a CAS retry
// or a refresh extends a log that is no longer the newest).

describe('OpLog', () => {
  it('every log reads like its own array, under random concats of new and old logs', () => {
    const seed = testSeed('op-log');
    const random = prng(seed);
    for (let round = 0; round < 50; round++) {
      const logs: Array<OpLog<number>> = [new OpLog()];
      const models: number[][] = [[]];
      let next = 0;
      for (let step = 0; step < 60; step++) {
        // Mostly the newest log (a commit), sometimes an older one (a second extension).
        const v = random() < 0.7 ? logs.length - 1 : Math.floor(random() * logs.length);
        const more = Array.from({ length: Math.floor(random() * 4) }, () => next++);
        logs.push(logs[v]!.concat(more));
        models.push([...models[v]!, ...more]);
        logs.forEach((l, i) => {
          const m = models[i]!;
          const seen = JSON.stringify([
            l.length,
            [...l],
            l.slice(),
            l.slice(1, -1),
            l.slice(-2),
            l.map((x, j) => x * 10 + j),
            Array.from({ length: l.length + 1 }, (_, j) => l.at(j) ?? null),
            l.find((x) => x % 3 === 2) ?? null,
            l,
          ]);
          const want = JSON.stringify([
            m.length,
            m,
            m.slice(),
            m.slice(1, -1),
            m.slice(-2),
            m.map((x, j) => x * 10 + j),
            [...m, null],
            m.find((x) => x % 3 === 2) ?? null,
            m,
          ]);
          if (seen !== want) {
            expect.fail(`seed ${seed}, round ${round}, step ${step}, log ${i}: ${seen} vs ${want}`);
          }
        });
      }
    }
  });

  it('a concat of the newest log shares its array; of an older one, copies', () => {
    const a = new OpLog([1, 2]);
    const b = a.concat([3]);
    const c = b.concat([4]);
    expect([...a, ...b, ...c]).toEqual([1, 2, 1, 2, 3, 1, 2, 3, 4]);
    const d = b.concat([5]); // b is no longer the newest: its own copy
    expect([...c]).toEqual([1, 2, 3, 4]);
    expect([...d]).toEqual([1, 2, 3, 5]);
    expect(a.concat([])).toBe(a);
  });
});
