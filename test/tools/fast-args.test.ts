import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/schema/limits.js';
import { ALL_TOOLS } from '../../src/tools/registry.js';
import { fastArgFields, type FastArgsTool } from '../../src/tools/fast-args.js';
import { parseArgs } from '../../src/tools/run-tool.js';
import { testSeed } from '../helpers/seeded.js';

// The hand checks of the busiest tools' arguments (src/tools/fast-args.ts) against the zod
// schemas they stand in for: whatever a check accepts, zod accepts and answers the same (same
// keys in the same order, same values); and on arguments built from values at and around
// every limit, the check accepts much of what zod accepts (else it would be a slower no-op).

const withFast = ALL_TOOLS.filter((t) => t.fastArgs !== undefined);
/** Fields a fast check leaves to zod on purpose (their checks are not written twice). */
const LEFT_TO_ZOD: Record<string, string[]> = { ask_post: ['payload'], ask_answer: ['changeset'] };

const LANE = [
  'main',
  '_repo',
  'a',
  'a.b',
  'x'.repeat(63),
  'x'.repeat(64),
  'a..b',
  'a.lock',
  'a.',
  'A',
  '',
  '-a',
];
const ASK = ['ask-0123456789', 'ask-012345678', 'ask-0123456789a', 'ask-ABCDEF0123', 'x'];
const ACTOR = ['a@example.com', 'a@example.com[bot]', 'a@' + 'b'.repeat(298), 'nobody', ''];
const KIND = ['work', 'review_x', 'x'.repeat(48), 'x'.repeat(49), 'Work', '1x', ''];
const KEY = ['k', 'a.b:c-d_e', 'x'.repeat(128), 'x'.repeat(129), 'a b', ''];
const REV = ['0'.repeat(40), 'a'.repeat(39), 'g'.repeat(40), 'A'.repeat(40)];
const INTS = [-1, 0, 1, 2, 4, 5, 20, 50, 100, 500, 501, 1800, 604_800, 604_801, 100_000, 100_001];
const NUMS = [...INTS, 1.5, -0, 2 ** 53, 1e300, 1_000_000_000, 1_000_000_001];
const TEXT = [
  'x',
  'é✓',
  '',
  'x'.repeat(LIMITS.title),
  'x'.repeat(LIMITS.title + 1),
  '✓'.repeat(Math.floor(LIMITS.body / 3)),
  '✓'.repeat(Math.floor(LIMITS.body / 3) + 1),
  'x'.repeat(4096),
  'x'.repeat(4097),
];
const WRONG = [null, true, 1, '1', [], {}, ['x']];

/** Mostly one of `good`, sometimes one of `bad` or a value of the wrong type. */
const pick = (good: unknown[], bad: unknown[] = []) =>
  fc.oneof(
    { weight: 40, arbitrary: fc.constantFrom(...good) },
    { weight: 2, arbitrary: fc.constantFrom(...(bad.length ? bad : WRONG)) },
    { weight: 1, arbitrary: fc.constantFrom(...WRONG) },
  );
const listOf = (item: unknown[], max: number) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.array(fc.constantFrom(...item), { maxLength: 4 }) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(Array(max).fill(item[0]), Array(max + 1).fill(item[0])),
    },
    { weight: 1, arbitrary: fc.constantFrom(...WRONG) },
  );

/** Values to try for each field the checks know, at and around their limits. */
const VALUES: Record<string, fc.Arbitrary<unknown>> = {
  lane_id: pick(LANE.slice(0, 5), LANE.slice(5)),
  ask_id: pick(ASK.slice(0, 1), ASK.slice(1)),
  actor: pick(ACTOR.slice(0, 3), ACTOR.slice(3)),
  from: pick(ACTOR.slice(0, 3), ACTOR.slice(3)),
  idempotency_key: pick(KEY.slice(0, 3), KEY.slice(3)),
  expected_revision: pick(REV.slice(0, 1), REV.slice(1)),
  kind: pick(KIND.slice(0, 3), KIND.slice(3)),
  title: pick(TEXT.slice(0, 4), TEXT.slice(4)),
  body: pick(TEXT, []),
  result: pick(TEXT, []),
  outcome: pick(['complete', 'deny', 'grant'], ['completed', '']),
  priority: pick(INTS.slice(1, 5), NUMS),
  depends_on: listOf(ASK.slice(0, 1), LIMITS.list),
  kinds: listOf(KIND.slice(0, 3), 50),
  limit: pick(NUMS),
  lease_seconds: pick(NUMS),
  asks_limit: pick(NUMS),
  history_limit: pick(NUMS),
  asks_offset: pick(NUMS),
  history_offset: pick(NUMS),
  asks_cursor: pick(TEXT),
  history_cursor: pick(TEXT),
  include_history: pick([true, false]),
  payload: pick([{ a: 1 }], []),
  changeset: pick([{ base: '0'.repeat(40), message: 'm', files: [{ path: 'a', content: 'b' }] }]),
  extra: pick([1, 'x']),
};

describe('fast argument checks', () => {
  it('cover the busiest tools, each field of their schemas but those left to zod', () => {
    expect(withFast.map((t) => t.name).sort()).toEqual(
      [
        'ask_answer',
        'ask_claim',
        'ask_claim_next',
        'ask_post',
        'ask_query_claimable',
        'lane_get',
        'lane_list',
      ].sort(),
    );
    for (const t of withFast) {
      const known = fastArgFields(t.name as FastArgsTool);
      const schema = Object.keys(t.input.shape).filter((k) => !LEFT_TO_ZOD[t.name]?.includes(k));
      // Same fields in the same order: zod answers the keys in its schema's order.
      expect([t.name, ...known]).toEqual([t.name, ...schema]);
    }
  });

  for (const t of withFast) {
    it(`${t.name}: accept only what zod accepts, and answer what zod answers`, () => {
      const seed = testSeed(`fast args ${t.name}`);
      const shape = t.input.shape as Record<
        string,
        { safeParse(v: unknown): { success: boolean } }
      >;
      const checked = Object.keys(shape).filter((k) => !LEFT_TO_ZOD[t.name]?.includes(k));
      const required = checked.filter((k) => !shape[k]!.safeParse(undefined).success);
      const values = Object.fromEntries(checked.map((k) => [k, VALUES[k]!]));
      const fields = fc.oneof(
        { weight: 4, arbitrary: fc.record(values, { requiredKeys: required }) },
        { weight: 1, arbitrary: fc.record(values, { requiredKeys: [] }) }, // any subset
      );
      // Now and then a field left to zod, or a key no schema has.
      const rare = [...(LEFT_TO_ZOD[t.name] ?? []), 'extra'];
      const args = fc
        .tuple(
          fields,
          fc.oneof(
            { weight: 9, arbitrary: fc.constant(undefined) },
            { weight: 1, arbitrary: fc.constantFrom(...rare) },
          ),
        )
        .chain(([f, key]) =>
          key === undefined ? fc.constant(f) : VALUES[key]!.map((v) => ({ ...f, [key]: v })),
        )
        // In any order: zod answers its schema's order, whatever the body's.
        .chain((o: Record<string, unknown>) => {
          const n = Object.keys(o).length;
          return fc
            .shuffledSubarray(Object.keys(o), { minLength: n, maxLength: n })
            .map((keys) => Object.fromEntries(keys.map((k) => [k, o[k]])));
        });
      let accepted = 0;
      let zodAccepted = 0;
      fc.assert(
        fc.property(args, (a) => {
          const raw = JSON.parse(JSON.stringify(a)) as unknown; // as the body arrives
          const fast = t.fastArgs!(raw);
          let zod: { ok: true; data: unknown } | { ok: false };
          try {
            zod = { ok: true, data: parseArgs(t.input, raw) };
            zodAccepted++;
          } catch {
            zod = { ok: false };
          }
          if (fast !== null) {
            accepted++;
            expect(zod.ok, JSON.stringify(raw).slice(0, 300)).toBe(true);
            if (zod.ok) {
              expect(fast).toEqual(zod.data);
              expect(JSON.stringify(fast)).toBe(JSON.stringify(zod.data));
            }
          }
        }),
        { seed, numRuns: 2000 },
      );
      // Both sides are reached, and the check takes most of what zod takes.
      expect(accepted).toBeGreaterThan(20);
      expect(accepted).toBeGreaterThan(zodAccepted * 0.5);
    });
  }

  it('leave unknown keys, "__proto__" and fields without a check to zod', () => {
    const post = withFast.find((t) => t.name === 'ask_post')!;
    const good = { lane_id: 'main', kind: 'work', title: 't' };
    expect(post.fastArgs!(good)).toEqual(good);
    expect(post.fastArgs!({ ...good, extra: 1 })).toBeNull();
    expect(post.fastArgs!({ ...good, payload: { a: 1 } })).toBeNull();
    expect(
      post.fastArgs!(JSON.parse('{"lane_id":"main","kind":"work","title":"t","__proto__":{}}')),
    ).toBeNull();
    expect(post.fastArgs!({ ...good, depends_on: undefined })).toBeNull();
    expect(post.fastArgs!([])).toBeNull();
    // Arrays are copied, as zod copies them.
    const deps = ['ask-0123456789'];
    expect(post.fastArgs!({ ...good, depends_on: deps })!.depends_on).not.toBe(deps);
  });
});
