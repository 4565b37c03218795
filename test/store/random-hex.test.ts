import { describe, expect, it } from 'vitest';
import { newOpId, randomHex } from '../../src/store/index.js';

// Op ids and Ask ids come from a pool of random bytes (entity.ts): every id has its full
// length and no bytes are handed out twice, across many refills of the pool.

describe('randomHex', () => {
  it('gives ids of the asked length, never the same bytes twice, across pool refills', () => {
    const seen = new Set<string>();
    // 3,000 × 16 bytes and 3,000 × 5 is ~15 refills of a 4 KiB pool, at odd offsets.
    for (let i = 0; i < 3_000; i++) {
      for (const n of [16, 5]) {
        const h = randomHex(n);
        expect(h).toMatch(new RegExp(`^[0-9a-f]{${2 * n}}$`));
        if (n === 16) {
          expect(seen.has(h)).toBe(false);
          seen.add(h);
        }
      }
    }
    expect(newOpId('0123456789abcdef')).toMatch(/^0123456789abcdef-[0-9a-f]{32}$/);
  });

  it('refuses sizes it cannot serve from one pool', () => {
    expect(() => randomHex(0)).toThrow(RangeError);
    expect(() => randomHex(65)).toThrow(RangeError);
    expect(() => randomHex(1.5)).toThrow(RangeError);
  });
});
