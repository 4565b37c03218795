import { describe, expect, it } from 'vitest';
import { CowMap } from '../../src/core/cow-map.js';
import { prng, testSeed } from '../helpers/seeded.js';

// CowMap's forks share an index: every version must still read as its own Map would, whatever
// order versions are forked, changed and read in (a draft thrown away, a version forked twice,
// an old version changed after its fork). Values sit in chunks shared between forks until one
// writes: the random test runs with chunks of 2 values (and of 1 and 4), so that chunks are
// shared, split and appended to in every round.

describe('CowMap', () => {
  it('every version reads like a Map copied at its fork, under random forks and writes', () => {
    const random = prng(testSeed('cow-map'));
    const pick = (n: number) => Math.floor(random() * n);
    for (let round = 0; round < 60; round++) {
      const cows: Array<CowMap<string, number>> = [new CowMap(undefined, round % 3)];
      const models: Array<Map<string, number>> = [new Map()];
      const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
      for (let step = 0; step < 120; step++) {
        const v = pick(cows.length);
        if (random() < 0.25) {
          cows.push(cows[v]!.fork());
          models.push(new Map(models[v]));
        } else {
          const k = keys[pick(keys.length)]!;
          cows[v]!.set(k, step);
          models[v]!.set(k, step);
        }
        // Every version, not only the one changed: a write must not leak into another.
        cows.forEach((c, i) => {
          const m = models[i]!;
          const seen = JSON.stringify([
            [...c.entries()],
            [...c.keys()],
            [...c.values()],
            c.valuesArray(),
            Array.from({ length: c.size + 1 }, (_, p) => c.at(p) ?? null),
            c.size,
          ]);
          const want = JSON.stringify([
            [...m.entries()],
            [...m.keys()],
            [...m.values()],
            [...m.values()],
            [...m.values(), null],
            m.size,
          ]);
          const gets = keys.map((k) => `${c.has(k)}${c.get(k)}`).join();
          const wantGets = keys.map((k) => `${m.has(k)}${m.get(k)}`).join();
          if (seen !== want || gets !== wantGets) {
            expect.fail(
              `round ${round} step ${step}, version ${i}: ${seen} ${gets} vs ${want} ${wantGets}`,
            );
          }
        });
      }
    }
  });

  it('keeps first-insertion order when a value is replaced, like Map', () => {
    const c = new CowMap<string, number>([
      ['a', 1],
      ['b', 2],
    ]);
    const d = c.fork();
    d.set('a', 3).set('c', 4);
    expect([...d]).toEqual([
      ['a', 3],
      ['b', 2],
      ['c', 4],
    ]);
    expect([...c]).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
    const seen: string[] = [];
    d.forEach((v, k) => seen.push(`${k}=${v}`));
    expect(seen).toEqual(['a=3', 'b=2', 'c=4']);
  });

  it('compares by entries in toEqual (tests compare folded states with it)', () => {
    const a = new CowMap([['x', { n: 1 }]]);
    const b = new CowMap<string, { n: number }>().fork();
    b.set('x', { n: 1 });
    expect(a).toEqual(b);
    b.set('x', { n: 2 });
    expect(a).not.toEqual(b);
    const c = a.fork();
    c.set('y', { n: 1 });
    expect(a).not.toEqual(c);
  });
});
