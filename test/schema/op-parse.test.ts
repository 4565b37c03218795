import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPlainOpRecord, opRecord } from '../../src/schema/ops.js';
import { testSeed } from '../helpers/seeded.js';

// The hand-written envelope check (the store's fast path) must agree with the zod schema it
// stands in for: whatever it accepts, zod accepts and returns unchanged; and on records zod
// would return unchanged (no extra keys, no "__proto__" key) it accepts exactly what zod does.

const LENGTHS = [0, 1, 2, 63, 64, 65, 99, 100, 101, 127, 128, 129, 299, 300, 301];
const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ minLength: 1, maxLength: 20 }) },
  { weight: 2, arbitrary: fc.constantFrom(...LENGTHS).map((n) => 'x'.repeat(n)) },
);
const num = fc.oneof(
  { weight: 3, arbitrary: fc.nat() },
  { weight: 1, arbitrary: fc.constantFrom(-1, 1.5, 2 ** 53, 2 ** 53 - 1, -(2 ** 53), 1e300) },
  { weight: 1, arbitrary: fc.integer() },
);
/** A value of a field: mostly the right type, sometimes not. */
const field = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 20, arbitrary: good },
    { weight: 1, arbitrary: fc.constantFrom<unknown>(null, true, [], {}, '1', 1) },
  );
const record = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
  },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(null, [], 'x', 3) },
);
const optional = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined, freq: 3 });

const envelope = fc.record({
  v: optional(field(num)),
  id: field(text),
  actor: field(text),
  lamport: field(num),
  replica: optional(field(text)),
  time: field(text),
  key: optional(field(text)),
  request_hash: optional(field(text)),
  op: field(text),
  args: record,
  out: optional(record),
});

/** As the store gets it: what JSON.parse makes of the written line (undefined keys vanish). */
const asRead = (x: unknown): unknown => JSON.parse(JSON.stringify(x)) as unknown;

describe('isPlainOpRecord', () => {
  it('accepts exactly what opRecord accepts unchanged', () => {
    const seed = testSeed('isPlainOpRecord');
    let accepted = 0;
    fc.assert(
      fc.property(envelope, (e) => {
        const x = asRead(e);
        const fast = isPlainOpRecord(x);
        const z = opRecord.safeParse(x);
        expect(fast).toBe(z.success);
        if (fast) {
          accepted++;
          expect(z.data).toEqual(x);
        }
      }),
      { seed, numRuns: 3000 },
    );
    // The generator reaches both sides (a check that refused everything would pass above).
    expect(accepted).toBeGreaterThan(50);
  });

  it('leaves extra keys and "__proto__" keys to zod (which strips or copies them)', () => {
    const good = {
      id: 'a',
      actor: 'a@b.c',
      lamport: 1,
      time: 't',
      op: 'ask_post',
      args: { lane_id: 'l' },
    };
    expect(isPlainOpRecord(good)).toBe(true);
    expect(isPlainOpRecord({ ...good, extra: 1 })).toBe(false);
    expect(opRecord.parse({ ...good, extra: 1 })).toEqual(good);
    expect(isPlainOpRecord(JSON.parse('{"__proto__":{"x":1}}'))).toBe(false);
    const proto = { ...good, args: JSON.parse('{"__proto__":{"x":1}}') as unknown };
    expect(isPlainOpRecord(proto)).toBe(false);
  });
});
