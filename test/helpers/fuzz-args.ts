import fc from 'fast-check';
import { LIMITS } from '../../src/schema/limits.js';

// Arguments for the tool fuzz (test/http/fuzz-tools.test.ts): values derived from a tool's
// published input schema (the JSON Schema GET /api/tools answers, made by z.toJSONSchema), then
// mutated into what a careless or hostileArb client sends, and encoded into request bytes that are
// sometimes not JSON, not UTF-8 or not an object at all.

export type JsonSchema = {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
};

/**
 * Values of the right shape for fields the fixture knows by name: some exist, some do not.
 * The lists grow while the fuzz runs (ids the daemon answered with), so a generated value names
 * its pool and an index (PoolPick), resolved when the case runs (resolvePicks).
 */
export type Pools = Record<string, unknown[]>;

export interface PoolPick {
  $pool: string;
  i: number;
}

const isPick = (v: unknown): v is PoolPick =>
  !!v && typeof v === 'object' && typeof (v as PoolPick).$pool === 'string';

/** `v` with every PoolPick replaced by the pool's value now (a deep copy). */
export function resolvePicks(v: unknown, pools: Pools): unknown {
  if (isPick(v)) {
    const pool = pools[v.$pool] ?? [];
    return pool.length ? pool[v.i % pool.length] : null;
  }
  if (Array.isArray(v)) return v.map((x) => resolvePicks(x, pools));
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, resolvePicks(x, pools)]));
  return v;
}

const NINE_MIB = 'x'.repeat(9 * 1024 * 1024);

/**
 * Strings every field gets now and then: empty, past each bound in src/schema/limits.ts
 * (counted in characters and, for the byte bounds, in UTF-8 bytes), control characters, NUL,
 * bidi overrides, lone surrogates, path traversal, option-like and revision-syntax ref names,
 * ids of the right shape that name nothing, and one body past the daemon's 8 MiB limit.
 */
/** Strings just past each bound of src/schema/limits.ts, in characters and in UTF-8 bytes. */
export const PAST_LIMITS: readonly string[] = [
  'x'.repeat(LIMITS.title + 1),
  'é'.repeat(LIMITS.title + 1),
  'x'.repeat(LIMITS.reason + 1),
  'x'.repeat(LIMITS.path + 1),
  'x'.repeat(LIMITS.description + 1),
  '字'.repeat(Math.ceil(LIMITS.body / 3) + 1), // under the limit in characters, past it in bytes
  'x'.repeat(LIMITS.result + 1),
  'x'.repeat(300_000),
];

export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  ...PAST_LIMITS,
  '\u0000',
  'a\u0000b',
  '\u001b[2J\u001b[31mred\u0007',
  '\u202eevil\u202c',
  '\u2066x\u2069',
  '\ud800',
  'a\udc00b',
  '\ufeffbom',
  'line\r\nZz-Op: lane_close',
  '../../../../etc/passwd',
  '/etc/passwd',
  '..',
  '.',
  'a/../../b',
  'a//b',
  '.git/config',
  '.gitmodules',
  'refs/zz/../../HEAD',
  'refs/zz/config',
  'refs/heads/main',
  'HEAD:../../',
  '--output=/tmp/zz-fuzz-pwned',
  '-c',
  '--upload-pack=touch /tmp/zz-fuzz-pwned',
  '@{-1}',
  'main..HEAD',
  'main^{tree}',
  ':/initial',
  'HEAD~99999',
  'a'.repeat(40),
  'ask-0000000000',
  'cs-0000000000',
  '_repo',
  'x@y',
  'owner@example.com[..]',
  '%2e%2e%2f',
  '$(touch /tmp/zz-fuzz-pwned)',
  'NaN',
  'Infinity',
  '-1',
  '1e308',
  '9'.repeat(400),
  '{"a":1}',
  'null',
  '🤖'.repeat(100),
  NINE_MIB,
];

/** Values of the wrong type (and numbers at and past every bound a JSON number can have). */
export const HOSTILE_VALUES: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  -0,
  1.5,
  1e308,
  -1e308,
  2 ** 53 + 1,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
  [],
  [null],
  [''],
  {},
  { a: { b: { c: [] } } },
  nest(30),
  nest(70),
  Array.from({ length: 5000 }, (_, i) => i),
];

/** Field names no tool has, including the ones JavaScript objects treat specially. */
const EXTRA_KEYS = [
  'bogus',
  '__proto__',
  'constructor',
  'prototype',
  '',
  '\u0000',
  'x'.repeat(1000),
];

function nest(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** A hostile value of any kind: a string from HOSTILE_STRINGS, a wrong type, random binary. */
export const hostileArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE_VALUES) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
);

/** Most of the time a string just past a bound, else any hostile value. */
export const pastLimitArb = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...PAST_LIMITS) },
  { weight: 1, arbitrary: hostileArb },
);

function stringArb(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 40, 40);
  if (s.pattern) {
    try {
      const re = new RegExp(s.pattern);
      return fc.stringMatching(re).filter((x) => x.length <= (s.maxLength ?? Infinity));
    } catch {
      /* a pattern fast-check cannot invert: any string */
    }
  }
  return fc.string({ minLength: min, maxLength: Math.max(min, max) });
}

/** Fields a well-formed call leaves out: a random revision or head only ever mismatches. */
const GUESSED = new Set([
  'expected_revision',
  'expected_head',
  'from',
  'actor',
  'cursor',
  'asks_cursor',
  'history_cursor',
  'since',
  'until',
]);

/**
 * A value valid for `s` as far as its JSON Schema says (refinements in zod may still refuse).
 * `clean`: the way a well-behaved client calls, so that calls are accepted and the state grows
 * (known ids from the pools, few optional fields); otherwise anything the schema allows.
 */
export function valueArb(
  s: JsonSchema,
  pools: Pools,
  field = '',
  clean = false,
): fc.Arbitrary<unknown> {
  const own = schemaArb(s, pools, field, clean);
  // A pool names single values: an array field's pool is its items'.
  if (!pools[field] || s.type === 'array' || s.anyOf || s.enum || s.const !== undefined) return own;
  const pick = fc.nat().map((i): PoolPick => ({ $pool: field, i }));
  return clean ? pick : fc.oneof(pick, own);
}

function schemaArb(
  s: JsonSchema,
  pools: Pools,
  field: string,
  clean: boolean,
): fc.Arbitrary<unknown> {
  if (s.anyOf?.length) return fc.oneof(...s.anyOf.map((a) => valueArb(a, pools, field, clean)));
  if (s.const !== undefined) return fc.constant(s.const);
  if (s.enum?.length) return fc.constantFrom(...s.enum);
  switch (s.type) {
    case 'string':
      return stringArb(s);
    case 'integer': {
      const min = Math.max(s.minimum ?? -1000, -(2 ** 31));
      const max = Math.min(s.maximum ?? 1000, 2 ** 31 - 1);
      // Offsets and limits past the first few pages only ever answer an empty page.
      return clean
        ? fc.integer({ min, max: Math.max(min, Math.min(max, min + 50)) })
        : fc.integer({ min, max });
    }
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return fc.array(
        s.items ? valueArb(s.items, pools, field, clean) : fc.jsonValue({ maxDepth: 2 }),
        {
          minLength: s.minItems ?? 0,
          maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 3, 3)),
        },
      );
    case 'object':
      return objectArb(s, pools, clean);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** An object of the schema's fields: the required ones always, each other one now and then. */
export function objectArb(
  s: JsonSchema,
  pools: Pools,
  clean = false,
): fc.Arbitrary<Record<string, unknown>> {
  const props = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const keys = Object.keys(props).filter((k) => !(clean && GUESSED.has(k) && !required.has(k)));
  if (keys.length === 0) {
    if (s.additionalProperties && typeof s.additionalProperties === 'object') {
      const names = s.propertyNames ? stringArb(s.propertyNames) : fc.string({ maxLength: 10 });
      return fc.dictionary(names, valueArb(s.additionalProperties, pools), {
        maxKeys: 3,
      });
    }
    return fc.constant({});
  }
  // A clean call sends each optional field one time in four; fc.record would send half of them.
  const entries = keys.map((k) => {
    const v = valueArb(props[k]!, pools, k, clean);
    return required.has(k) || !clean ? v : fc.option(v, { freq: 3, nil: undefined });
  });
  if (!clean)
    return fc.record(Object.fromEntries(keys.map((k, i) => [k, entries[i]!])), {
      requiredKeys: keys.filter((k) => required.has(k)),
    }) as fc.Arbitrary<Record<string, unknown>>;
  return fc
    .tuple(...entries)
    .map((vs) =>
      Object.fromEntries(keys.flatMap((k, i) => (vs[i] === undefined ? [] : [[k, vs[i]]]))),
    );
}

export type Mutation =
  | { m: 'set'; at: number; value: unknown }
  | { m: 'drop'; at: number }
  | { m: 'extra'; key: string; value: unknown };

export const mutationArb: fc.Arbitrary<Mutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ m: fc.constant('set' as const), at: fc.nat(), value: hostileArb }),
  },
  { weight: 1, arbitrary: fc.record({ m: fc.constant('drop' as const), at: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      m: fc.constant('extra' as const),
      key: fc.constantFrom(...EXTRA_KEYS),
      value: hostileArb,
    }),
  },
);

/** Every place in `v` a value sits: [container, key] pairs, nested objects and arrays included. */
function slots(
  v: unknown,
  out: Array<[Record<string, unknown> | unknown[], string | number]> = [],
) {
  if (Array.isArray(v)) {
    v.forEach((x, i) => {
      out.push([v, i]);
      slots(x, out);
    });
  } else if (v && typeof v === 'object') {
    for (const k of Object.keys(v)) {
      out.push([v as Record<string, unknown>, k]);
      slots((v as Record<string, unknown>)[k], out);
    }
  }
  return out;
}

/** `args` with the mutations applied (a deep copy: the generated value is not changed). */
export function mutate(
  args: Record<string, unknown>,
  mutations: readonly Mutation[],
): Record<string, unknown> {
  const out = structuredClone(args);
  for (const mu of mutations) {
    const all = slots(out);
    if (mu.m === 'extra') {
      // defineProperty: `out.__proto__ = …` would set the prototype, not send a field.
      Object.defineProperty(out, mu.key, {
        value: structuredClone(mu.value),
        enumerable: true,
        writable: true,
        configurable: true,
      });
      continue;
    }
    if (all.length === 0) continue;
    const [obj, key] = all[mu.at % all.length]!;
    // A copy: the hostileArb values are shared constants, and a later mutation of this case may
    // write inside the value it set (a constant changed, or an array made to contain itself).
    if (mu.m === 'set') (obj as Record<string, unknown>)[key as string] = structuredClone(mu.value);
    else if (Array.isArray(obj)) obj.splice(key as number, 1);
    else delete obj[key as string];
  }
  return out;
}

/** How the arguments reach the wire. */
export type Encoding =
  | { e: 'json' }
  /** A field sent twice, a hostileArb value first (JSON.parse keeps the last). */
  | { e: 'duplicate'; value: unknown }
  /** Bytes that are not UTF-8 inside the body's first string. */
  | { e: 'bad_utf8'; bytes: number[] }
  /** A body that is not a JSON object. */
  | { e: 'raw'; text: string }
  /** The arguments under one field nested `depth` arrays deep. */
  | { e: 'deep'; depth: number };

const BAD_UTF8 = [
  [0xff],
  [0xfe, 0xff],
  [0xc3], // a lead byte with no continuation
  [0xc0, 0xaf], // overlong "/"
  [0xed, 0xa0, 0x80], // a UTF-16 surrogate encoded in UTF-8
  [0xf4, 0x90, 0x80, 0x80], // past U+10FFFF
  [0x80],
];

const RAW_BODIES = [
  ' ',
  'lane_id=fz&title=x',
  '{',
  '}',
  '{"a":',
  'null',
  '[]',
  '[{}]',
  '"x"',
  '42',
  'true',
  '{"a":1}}',
  '{"a":1,}',
  "{'a':1}",
  '\u0000',
  'NaN',
  '{"limit":NaN}',
  '{"limit":Infinity}',
  '{"limit":1e999}',
  '{"limit":-0}',
  '{"limit":123456789012345678901234567890}',
  '\ufeff{}',
  '{"lane_id":"fz"}\n{"lane_id":"fz"}',
  '<xml/>',
];

export const encodingArb: fc.Arbitrary<Encoding> = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ e: 'json' as const }) },
  { weight: 1, arbitrary: fc.record({ e: fc.constant('duplicate' as const), value: hostileArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      e: fc.constant('bad_utf8' as const),
      bytes: fc.constantFrom(...BAD_UTF8),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ e: fc.constant('raw' as const), text: fc.constantFrom(...RAW_BODIES) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      e: fc.constant('deep' as const),
      depth: fc.constantFrom(62, 63, 64, 65, 5000, 100_000),
    }),
  },
);

/** The request body for `args` sent as `enc`. */
export function encode(args: Record<string, unknown>, enc: Encoding): Buffer {
  const text = JSON.stringify(args);
  switch (enc.e) {
    case 'json':
      return Buffer.from(text);
    case 'duplicate': {
      const first = Object.keys(args)[0] ?? 'lane_id';
      const dup = `${JSON.stringify(first)}:${JSON.stringify(enc.value) ?? 'null'}`;
      return Buffer.from(text === '{}' ? `{${dup}}` : `{${dup},${text.slice(1)}`);
    }
    case 'bad_utf8': {
      // Inside the first string (a key or a value), so that only the bytes are wrong.
      const quote = text.indexOf('"');
      const buf = Buffer.from(quote < 0 ? '{"k":""}' : text);
      const at = (quote < 0 ? 1 : quote) + 1;
      return Buffer.concat([buf.subarray(0, at), Buffer.from(enc.bytes), buf.subarray(at)]);
    }
    case 'raw':
      return Buffer.from(enc.text);
    case 'deep': {
      const inner = '['.repeat(enc.depth) + text + ']'.repeat(enc.depth);
      return Buffer.from(`{"x":${inner}}`);
    }
  }
}
