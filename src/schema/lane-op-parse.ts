import { ACTOR_RE, ASK_ID_RE, CHANGESET_ID_RE, LANE_ID_RE, noLockSuffix } from './ids.js';
import { ASK_KIND_RE, OUTCOMES } from './lane.js';
import { LANE_OP_NAMES, laneOp, type LaneOp } from './lane-ops.js';
import { STORED_LIMITS, utf8Bytes } from './limits.js';
import { isPlainOpRecord, isPlainRecord, opParser, type OpRecord } from './ops.js';

// The parser of a Lane's ops. The ops a long Lane is made of (posts, claims, releases, answers), checked by hand: on a cold load of
// a Lane of 5,000 Asks, zod's union parse and the copies it makes were most of the time. Each
// check answers true only when the op's schema in lane-ops.ts accepts the op AND would return
// it unchanged; anything else (invalid, or with keys zod would strip) answers false and zod
// parses it, naming what is wrong. test/schema/op-parse.test.ts holds each check to its schema
// on generated ops, boundaries included: a limit changed in one place and not the other fails
// there.

type Of<N extends LaneOp['op']> = Extract<LaneOp, { op: N }>;

const text = (s: unknown, max: number): s is string => typeof s === 'string' && s.length <= max;
const absent = (x: unknown): x is undefined => x === undefined;
const laneIdOk = (s: unknown): boolean =>
  typeof s === 'string' && LANE_ID_RE.test(s) && noLockSuffix(s);
const askIdOk = (s: unknown): boolean => typeof s === 'string' && ASK_ID_RE.test(s);
// Actors repeat across a Lane's ops (the store keeps one copy of each string): an actor that
// passed once is looked up, not matched again. Bounded; cleared when full.
const goodActors = new Set<string>();
const actorOk = (s: unknown): boolean => {
  if (typeof s !== 'string') return false;
  if (goodActors.has(s)) return true;
  if (s.length > 300 || !ACTOR_RE.test(s)) return false;
  if (goodActors.size >= 1024) goodActors.clear();
  goodActors.add(s);
  return true;
};
/** At most `max` UTF-8 bytes (a string of at most max/3 UTF-16 units cannot be longer). */
const fitsBytes = (s: string, max: number): boolean => s.length * 3 <= max || utf8Bytes(s) <= max;
const intIn = (n: unknown, min: number, max = Number.MAX_SAFE_INTEGER): boolean =>
  typeof n === 'number' && Number.isSafeInteger(n) && n >= min && n <= max;

/** The envelope every lane op shares: an actor that is a real actor. */
const envelopeOk = (raw: OpRecord): boolean => isPlainOpRecord(raw) && actorOk(raw.actor);

function askPost(raw: OpRecord): raw is Of<'ask_post'> {
  if (raw.op !== 'ask_post' || !envelopeOk(raw)) return false;
  const a = raw.args;
  const o = raw.out;
  return (
    laneIdOk(a.lane_id) &&
    typeof a.kind === 'string' &&
    ASK_KIND_RE.test(a.kind) &&
    text(a.title, STORED_LIMITS.title) &&
    (absent(a.body) || (typeof a.body === 'string' && fitsBytes(a.body, STORED_LIMITS.body))) &&
    (absent(a.priority) || intIn(a.priority, 0, 4)) &&
    (absent(a.depends_on) ||
      (Array.isArray(a.depends_on) &&
        a.depends_on.length <= STORED_LIMITS.list &&
        a.depends_on.every(askIdOk))) &&
    (absent(a.payload) ||
      (isPlainRecord(a.payload) &&
        utf8Bytes(JSON.stringify(a.payload)) <= STORED_LIMITS.payload)) &&
    (absent(a.posted_by) || actorOk(a.posted_by)) &&
    (absent(a.origin) ||
      a.origin === null ||
      (isPlainRecord(a.origin) && askIdOk(a.origin.ask_id) && text(a.origin.reason, 1000))) &&
    o !== undefined &&
    askIdOk(o.ask_id)
  );
}

function askClaim(raw: OpRecord): raw is Of<'ask_claim'> {
  if (raw.op !== 'ask_claim' || !envelopeOk(raw)) return false;
  const a = raw.args;
  const o = raw.out;
  return (
    laneIdOk(a.lane_id) &&
    askIdOk(a.ask_id) &&
    (absent(a.lease_seconds) || intIn(a.lease_seconds, 0)) &&
    o !== undefined &&
    text(o.lease_expires_at, 64) &&
    (absent(o.renewed) || typeof o.renewed === 'boolean') &&
    (absent(o.expired_holder) || o.expired_holder === null || actorOk(o.expired_holder)) &&
    (absent(o.expired_at) || o.expired_at === null || text(o.expired_at, 64))
  );
}

function askRelease(raw: OpRecord): raw is Of<'ask_release'> {
  if (raw.op !== 'ask_release' || !envelopeOk(raw)) return false;
  const a = raw.args;
  const o = raw.out;
  return (
    laneIdOk(a.lane_id) &&
    askIdOk(a.ask_id) &&
    (absent(a.reason) || text(a.reason, STORED_LIMITS.reason)) &&
    (o === undefined ||
      absent(o.previous_holder) ||
      o.previous_holder === null ||
      actorOk(o.previous_holder))
  );
}

const outcomes: ReadonlySet<unknown> = new Set(OUTCOMES);
const changesetIdOk = (s: unknown): boolean => typeof s === 'string' && CHANGESET_ID_RE.test(s);
const list = (x: unknown, max: number, ok: (v: unknown) => boolean): boolean =>
  Array.isArray(x) && x.length <= max && x.every(ok);

function askAnswer(raw: OpRecord): raw is Of<'ask_answer'> {
  if (raw.op !== 'ask_answer' || !envelopeOk(raw)) return false;
  const a = raw.args;
  const o = raw.out;
  const cs = a.changeset;
  return (
    laneIdOk(a.lane_id) &&
    askIdOk(a.ask_id) &&
    outcomes.has(a.outcome) &&
    (absent(a.result) ||
      a.result === null ||
      (typeof a.result === 'string' && fitsBytes(a.result, STORED_LIMITS.result))) &&
    (absent(a.changeset_id) || a.changeset_id === null || changesetIdOk(a.changeset_id)) &&
    (absent(cs) ||
      (isPlainRecord(cs) &&
        text(cs.base, 64) &&
        text(cs.message, STORED_LIMITS.commitMessage) &&
        list(cs.paths, STORED_LIMITS.changesetFiles, (p) => text(p, STORED_LIMITS.path)))) &&
    (o === undefined ||
      ((absent(o.changeset_id) || changesetIdOk(o.changeset_id)) &&
        (absent(o.changeset_commit) ||
          o.changeset_commit === null ||
          text(o.changeset_commit, 64)) &&
        (absent(o.follow_ups) || list(o.follow_ups, STORED_LIMITS.list, askIdOk)) &&
        (absent(o.commit) || text(o.commit, 64))))
  );
}

/** A Lane's op as read from its log: checked by hand when one of the checks above applies. */
export const parseLaneOp = opParser<LaneOp>('lane', laneOp, LANE_OP_NAMES, fastLaneOp);

/** The lane op `raw` is, when one of the hand checks vouches for it; else null (ask zod). */
export function fastLaneOp(raw: OpRecord): LaneOp | null {
  switch (raw.op) {
    case 'ask_post':
      return askPost(raw) ? raw : null;
    case 'ask_claim':
      return askClaim(raw) ? raw : null;
    case 'ask_release':
      return askRelease(raw) ? raw : null;
    case 'ask_answer':
      return askAnswer(raw) ? raw : null;
    default:
      return null;
  }
}
