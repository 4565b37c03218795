import { z } from 'zod';
import { jsonDeeperThan, MAX_STORED_JSON_DEPTH } from '../schema/json-depth.js';
import { describeIssues, isPlainOpRecord, opRecord, type OpParse } from '../schema/ops.js';
import type { CommitRecord, OpRecord } from './store.js';

// A commit message is an operation: a summary line, the ops as one JSON line (the authority
// for replay), and trailers so that `git log` readers see what happened without parsing JSON.

const JSON_MARK = 'zz-ops ';

export function formatOpMessage(summary: string, ops: readonly OpRecord[]): string {
  const trailers: string[] = [];
  for (const op of ops) {
    trailers.push(`Zz-Op: ${op.op}`, `Zz-Actor: ${oneLine(op.actor)}`, `Zz-Lamport: ${op.lamport}`);
    if (op.key !== undefined) trailers.push(`Zz-Idempotency-Key: ${oneLine(op.key)}`);
  }
  return `${oneLine(summary).slice(0, 200)}\n\n${JSON_MARK}${JSON.stringify(ops)}\n\n${trailers.join('\n')}\n`;
}

export type OpMessageParse<Op> = { ok: true; ops: Op[] } | { ok: false; error: string };

/**
 * The ops a commit message records, parsed against `schema` (the op envelope by default, or an
 * entity's op union). A message without an ops line records none (a merge commit, a commit
 * written by hand); broken JSON or an op that does not parse is an error value naming what is
 * wrong — never thrown, never silently skipped.
 */
export function parseOpMessage(message: string): OpMessageParse<OpRecord>;
export function parseOpMessage<Op>(
  message: string,
  parse: (raw: OpRecord) => OpParse<Op>,
): OpMessageParse<Op>;
export function parseOpMessage<Op>(
  message: string,
  parse?: (raw: OpRecord) => OpParse<Op>,
): OpMessageParse<Op | OpRecord> {
  const raw = parseEnvelopes(message);
  if (!raw.ok || !parse) return raw;
  const ops: Op[] = [];
  for (const r of raw.ops) {
    const p = parse(r);
    if (!p.ok) return { ok: false, error: p.error };
    ops.push(p.op);
  }
  return { ok: true, ops };
}

function parseEnvelopes(message: string): OpMessageParse<OpRecord> {
  const line = opsLine(message);
  if (line === null) return { ok: true, ops: [] };
  // The line is `[{…op, "args": {…}, "out": {…}}]`: args and out may nest MAX_STORED_JSON_DEPTH
  // levels, two below the array and the op. Checked before any value exists: a deeper one
  // (another machine's) would overflow the stack of whatever walks it next (json-depth.ts).
  if (jsonDeeperThan(line, MAX_STORED_JSON_DEPTH + 2)) {
    return {
      ok: false,
      error: `an op's args or out is nested deeper than ${MAX_STORED_JSON_DEPTH} levels`,
    };
  }
  let json: unknown;
  try {
    json = JSON.parse(line);
  } catch (e) {
    return { ok: false, error: `the ops line is not JSON (${(e as Error).message})` };
  }
  // Ops as zz writes them pass the hand-written check; anything else goes through zod, which
  // names what is wrong (or strips keys it does not know).
  if (Array.isArray(json) && json.every(isPlainOpRecord)) return { ok: true, ops: json };
  const raw = z.array(opRecord).safeParse(json);
  if (!raw.success) return { ok: false, error: `an op is malformed: ${describeIssues(raw.error)}` };
  return { ok: true, ops: raw.data };
}

/** The JSON after the ops mark: the first line that starts with it (zz writes it third). */
const JSON_LINE = '\n' + JSON_MARK;

function opsLine(message: string): string | null {
  let at = 0;
  if (!message.startsWith(JSON_MARK)) {
    const nl = message.indexOf(JSON_LINE);
    if (nl < 0) return null;
    at = nl + 1;
  }
  const end = message.indexOf('\n', at);
  return message.slice(at + JSON_MARK.length, end < 0 ? message.length : end);
}

// Commit oid → the ops its message records. A commit's bytes never change under its oid, so
// neither do its ops: a reopened repository, a fold sync restarts after a merge, or a second
// reader of one history skips the JSON and the validation. The ops are frozen because every
// reader shares them (entities' typed parses are cached by op object, see schema/ops.ts).
// Bounded by the ops held; Map order is the LRU order.
const cacheLimits = { maxOps: 10_000 };
const opCache = new Map<string, Pick<CommitRecord, 'ops' | 'malformed'>>();
let cachedOps = 0;

/** Drops cached ops (benchmarks measuring a cold load, as after a restart). */
export function clearOpCache(): void {
  opCache.clear();
  cachedOps = 0;
}

/** What the cache holds now (tests check its bound). */
export function opCacheSize(): { commits: number; ops: number } {
  return { commits: opCache.size, ops: cachedOps };
}

/** Tunes the cache bound (tests force eviction); returns the previous limits. */
export function configureOpCache(l: Partial<typeof cacheLimits>): typeof cacheLimits {
  const old = { ...cacheLimits };
  Object.assign(cacheLimits, l);
  clearOpCache();
  return old;
}

/**
 * A commit's ops for CommitRecord: the parsed envelopes, or none and why. With the commit's
 * oid the result is cached (and shared: do not change it).
 */
export function commitOps(message: string, oid?: string): Pick<CommitRecord, 'ops' | 'malformed'> {
  if (oid !== undefined) {
    const hit = opCache.get(oid);
    if (hit) {
      opCache.delete(oid);
      opCache.set(oid, hit);
      return hit;
    }
  }
  const r = parseEnvelopes(message);
  const rec = r.ok ? { ops: r.ops } : { ops: [], malformed: r.error };
  shareValues(rec.ops);
  if (oid !== undefined && rec.ops.length <= cacheLimits.maxOps) {
    for (const op of rec.ops) freezeOp(op);
    Object.freeze(rec.ops);
    opCache.set(oid, rec);
    cachedOps += rec.ops.length;
    for (const [k, v] of opCache) {
      if (cachedOps <= cacheLimits.maxOps) break;
      opCache.delete(k);
      cachedOps -= v.ops.length;
    }
  }
  return rec;
}

// JSON.parse makes a new value for every occurrence (V8 shares only short strings), so a Lane
// of 5,000 ops held 5,000 copies of its one actor and of its replica id, its Asks another of
// the actor (posted_by), and 5,000 empty payloads and dependency lists: about 1.5 MiB. What
// ops repeat is kept once here: actors and replica ids across commits (a bounded table), an
// op's time within its commit (a group commit's ops share it), and top-level argument and
// result values equal to the op's actor or empty (one frozen `{}` and `[]`: ops are shared,
// never changed).
const SHARED_MAX = 4096;
const shared = new Map<string, string>();
const EMPTY_OBJECT: Record<string, unknown> = Object.freeze({});
const EMPTY_ARRAY: unknown[] = [];
Object.freeze(EMPTY_ARRAY);

function share(s: string): string {
  const known = shared.get(s);
  if (known !== undefined) return known;
  if (shared.size >= SHARED_MAX) shared.clear();
  shared.set(s, s);
  return s;
}

function shareValues(ops: OpRecord[]): void {
  let time: string | undefined;
  let actor = '';
  let replica: string | undefined;
  for (const op of ops) {
    // The op before usually has the same actor and replica: a comparison, not a lookup.
    if (op.actor === actor) op.actor = actor;
    else actor = op.actor = share(op.actor);
    if (op.replica !== undefined) {
      if (op.replica === replica) op.replica = replica;
      else replica = op.replica = share(op.replica);
    }
    if (op.time === time) op.time = time;
    else time = op.time;
    shareIn(op.args, actor);
    if (op.out) shareIn(op.out, actor);
  }
}

function shareIn(o: Record<string, unknown>, actor: string): void {
  for (const k in o) {
    const v = o[k];
    if (v === actor) o[k] = actor;
    else if (typeof v === 'object' && v !== null) {
      if (Array.isArray(v)) {
        if (v.length === 0) o[k] = EMPTY_ARRAY;
      } else if (isEmptyPlain(v)) o[k] = EMPTY_OBJECT;
    }
  }
}

function isEmptyPlain(v: object): boolean {
  if (Object.getPrototypeOf(v) !== Object.prototype) return false;
  for (const _ in v) return false;
  return true;
}

function freezeOp(op: OpRecord): void {
  Object.freeze(op.args);
  if (op.out) Object.freeze(op.out);
  Object.freeze(op);
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\0-\x1f]/g, ' ');
}
