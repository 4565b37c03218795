import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ZzError } from '../../src/errors.js';
import { cursorCodec, offsetCursor } from '../../src/schema/cursor.js';
import { testSeed } from '../helpers/seeded.js';

// The one paging-cursor codec: what it encodes decodes to the same value, and anything else a
// client could send back is an invalid_argument naming the field, never another error.

const payload = z.strictObject({
  o: z.number().int().min(0),
  tip: z.string().regex(/^[0-9a-f]{40}$/),
  path: z.string().nullable(),
  order: z.enum(['topo', 'date']).optional(),
});
const codec = cursorCodec('test_list', payload, { maxLength: 4096 });

const value = fc.record(
  {
    o: fc.nat(),
    tip: fc.stringMatching(/^[0-9a-f]{40}$/),
    path: fc.option(fc.string({ maxLength: 200, unit: 'grapheme' })),
    order: fc.constantFrom('topo' as const, 'date' as const),
  },
  { requiredKeys: ['o', 'tip', 'path'] },
);

const b64 = (x: unknown) => Buffer.from(JSON.stringify(x)).toString('base64url');

function refusal(f: () => unknown): ZzError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ZzError);
    return e as ZzError;
  }
  throw new Error('expected the cursor to be refused');
}

describe('cursorCodec', () => {
  it('decodes what it encoded, and each cursor is URL- and header-safe', () => {
    fc.assert(
      fc.property(value, (v) => {
        const c = codec.encode(v);
        expect(c).toMatch(/^[A-Za-z0-9_-]+$/);
        expect(codec.decode(c)).toEqual(v);
      }),
      { seed: testSeed('cursor round trip'), numRuns: 500 },
    );
  });

  it('refuses any string it did not issue with invalid_argument naming the field', () => {
    const good = new Set<string>();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ maxLength: 300 }),
          fc.base64String({ maxLength: 300 }),
          fc.stringMatching(/^[A-Za-z0-9_-]{1,300}$/),
          // JSON that is almost an envelope: any payload under the right kind and version.
          fc.jsonValue().map((j) => b64(['test_list', 1, j])),
          fc.jsonValue().map((j) => b64(j)),
        ),
        (raw) => {
          let decoded: unknown;
          try {
            decoded = codec.decode(raw, 'page_cursor');
          } catch (e) {
            expect(e).toBeInstanceOf(ZzError);
            expect((e as ZzError).code).toBe('invalid_argument');
            expect((e as ZzError).details).toEqual({ field: 'page_cursor' });
            expect((e as ZzError).message).toMatch(/^page_cursor /);
            return;
          }
          // Accepted only when it is a well-formed payload (a generator can hit one).
          expect(payload.safeParse(decoded).success).toBe(true);
          good.add(raw);
        },
      ),
      { seed: testSeed('cursor garbage'), numRuns: 3000 },
    );
    expect(good.size).toBeLessThan(30);
  });

  it('refuses non-strings, empty and overlong cursors, and other alphabets', () => {
    const v = { o: 1, tip: 'a'.repeat(40), path: null };
    for (const raw of [undefined, null, 7, {}, [], '', 'x'.repeat(4097), `${codec.encode(v)}=`]) {
      expect(refusal(() => codec.decode(raw)).code).toBe('invalid_argument');
    }
    // Well formed but past the kind's length cap: refused before it is decoded.
    const long = codec.encode({ ...v, path: 'p'.repeat(3500) });
    expect(long.length).toBeGreaterThan(4096);
    expect(refusal(() => codec.decode(long)).code).toBe('invalid_argument');
  });

  it('tells a cursor of another listing or another version apart, without echoing junk', () => {
    const v = { o: 1, tip: 'a'.repeat(40), path: null };
    const other = cursorCodec('other_list', payload);
    expect(refusal(() => codec.decode(other.encode(v))).message).toBe(
      'cursor is a cursor of another listing (it is a other_list cursor), not of test_list',
    );
    const hostile = refusal(() => codec.decode(b64(['\u001b[2J', 1, v]))).message;
    expect(hostile).toBe('cursor is a cursor of another listing, not of test_list');
    const v2 = cursorCodec('test_list', payload, { version: 2 });
    expect(refusal(() => v2.decode(codec.encode(v))).message).toMatch(/another version of zz/);
  });

  it('reads a legacy form through the kind’s own reader, and only that', () => {
    const legacy = cursorCodec('old_list', z.number().int(), {
      legacy: (j) => (typeof j === 'object' && j !== null && 'n' in j ? Number(j.n) : undefined),
    });
    expect(legacy.decode(b64({ n: 5 }))).toBe(5);
    expect(legacy.decode(legacy.encode(6))).toBe(6);
    expect(refusal(() => legacy.decode(b64({ m: 5 }))).code).toBe('invalid_argument');
  });

  it('offset cursors hold whole offsets in range', () => {
    const c = offsetCursor('test_offsets');
    expect(c.decode(c.encode(0))).toBe(0);
    expect(c.decode(c.encode(12_345))).toBe(12_345);
    for (const o of [-1, 1.5, 2e9, '3']) {
      expect(refusal(() => c.decode(b64(['test_offsets', 1, o]))).code).toBe('invalid_argument');
    }
  });

  it('refuses a kind name that is not a plain identifier', () => {
    expect(() => cursorCodec('Bad Kind', z.number())).toThrow(/kind/);
  });
});
