import {
  ACTOR_RE,
  ASK_ID_RE,
  IDEMPOTENCY_KEY_RE,
  LANE_ID_RE,
  noLockSuffix,
  REVISION_RE,
} from '../schema/ids.js';
import { ASK_KIND_RE, OUTCOMES } from '../schema/lane.js';
import { LIMITS, utf8Bytes } from '../schema/limits.js';

// The arguments of the busiest tools, checked by hand before zod (as the store's Lane ops are,
// schema/lane-op-parse.ts). Measured in the daemon under the 64-client mixed load: zod's parse
// of a tool's arguments took 10–27 µs at the median (a request's parse touches many schema
// objects that the rest of the request has pushed out of the CPU's caches; the same parse
// again right after took 2–3), 4–5% of the daemon's CPU. A shape here is a few plain
// checks over the same patterns and limits.
//
// A check answers the arguments exactly as zod would (the keys given, in the schema's order,
// arrays copied) only when the tool's zod schema accepts them; anything else — an unknown
// key, a field without a fast check here (payload, changeset), any doubt — answers null and
// zod parses, naming what is wrong. test/tools/fast-args.test.ts holds every shape to its
// tool's schema on generated arguments, boundaries included, and its keys to the schema's.

type Check = (v: unknown) => boolean;

const str =
  (re: RegExp | null, min: number, max: number, also?: (s: string) => boolean): Check =>
  (v) =>
    typeof v === 'string' &&
    v.length >= min &&
    v.length <= max &&
    (re === null || re.test(v)) &&
    (also === undefined || also(v));
const int =
  (min: number, max: number): Check =>
  (v) =>
    Number.isSafeInteger(v) && (v as number) >= min && (v as number) <= max;
const bool: Check = (v) => typeof v === 'boolean';
const oneOf =
  (values: readonly string[]): Check =>
  (v) =>
    typeof v === 'string' && values.includes(v);
/** At most `max` UTF-8 bytes (schema/ops.ts boundedText). */
const bytes =
  (max: number): Check =>
  (v) =>
    typeof v === 'string' && (v.length * 3 <= max || utf8Bytes(v) <= max);
/** An array of items each passing `item`; copied, as zod copies it. */
const LIST = Symbol('list');
type ListCheck = Check & { [LIST]: true };
const list = (item: Check, max: number): ListCheck =>
  Object.assign((v: unknown) => Array.isArray(v) && v.length <= max && v.every((x) => item(x)), {
    [LIST]: true as const,
  });

const laneId = str(LANE_ID_RE, 0, Infinity, noLockSuffix);
const askId = str(ASK_ID_RE, 0, Infinity);
const actor = str(ACTOR_RE, 0, 300);
const kind = str(ASK_KIND_RE, 0, Infinity);
const writeArgs = {
  actor,
  idempotency_key: str(IDEMPOTENCY_KEY_RE, 0, Infinity),
  expected_revision: str(REVISION_RE, 0, Infinity),
};
const leaseSeconds = int(1, 7 * 24 * 3600);

/** A tool's fields in its schema's order; `required` names those that must be present. */
interface Shape {
  fields: Record<string, Check>;
  required: readonly string[];
}

const SHAPES = {
  lane_list: { fields: {}, required: [] },
  lane_get: {
    fields: {
      lane_id: laneId,
      asks_limit: int(1, 100_000),
      asks_offset: int(0, 1_000_000_000),
      asks_cursor: str(null, 0, 4096),
      history_limit: int(1, 100_000),
      history_offset: int(0, 1_000_000_000),
      history_cursor: str(null, 0, 4096),
      include_history: bool,
    },
    required: ['lane_id'],
  },
  ask_post: {
    // payload (boundedJson) has no fast check: an Ask with a payload goes to zod.
    fields: {
      lane_id: laneId,
      kind,
      title: str(null, 1, LIMITS.title),
      body: bytes(LIMITS.body),
      priority: int(0, 4),
      depends_on: list(askId, LIMITS.list),
      from: actor,
      actor: writeArgs.actor,
      idempotency_key: writeArgs.idempotency_key,
    },
    required: ['lane_id', 'kind', 'title'],
  },
  ask_query_claimable: {
    fields: { lane_id: laneId, kinds: list(kind, 50), limit: int(1, 500) },
    required: ['lane_id'],
  },
  ask_claim_next: {
    fields: {
      lane_id: laneId,
      kinds: list(kind, 50),
      lease_seconds: leaseSeconds,
      actor: writeArgs.actor,
      idempotency_key: writeArgs.idempotency_key,
    },
    required: ['lane_id'],
  },
  ask_claim: {
    fields: { lane_id: laneId, ask_id: askId, lease_seconds: leaseSeconds, ...writeArgs },
    required: ['lane_id', 'ask_id'],
  },
  ask_answer: {
    // changeset has no fast check: an answer with a changeset goes to zod.
    fields: {
      lane_id: laneId,
      ask_id: askId,
      outcome: oneOf(OUTCOMES),
      result: bytes(LIMITS.result),
      ...writeArgs,
    },
    required: ['lane_id', 'ask_id', 'outcome'],
  },
} satisfies Record<string, Shape>;

export type FastArgsTool = keyof typeof SHAPES;
/** What a tool's definition holds (ToolDef.fastArgs): its check, or none. */
export type FastArgs = (raw: unknown) => Record<string, unknown> | null;

/** The fields a tool's fast check knows, in order (tests compare them to the schema's). */
export function fastArgFields(tool: FastArgsTool): readonly string[] {
  return Object.keys(SHAPES[tool]!.fields);
}

/** The fast check of a tool's arguments, for its definition (defineTool's fastArgs). */
export function fastArgsOf(tool: FastArgsTool): FastArgs {
  const shape = SHAPES[tool]!;
  return (raw) => check(shape, raw);
}

/**
 * The arguments as the tool's zod schema would answer them, when they are plainly valid;
 * null when zod must decide (anything unusual).
 */
function check(shape: Shape, raw: unknown): Record<string, unknown> | null {
  if (!isPlainObject(raw)) return null;
  const fields = shape.fields;
  let seen = 0;
  for (const key in raw) {
    // Own keys only (JSON.parse makes no other), each one the shape checks.
    if (!Object.hasOwn(raw, key) || !Object.hasOwn(fields, key)) return null;
    const value = raw[key];
    // zod leaves a key whose value is undefined to the field's optional(): not ours.
    if (value === undefined || !fields[key]!(value)) return null;
    seen++;
  }
  for (const key of shape.required) if (!Object.hasOwn(raw, key)) return null;
  // zod's answer: the keys given, in the schema's order, arrays copied.
  const out: Record<string, unknown> = {};
  let copied = 0;
  for (const key in fields) {
    if (!Object.hasOwn(raw, key)) continue;
    const value = raw[key];
    out[key] = LIST in fields[key]! ? (value as unknown[]).slice() : value;
    copied++;
  }
  return copied === seen ? out : null;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
