import {
  CHANGESET_ID_RE,
  LANE_ID_RE,
  noLockSuffix,
  parseConfigOp,
  parseLadderOp,
  parseLaneOp,
  utf8Bytes,
  type OpParse,
  type OpRecord,
} from '../../schema/index.js';
import { parseOpMessage, ROOT_MESSAGE, type CommitRecord } from '../../store/index.js';
import type { SyncCommit } from './ports.js';

// Validation of what arrives by fetch (DESIGN §7): trailers and the op block parse, every op is
// well-formed, Lamport clocks strictly increase along every edge without huge jumps, merge
// commits carry no ops and the clock one above their parents', and a Lane's ref holds only that
// Lane's ops. Whatever fails is quarantined by ref: kept aside, reported, never folded.

const JSON_MARK = 'zz-ops ';
/** A peer cannot push the clock arbitrarily far ahead (and exhaust it for everyone). */
export const MAX_LAMPORT_JUMP = 100_000;
const MAX_MESSAGE = 8 * 1024 * 1024;
const MAX_OPS_PER_COMMIT = 4096;
/**
 * An op's `out` as JSON, in UTF-8 bytes. What zz records there is a few ids (an answer's 100
 * follow-ups are under 2 KiB); the fold keeps it, and every read of the Lane serialises it.
 * Its depth is bounded where ops are parsed (store/op-message.ts, schema/json-depth.ts).
 */
const MAX_OUT_BYTES = 64 * 1024;
const OP_NAME = /^[a-z][a-z0-9_]{0,63}$/;
const OP_ID = /^[0-9a-z][0-9a-z.-]{7,95}$/;

export const MERGE_OP = 'merge';
export const ROOT_MARK = ROOT_MESSAGE;

export interface ParsedCommit extends CommitRecord {
  merge: boolean;
  /** The Zz-Lamport trailer of a merge commit. */
  mergeLamport: number | null;
  root: boolean;
  problem: string | null;
}

export function formatMergeMessage(summary: string, lamport: number): string {
  return `${summary.replace(/[\0-\x1f]/g, ' ').slice(0, 200)}\n\nZz-Op: ${MERGE_OP}\nZz-Lamport: ${lamport}\n`;
}

/** The typed op parser of the entity on `ref` (none for refs zz does not fold). */
function opParserFor(ref: string | undefined): ((raw: OpRecord) => OpParse<OpRecord>) | null {
  if (ref === undefined) return null;
  if (ref.startsWith('refs/zz/lanes/')) return parseLaneOp;
  if (ref === 'refs/zz/config') return parseConfigOp;
  if (ref === 'refs/zz/ladder') return parseLadderOp;
  return null;
}

/**
 * Parses a zz commit message strictly: a problem is reported, never silently dropped. The op
 * block goes through the store's parseOpMessage with the typed parser of `ref`'s entity (what
 * a fold would refuse is refused here, by commit), plus the stricter checks below.
 */
export function parseZzCommit(c: SyncCommit, ref?: string): ParsedCommit {
  try {
    return parseStrictly(c, ref);
  } catch (e) {
    // Whatever a hand-made commit makes a parser throw is that commit's problem (its ref is
    // quarantined), never an error of the whole sync: one bad ref would stop everyone's sync.
    const why = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    return {
      revision: c.oid,
      parents: c.parents,
      ops: [],
      merge: false,
      mergeLamport: null,
      root: false,
      problem: `the commit could not be read (${why.slice(0, 200)})`,
    };
  }
}

function parseStrictly(c: SyncCommit, ref?: string): ParsedCommit {
  const base = { revision: c.oid, parents: c.parents, ops: [] as OpRecord[] };
  const out: ParsedCommit = {
    ...base,
    merge: false,
    mergeLamport: null,
    root: false,
    problem: null,
  };
  if (c.message.length > MAX_MESSAGE) return { ...out, problem: 'commit message too large' };
  const lines = c.message.split('\n');
  if ((lines[0] ?? '').startsWith(ROOT_MARK) && c.parents.length === 0) {
    return { ...out, root: true };
  }
  const trailers = new Map<string, string[]>();
  let block: string | null = null;
  for (const line of lines) {
    if (line.startsWith(JSON_MARK)) {
      if (block !== null) return { ...out, problem: 'two op blocks in one commit' };
      block = line.slice(JSON_MARK.length);
      continue;
    }
    const m = /^(Zz-[A-Za-z-]+): (.*)$/.exec(line);
    if (m) trailers.set(m[1]!, [...(trailers.get(m[1]!) ?? []), m[2]!]);
  }
  const opTrailers = trailers.get('Zz-Op') ?? [];
  if (opTrailers.length === 1 && opTrailers[0] === MERGE_OP && block === null) {
    const lam = Number(trailers.get('Zz-Lamport')?.[0]);
    if (!Number.isSafeInteger(lam) || lam < 1) return { ...out, problem: 'merge without a clock' };
    return { ...out, merge: true, mergeLamport: lam };
  }
  if (block === null) return { ...out, problem: 'no op block (zz-ops) in the commit message' };
  const typed = opParserFor(ref);
  const parsed = typed ? parseOpMessage(c.message, typed) : parseOpMessage(c.message);
  if (!parsed.ok) return { ...out, problem: parsed.error.slice(0, 500) };
  if (parsed.ops.length === 0) return { ...out, problem: 'the op block holds no ops' };
  if (parsed.ops.length > MAX_OPS_PER_COMMIT) {
    return { ...out, problem: 'too many ops in one commit' };
  }
  const ops: OpRecord[] = [];
  for (const op of parsed.ops) {
    const problem = opProblem(op);
    if (problem) return { ...out, problem };
    ops.push(op);
  }
  // The trailers are for `git log` readers, but they must agree with the block they summarise.
  if (opTrailers.length !== ops.length || ops.some((o, i) => opTrailers[i] !== o.op)) {
    return { ...out, ops, problem: 'Zz-Op trailers do not match the op block' };
  }
  return { ...out, ops };
}

function opProblem(raw: unknown): string | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'an op is not an object';
  const o = raw as Record<string, unknown>;
  if (typeof o.op !== 'string' || !OP_NAME.test(o.op)) return 'an op has no valid name';
  if (typeof o.id !== 'string' || !OP_ID.test(o.id)) return `op ${o.op} has no valid id`;
  if (typeof o.actor !== 'string' || o.actor.length === 0 || o.actor.length > 320) {
    return `op ${o.op} has no valid actor`;
  }
  if (typeof o.lamport !== 'number' || !Number.isSafeInteger(o.lamport) || o.lamport < 1) {
    return `op ${o.op} has no valid Lamport clock`;
  }
  if (typeof o.time !== 'string' || Number.isNaN(Date.parse(o.time))) {
    return `op ${o.op} has no valid time`;
  }
  if (!o.args || typeof o.args !== 'object' || Array.isArray(o.args)) {
    return `op ${o.op} has no arguments object`;
  }
  if (o.out !== undefined && (!o.out || typeof o.out !== 'object' || Array.isArray(o.out))) {
    return `op ${o.op} has a malformed out`;
  }
  if (o.out !== undefined && utf8Bytes(JSON.stringify(o.out)) > MAX_OUT_BYTES) {
    return `op ${o.op} has an out larger than ${MAX_OUT_BYTES / 1024} KiB`;
  }
  for (const k of ['key', 'request_hash', 'replica'] as const) {
    if (o[k] !== undefined && (typeof o[k] !== 'string' || (o[k] as string).length > 256)) {
      return `op ${o.op} has a malformed ${k}`;
    }
  }
  return null;
}

const LANES = 'refs/zz/lanes/';
const CHANGESETS = 'refs/zz/changesets/';

/**
 * Why `ref` is not one zz keeps (DESIGN §2's layout: refs/zz/config, refs/zz/ladder,
 * refs/zz/lanes/<lane id>, refs/zz/changesets/<changeset id>), or null. Sync adopts nothing
 * else from a remote: a name outside it is no entity any read can fold, and kept locally it
 * would show as corrupt, or block the Lane id it squats on, for good.
 */
export function layoutProblem(ref: string): string | null {
  if (ref === 'refs/zz/config' || ref === 'refs/zz/ladder') return null;
  if (ref.startsWith(LANES)) {
    const id = ref.slice(LANES.length);
    return LANE_ID_RE.test(id) && noLockSuffix(id) ? null : 'not a valid Lane id';
  }
  if (ref.startsWith(CHANGESETS)) {
    return CHANGESET_ID_RE.test(ref.slice(CHANGESETS.length)) ? null : 'not a changeset id';
  }
  return 'not a ref zz keeps (config, ladder, lanes/<id>, changesets/cs-<id>)';
}

export interface Invalid {
  commit: string;
  reason: string;
}

/**
 * Checks the commits that arrived for `ref`. `all` is the whole history of the incoming tip
 * (parents first), `incoming` the oids not already held locally: only those are judged, but
 * clocks are checked against every parent.
 */
export function validateIncoming(
  ref: string,
  all: readonly ParsedCommit[],
  incoming: ReadonlySet<string>,
): Invalid | null {
  const lamport = new Map<string, number>();
  const laneId = ref.startsWith('refs/zz/lanes/') ? ref.slice('refs/zz/lanes/'.length) : null;
  for (const c of all) {
    const parentLam = Math.max(0, ...c.parents.map((p) => lamport.get(p) ?? 0));
    const judged = incoming.has(c.revision);
    const fail = (reason: string): Invalid => ({ commit: c.revision, reason });
    if (judged && c.problem) return fail(c.problem);
    if (c.root || c.problem) {
      lamport.set(c.revision, parentLam);
      continue;
    }
    if (c.merge) {
      if (judged && c.parents.length < 2) return fail('a merge commit with one parent');
      if (judged && c.mergeLamport !== parentLam + 1) {
        return fail(`merge clock ${c.mergeLamport} is not one above its parents' ${parentLam}`);
      }
      lamport.set(c.revision, c.mergeLamport ?? parentLam + 1);
      continue;
    }
    if (judged) {
      if (c.parents.length > 1) return fail('a commit with several parents carries ops');
      let prev = parentLam;
      for (const op of c.ops) {
        if (op.lamport <= prev) {
          return fail(`op ${op.id} has clock ${op.lamport}, not above ${prev}`);
        }
        if (op.lamport > parentLam + MAX_LAMPORT_JUMP + c.ops.length) {
          return fail(`op ${op.id} jumps the clock from ${parentLam} to ${op.lamport}`);
        }
        prev = op.lamport;
        if (laneId !== null) {
          const named = op.args.lane_id;
          if (named !== undefined && named !== laneId) {
            return fail(`op ${op.id} names lane ${String(named).slice(0, 80)} on ${ref}`);
          }
        }
      }
    }
    lamport.set(c.revision, Math.max(parentLam, ...c.ops.map((o) => o.lamport)));
  }
  // An entity is its ops: a history without one (a lone root commit, nothing at all) is no
  // Lane, config or Ladder, and adopted it would read as corrupt everywhere.
  const tip = all[all.length - 1];
  if (!all.some((c) => c.ops.length > 0)) {
    return { commit: tip?.revision ?? '', reason: 'the history holds no ops' };
  }
  return null;
}
