import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fastLaneOp } from '../../src/schema/lane-op-parse.js';
import { laneOp } from '../../src/schema/lane-ops.js';
import { STORED_LIMITS } from '../../src/schema/limits.js';
import { isPlainOpRecord, opRecord, type OpRecord } from '../../src/schema/ops.js';
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

// The hand checks of the common Lane ops against the union they stand in for, on ops built
// from values at and around every limit the schemas set.

const ASK = 'ask-0123456789';
/** Mostly one of `good`, sometimes one of `bad`. */
const pick = (good: unknown[], bad: unknown[]) =>
  fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(...good) },
    { weight: 1, arbitrary: fc.constantFrom(...bad) },
  );
const opt = (a: fc.Arbitrary<unknown>) => fc.option(a, { nil: undefined, freq: 2 });
const str = (n: number, c = 'x') => c.repeat(n);
const laneIds = pick(
  ['_repo', 'feat', str(63, 'a'), 'a.b-c_d'],
  [str(64, 'a'), 'x.lock', 'a..b', 'a.', 'A', '', 7],
);
const askIds = pick([ASK, 'ask-abcdefabcd'], ['ask-012345678', 'ask-ABCDEF0123', 'x', null]);
const longActor = (name: number) => `${str(64, 'l')}@${str(190, 'd')}[${str(name, 'n')}]`;
const actors = pick(
  ['a@b.c', 'a@b.c[claude]', longActor(40)],
  ['nobody', `${str(65, 'l')}@b.c`, 'a@b.c[]', longActor(45), 3],
);
const L = STORED_LIMITS;
const bigPayload = (bytes: number) => ({ p: str(bytes - '{"p":""}'.length) });

const postOp = fc.record({
  lane_id: laneIds,
  kind: pick(['work', 'a', `a${str(47, '_')}`], [`a${str(48, '_')}`, 'Work', '']),
  title: pick(['t', str(L.title)], [str(L.title + 1), null]),
  body: opt(pick(['', str(L.body / 3, '€')], [str(L.body / 3 + 1, '€'), 1])),
  priority: opt(pick([0, 2, 4], [5, -1, 1.5, '2'])),
  depends_on: opt(pick([[], [ASK], Array(L.list).fill(ASK)], [Array(L.list + 1).fill(ASK), ['x']])),
  payload: opt(
    pick(
      [{}, { a: [1] }, bigPayload(L.payload)],
      [bigPayload(L.payload + 1), [], null, JSON.parse('{"__proto__":{"x":1}}')],
    ),
  ),
  posted_by: opt(actors),
  origin: opt(
    pick(
      [null, { ask_id: ASK, reason: str(1000) }, { ask_id: ASK, reason: '', extra: 1 }],
      [{ ask_id: ASK, reason: str(1001) }, { ask_id: 'x', reason: '' }, { ask_id: ASK }],
    ),
  ),
  extra: opt(fc.constant('kept')),
});
const claimOp = fc.record({
  lane_id: laneIds,
  ask_id: askIds,
  lease_seconds: opt(pick([0, 600], [-1, 1.5, '60'])),
});
const claimOut = fc.record({
  lease_expires_at: pick(['2026-01-01T00:00:00Z', str(64)], [str(65), null]),
  renewed: opt(pick([true, false], ['yes'])),
  expired_holder: opt(fc.oneof(fc.constant(null), actors)),
  expired_at: opt(pick([null, str(64)], [str(65), 3])),
});
const releaseOp = fc.record({
  lane_id: laneIds,
  ask_id: askIds,
  reason: opt(pick(['', str(L.reason)], [str(L.reason + 1), 1])),
});
const releaseOut = opt(
  pick(
    [{}, { previous_holder: null }, { previous_holder: 'a@b.c' }],
    [{ previous_holder: 'x' }, []],
  ),
);

const CS = 'cs-0123456789';
const answerOp = fc.record({
  lane_id: laneIds,
  ask_id: askIds,
  outcome: pick(['complete', 'deny', 'grant'], ['done', null]),
  result: opt(pick([null, '', str(L.result / 3, '€')], [str(L.result / 3 + 1, '€'), 3])),
  changeset_id: opt(pick([null, CS], ['cs-1', 'ask-0123456789'])),
  changeset: opt(
    pick(
      [
        { base: str(64), message: str(L.commitMessage), paths: [] },
        { base: 'b', message: '', paths: [str(L.path)], more: 1 },
        { base: 'b', message: '', paths: Array(L.changesetFiles).fill('p') },
      ],
      [
        { base: str(65), message: '', paths: [] },
        { base: 'b', message: str(L.commitMessage + 1), paths: [] },
        { base: 'b', message: '', paths: [str(L.path + 1)] },
        { base: 'b', message: '', paths: Array(L.changesetFiles + 1).fill('p') },
        { base: 'b', message: '' },
        JSON.parse('{"__proto__":{},"base":"b","message":"","paths":[]}'),
      ],
    ),
  ),
});
const answerOut = opt(
  fc.record({
    changeset_id: opt(pick([CS], [null, 'x'])),
    changeset_commit: opt(pick([null, str(64)], [str(65)])),
    follow_ups: opt(
      pick([[], [ASK], Array(L.list).fill(ASK)], [Array(L.list + 1).fill(ASK), ['x']]),
    ),
    commit: opt(pick([str(64)], [str(65), null])),
  }),
);

const laneOps = fc
  .record({
    env: fc.record({
      v: opt(pick([1], [0])),
      id: pick(['0123456789'], ['']),
      actor: actors,
      lamport: pick([1], [-1]),
      time: fc.constant('2026-01-01T00:00:00.000Z'),
      key: opt(fc.constant('k1')),
      extra: fc.oneof(
        { weight: 9, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.constant('stripped') },
      ),
    }),
    body: fc.oneof(
      fc.record({
        op: fc.constant('ask_post'),
        args: postOp,
        out: opt(pick([{ ask_id: ASK }, { ask_id: ASK, n: 1 }], [{ ask_id: 'x' }, {}])),
      }),
      fc.record({ op: fc.constant('ask_claim'), args: claimOp, out: opt(claimOut) }),
      fc.record({ op: fc.constant('ask_release'), args: releaseOp, out: releaseOut }),
      fc.record({ op: fc.constant('ask_answer'), args: answerOp, out: answerOut }),
    ),
  })
  .map(({ env, body }) => asRead({ ...env, ...body }));

describe('fastLaneOp', () => {
  it('vouches only for ops the lane union accepts unchanged, and for all it accepts so', () => {
    const seed = testSeed('fastLaneOp');
    const accepted = new Map<string, number>();
    fc.assert(
      fc.property(laneOps, (x) => {
        const raw = opRecord.safeParse(x);
        if (!raw.success) return; // the store refuses it before any entity parse
        const fast = fastLaneOp(x as OpRecord);
        const z = laneOp.safeParse(x);
        if (fast) {
          accepted.set(fast.op, (accepted.get(fast.op) ?? 0) + 1);
          expect(z.success).toBe(true);
          expect(fast).toBe(x);
          expect(z.data).toEqual(x);
        } else if (isPlainOpRecord(x)) {
          // Without keys zod would strip, the hand check refuses only what zod refuses or
          // changes (a "__proto__" key its copy turns into a prototype).
          if (z.success) expect(z.data).not.toEqual(x);
        }
      }),
      { seed, numRuns: 5000 },
    );
    for (const op of ['ask_post', 'ask_claim', 'ask_release', 'ask_answer'])
      expect(accepted.get(op) ?? 0).toBeGreaterThan(20);
  });
});
