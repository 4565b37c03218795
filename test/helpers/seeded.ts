import { onTestFailed } from 'vitest';

// The one seeded PRNG of the tests, and the seed a randomised test runs with: ZZ_SEED when set
// (to rerun a failure), else a fresh one. The seed is printed when the test fails, so a red run
// can be replayed exactly (as far as the randomness goes; process timing is not seeded).

/** Mulberry32: small and seeded; the same seed always gives the same sequence. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed for the current test (call inside it): printed if the test fails. */
export function testSeed(label: string): number {
  const seed = Number(process.env.ZZ_SEED ?? Date.now() % 1_000_000);
  onTestFailed(() => {
    console.error(`${label}: failed with seed ${seed}; rerun with ZZ_SEED=${seed}`);
  });
  return seed;
}
