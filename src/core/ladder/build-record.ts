import {
  ANCHORED_KINDS,
  MAX_DETAIL_BYTES,
  MAX_SUMMARY_BYTES,
  MAX_TITLE_CHARS,
  RUNG_KINDS,
  rungDoc,
  rungGenerator,
  rungKindProblem,
  rungPathProblem,
  type RungGenerator,
} from '../../schema/rung.js';
import type { RungRecord } from '../../schema/ladder-ops.js';

// Whether the rung schema (schema/rung.ts rungDoc) accepts a record a Ladder build made, without
// zod: a full build checks thousands of records it built itself, and zod's generic walk of each
// (~25 µs) was a tenth of the build's planning time. What is the same for every record of a
// build (its author, time and generator) is checked once, with zod itself.
//
// Hazard: this mirrors rungDoc field by field. A constraint added there must be added here;
// test/core/ladder-record.test.ts throws random records (valid and broken in every field) at
// both and fails on any disagreement.

const KINDS = new Set<string>(RUNG_KINDS);
const HEX_OID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const HEX_DIGEST = /^[0-9a-f]{40,128}$/;
/** rungDoc's bound on a rung's symbols (count, and characters of each). */
const MAX_SYMBOLS = 200;

const isString = (s: unknown): s is string => typeof s === 'string';
/** More than `max` bytes of UTF-8 (a UTF-16 unit is at most 3: short strings need no count). */
const overBytes = (s: string, max: number): boolean =>
  s.length * 3 > max && Buffer.byteLength(s, 'utf8') > max;

function anchorFits(a: unknown): boolean {
  if (typeof a !== 'object' || a === null || Array.isArray(a)) return false;
  const keys = Object.keys(a);
  if (keys.length !== 2) return false;
  const { commit, oid } = a as { commit?: unknown; oid?: unknown };
  return isString(commit) && HEX_OID.test(commit) && isString(oid) && HEX_OID.test(oid);
}

/** The fields of a record rungDoc checks on their own, in its order. */
function fieldsFit(r: RungRecord): boolean {
  if (!isString(r.path) || rungPathProblem(r.path) !== null) return false;
  if (!KINDS.has(r.kind)) return false;
  if (!isString(r.title) || r.title.length < 1 || r.title.length > MAX_TITLE_CHARS) return false;
  if (!isString(r.summary) || r.summary.length < 1 || overBytes(r.summary, MAX_SUMMARY_BYTES))
    return false;
  if (r.detail !== undefined && (!isString(r.detail) || overBytes(r.detail, MAX_DETAIL_BYTES)))
    return false;
  if (r.symbols !== undefined) {
    if (!Array.isArray(r.symbols) || r.symbols.length > MAX_SYMBOLS) return false;
    for (const s of r.symbols)
      if (!isString(s) || s.length < 1 || s.length > MAX_SYMBOLS) return false;
  }
  if (r.anchor !== undefined && !anchorFits(r.anchor)) return false;
  if (!isString(r.inputs_hash) || !HEX_DIGEST.test(r.inputs_hash)) return false;
  return true;
}

/** The keys rungDoc (a strict object) allows (author and written_at are the build's). */
const RECORD_KEYS = new Set([
  'author',
  'written_at',
  'path',
  'kind',
  'title',
  'summary',
  'detail',
  'symbols',
  'anchor',
  'inputs_hash',
  'generator',
]);

/**
 * A checker of one build's records: `fits(rec)` is rungDoc's verdict on the rung the record
 * becomes (its generator, or the build's; the build's actor; a time) for records of any shape.
 * `generator` null: a record must name its own (a ladder_write_rung's). `anyKeys`: keys rungDoc
 * does not know pass (the fold keeps only the fields it knows, and a newer zz may add some).
 */
export function recordChecker(
  build: {
    generator: RungGenerator | null;
    actor: string;
    writtenAt: string;
  },
  anyKeys = false,
): (rec: RungRecord) => boolean {
  // The per-build part, by the schema itself: a bad actor or time refuses every record.
  const constant = rungDoc.safeParse({
    path: '_repo',
    kind: 'repo',
    title: 't',
    summary: 's',
    anchor: { commit: '0'.repeat(40), oid: '0'.repeat(40) },
    inputs_hash: '0'.repeat(40),
    generator: { method: 'human', version: '1' },
    author: build.actor,
    written_at: build.writtenAt,
  }).success;
  const buildGenerator =
    build.generator !== null && rungGenerator.safeParse(build.generator).success;
  return (rec) => {
    if (!constant || typeof rec !== 'object' || rec === null) return false;
    if (!anyKeys) for (const k of Object.keys(rec)) if (!RECORD_KEYS.has(k)) return false;
    if (!fieldsFit(rec)) return false;
    const genOk =
      rec.generator === undefined || rec.generator === null
        ? buildGenerator
        : rungGenerator.safeParse(rec.generator).success;
    if (!genOk) return false;
    // rungDoc's refinements: the kind's place, and an anchor where the kind needs one.
    if (rungKindProblem(rec.path, rec.kind) !== null) return false;
    return !(rec.anchor === undefined && ANCHORED_KINDS.has(rec.kind));
  };
}
