import { z } from 'zod';
import { actor } from './ids.js';
import { atPath, inUserTerms } from './issue-text.js';
import { jsonDeeperThan, MAX_JSON_DEPTH } from './json-depth.js';
import { utf8Bytes } from './limits.js';

// What every op record holds, whatever its entity (DESIGN §2): the envelope. Each entity's ops
// are a discriminated union on `op` built from this envelope (lane-ops.ts, config-ops.ts,
// ladder-ops.ts, changeset-ops.ts); a fold switches over that union and never casts.
//
// `v` is the op format. Ops written before formats existed have none and read as format 1.
// Adding an op kind or changing an op's meaning bumps OP_FORMAT: an op of a newer format that
// this zz does not know is refused by name (upgrade), never guessed at. Format 2 added the
// config op repo_add_roots (and repo_init's optional project_roots, which older readers pass
// through): a zz of format 1 that fetches one quarantines the config, saying to upgrade.

export const OP_FORMAT = 2;

/**
 * Op ids: `<16 hex replica>-<32 hex random>` (128 random bits); older ops have 10 or 32 hex.
 */
export const OP_ID_RE = /^(?:[0-9a-f]{10}|[0-9a-f]{32}|[0-9a-f]{16}-[0-9a-f]{32})$/;

const ENVELOPE = {
  v: z.number().int().min(1).optional(),
  id: z.string().min(1).max(100),
  actor: z.string().min(1).max(300),
  lamport: z.number().int().min(0),
  /** The replica (clone) that recorded the op; breaks ties in the merge order. */
  replica: z.string().max(64).optional(),
  time: z.string().max(64),
  key: z.string().max(128).optional(),
  /** Hash of the request that carried `key`, to tell a retry from a reuse. */
  request_hash: z.string().max(128).optional(),
};

/** Any op, of any entity: what the store reads and writes without knowing entities. */
export const opRecord = z.object({
  ...ENVELOPE,
  op: z.string().min(1).max(64),
  args: z.record(z.string(), z.unknown()),
  out: z.record(z.string(), z.unknown()).optional(),
});
export type OpRecord = z.infer<typeof opRecord>;

const ENVELOPE_KEYS = new Set([...Object.keys(ENVELOPE), 'op', 'args', 'out']);

/**
 * The common case of `opRecord.safeParse(x).success`, without zod's cost (a Lane of 5,000
 * Asks is 5,000 envelopes on every cold load): true only when x satisfies opRecord AND zod
 * would return it unchanged (no key zod would strip). Anything else — invalid, or valid with
 * extra keys — answers false and the caller asks zod, which names the problem or strips.
 * test/schema/op-parse.test.ts checks it against opRecord on generated records.
 */
export function isPlainOpRecord(x: unknown): x is OpRecord {
  if (!isPlainObject(x)) return false;
  for (const k in x) if (!ENVELOPE_KEYS.has(k)) return false;
  const { v, id, actor, lamport, replica, time, key, request_hash, op, args, out } = x;
  return (
    (v === undefined || nat(v, 1)) &&
    str(id, 1, 100) &&
    str(actor, 1, 300) &&
    nat(lamport, 0) &&
    (replica === undefined || str(replica, 0, 64)) &&
    str(time, 0, 64) &&
    (key === undefined || str(key, 0, 128)) &&
    (request_hash === undefined || str(request_hash, 0, 128)) &&
    str(op, 1, 64) &&
    isPlainRecord(args) &&
    (out === undefined || isPlainRecord(out))
  );
}

const nat = (n: unknown, min: number): boolean =>
  typeof n === 'number' && Number.isSafeInteger(n) && n >= min;

const str = (s: unknown, min: number, max: number): boolean =>
  typeof s === 'string' && s.length >= min && s.length <= max;

// What JSON.parse makes of `{…}`, as zod's record and object schemas accept it.
function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return false;
  const proto: unknown = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}

// JSON.parse makes `"__proto__"` an own key; zod's record copy would assign it (setting the
// copy's prototype), so such a record is left to zod to keep the two paths' outputs equal.
export const isPlainRecord = (x: unknown): x is Record<string, unknown> =>
  isPlainObject(x) && !Object.hasOwn(x, '__proto__');

/** The envelope of an entity's own ops: actors are real actors. */
const TYPED_ENVELOPE = { ...ENVELOPE, actor };

/**
 * One op kind of an entity. Args and out are loose: fields a newer writer adds within the same
 * format pass through into history untouched; the fold reads only the fields it names.
 */
export function opSchema<N extends string, A extends z.core.$ZodShape, O extends z.ZodType>(
  name: N,
  args: A,
  out: O,
) {
  return z.object({ ...TYPED_ENVELOPE, op: z.literal(name), args: z.looseObject(args), out });
}

/** `out` of an op that records nothing beyond its arguments. */
export const noOut = z.record(z.string(), z.unknown()).optional();

export type OpParse<Op> = { ok: true; op: Op } | { ok: false; error: string };

/** Builds the parser of one entity's ops from its union and the names in it. */
export function opParser<Op extends OpRecord>(
  entity: string,
  union: z.ZodType<Op>,
  names: readonly string[],
  /** Hand checks of the common ops: the op when `union` would return it unchanged, else null. */
  fast?: (raw: OpRecord) => Op | null,
): (raw: OpRecord) => OpParse<Op> {
  const known = new Set(names);
  // What zod parsed, by op object, for frozen ops only: the store shares frozen ops per commit
  // (store/op-message.ts), so a commit folded again — a reopened repository, a merge refold —
  // goes through zod once, and an op nobody can change cannot go stale here. Weak: an entry
  // lives as long as its op does. Ops the hand checks vouch for are not kept: checking again
  // costs what a lookup would.
  const parsed = new WeakMap<OpRecord, OpParse<Op>>();
  return (raw) => {
    if (known.has(raw.op)) {
      const quick = fast?.(raw);
      if (quick) return { ok: true, op: quick };
    }
    if (!Object.isFrozen(raw)) return parseOne(raw);
    let r = parsed.get(raw);
    if (r === undefined) parsed.set(raw, (r = parseOne(raw)));
    return r;
  };
  function parseOne(raw: OpRecord): OpParse<Op> {
    if (!known.has(raw.op)) {
      const v = raw.v ?? 1;
      return {
        ok: false,
        error:
          v > OP_FORMAT
            ? `op ${raw.op} (format ${v}) was written by a newer zz; upgrade zz to read it`
            : `op ${raw.op} is not a ${entity} op`,
      };
    }
    const r = union.safeParse(raw, { error: inUserTerms });
    if (r.success) return { ok: true, op: r.data };
    return { ok: false, error: `op ${raw.op} ${raw.id}: ${describeIssues(r.error)}` };
  }
}

/** One line naming each bad field: `args.title: Too big…; out.ask_id: Invalid input`. */
export function describeIssues(e: z.ZodError): string {
  return e.issues
    .slice(0, 5)
    .map((i) => (i.path.length ? atPath(i.path, i.message) : `(op): ${i.message}`))
    .join('; ');
}

/**
 * Text a person writes at length (an Ask's body, an answer's result, a Lane's description, a
 * commit message), with its bound: the CLI also takes these from a file (`--body-file PATH`)
 * and reads no more of it than the bound allows. Kept here because a refine's bound cannot be
 * read back from the schema. Mark a field with longText() (or boundedText, which does).
 */
export const LONG_TEXT = new WeakMap<z.ZodType, { maxBytes?: number; maxChars?: number }>();

/** Marks a bounded string schema as long text (LONG_TEXT); apply it after .min/.max. */
export function longText<T extends z.ZodString>(t: T): T {
  if (t.maxLength === null) throw new Error('longText needs a bounded string');
  LONG_TEXT.set(t, { maxChars: t.maxLength });
  return t;
}

/** A string of at most `max` UTF-8 bytes; long text (LONG_TEXT). */
export const boundedText = (max: number, what = 'text') => {
  const t = z
    .string()
    .refine((s) => utf8Bytes(s) <= max, `${what} must be at most ${kib(max)} of UTF-8`);
  LONG_TEXT.set(t, { maxBytes: max });
  return t;
};

/**
 * A JSON object of at most `max` UTF-8 bytes once serialised, nested at most one level less
 * than an op's args may be (it sits inside them): deeper, every reader of the op would refuse
 * it (store/op-message.ts). An MCP client's arguments are not depth-checked as HTTP bodies are,
 * and serialising a very deep one throws: that is refused here too.
 */
export const boundedJson = (max: number, what = 'value') =>
  z.record(z.string(), z.unknown()).refine(
    (o) => {
      let text: string;
      try {
        text = JSON.stringify(o) ?? '';
      } catch {
        return false;
      }
      return utf8Bytes(text) <= max && !jsonDeeperThan(text, MAX_JSON_DEPTH - 1);
    },
    `${what} must be at most ${kib(max)} as JSON, nested at most ${MAX_JSON_DEPTH - 1} levels`,
  );

const kib = (n: number): string => (n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);
