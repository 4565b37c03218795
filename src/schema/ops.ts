import { z } from 'zod';
import { actor } from './ids.js';
import { utf8Bytes } from './limits.js';

// What every op record holds, whatever its entity (DESIGN §2): the envelope. Each entity's ops
// are a discriminated union on `op` built from this envelope (lane-ops.ts, config-ops.ts,
// ladder-ops.ts, changeset-ops.ts); a fold switches over that union and never casts.
//
// `v` is the op format. Ops written before formats existed have none and read as format 1.
// Adding an op kind or changing an op's meaning bumps OP_FORMAT: an op of a newer format that
// this zz does not know is refused by name (upgrade), never guessed at.

export const OP_FORMAT = 1;

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
): (raw: OpRecord) => OpParse<Op> {
  const known = new Set(names);
  return (raw) => {
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
    const r = union.safeParse(raw);
    if (r.success) return { ok: true, op: r.data };
    return { ok: false, error: `op ${raw.op} ${raw.id}: ${describeIssues(r.error)}` };
  };
}

/** One line naming each bad field: `args.title: Too big…; out.ask_id: Invalid input`. */
export function describeIssues(e: z.ZodError): string {
  return e.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(op)'}: ${i.message}`)
    .join('; ');
}

/** A string of at most `max` UTF-8 bytes. */
export const boundedText = (max: number, what = 'text') =>
  z.string().refine((s) => utf8Bytes(s) <= max, `${what} must be at most ${kib(max)} of UTF-8`);

/** A JSON object of at most `max` UTF-8 bytes once serialised. */
export const boundedJson = (max: number, what = 'value') =>
  z
    .record(z.string(), z.unknown())
    .refine(
      (o) => utf8Bytes(JSON.stringify(o) ?? '') <= max,
      `${what} must be at most ${kib(max)} as JSON`,
    );

const kib = (n: number): string => (n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);
