import { PersonSlots } from './person-slots.js';
import { markUnsigned } from './sync/unsigned.js';
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { cursorCodec } from '../schema/cursor.js';
import { laneId, personOf } from '../schema/ids.js';
import { HELD } from '../schema/limits.js';
import { publicationOrder, type CommitRecord, type LoggedOp, type OpLog } from '../store/index.js';
import { requireCaller, type Caller } from './access.js';
import { listedCorrupt, readLanes, readLanesOrOne, type CorruptEntity } from './lanes.js';
import { historyEntry, rejectionsById, type EntryRejection, type HistoryEntry } from './views.js';
import { CONFIG_REF, laneRef, type ZzRepo } from './zz-repo.js';
import type { LaneState, RejectedOp, RoleSource } from './lane-state.js';
import { isLostClaim } from './lane-guards.js';
import type { Snapshot } from '../store/index.js';
import { laneRejectionsUnder, rolesOf } from './sync/refusals.js';

// Events after a cursor. The cursor records, per Lane, how many ops of its log the caller has
// seen, a digest of that prefix (the ids of its ops) and the revision it was counted at, so it
// survives daemon restarts and needs no global sequence; a long-poll waits for the next commit
// (or notices another process's commit on a short re-check) up to wait_ms.
//
// Hazard this guards: a sync merge folds the remote ops *before* the local-only ones
// (publication order), so "the first n ops" of a Lane can name a different set after a merge.
// When the digest no longer matches, the set the caller saw is recomputed from git (the first
// n ops of the fold at the recorded revision, which the merge keeps as an ancestor) and every
// op not in it is delivered: nothing is skipped and nothing seen is repeated. A cursor whose
// revision is unknown (history rewritten) re-delivers the whole Lane rather than skip.

/** A history entry (views.ts) with its Lane; an event always has its commit's revision. */
export type LaneEvent = HistoryEntry & { lane_id: string; revision: string };

export type LaneEventsArgs = {
  lane_id?: string;
  cursor?: string;
  wait_ms?: number;
  limit?: number;
};

/**
 * A Lane's position: `n` ops seen, `d` the digest of those n op ids, `r` the Lane revision they
 * were counted at. `s` (while paging through a re-based Lane) is the earlier position whose
 * ops are still to be skipped past `n`. `c`: the first 16 hex digits of the refs/zz/config
 * revision whose roles judged them (a later config can newly refuse an op already seen; the
 * caller is told once). A bare number is a cursor from an older server: trusted.
 */
export type LanePosition =
  number | { n: number; d: string; r: string | null; s?: [string, number]; c?: string };
export type Positions = Record<string, LanePosition>;

const REV = /^[0-9a-f]{1,64}$/;
const DIGEST16 = /^[0-9a-f]{16}$/;
const isCount = (n: unknown): n is number => Number.isSafeInteger(n) && (n as number) >= 0;
const isRev = (r: unknown): r is string => typeof r === 'string' && REV.test(r);
/**
 * A position on the wire: a bare count (older servers), or [n, d, r], then [sr, sn] while
 * skipping, then c (the config mark) when the config was known.
 */
type WirePosition =
  | number
  | [number, string, string | null]
  | [number, string, string | null, string]
  | [number, string, string | null, string, number]
  | [number, string, string | null, string, number, string];
type WirePositions = Record<string, WirePosition>;

function isWirePosition(v: unknown): v is WirePosition {
  if (typeof v === 'number') return isCount(v);
  if (!Array.isArray(v) || v.length < 3 || v.length > 6) return false;
  const [n, d, r, ...rest] = v as unknown[];
  if (!isCount(n) || typeof d !== 'string' || !DIGEST16.test(d)) return false;
  if (r !== null && !isRev(r)) return false;
  if (rest.length % 2 === 1) {
    const c = rest.pop();
    if (typeof c !== 'string' || !DIGEST16.test(c)) return false;
  }
  return rest.length === 0 || (isRev(rest[0]) && isCount(rest[1]));
}

// Checked by hand, stopping at the first bad entry: a cursor may hold thousands of entries,
// and a zod record checks (and describes) every one of a forged cursor's before refusing it,
// 0.1-0.3 s on the event loop for one 256 KiB cursor.
const wirePositions = z.custom<WirePositions>((v) => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  for (const [k, p] of Object.entries(v)) {
    if (!laneId.safeParse(k).success || !isWirePosition(p)) return false;
  }
  return true;
});

/**
 * Events cursors are kept by clients across daemon restarts and upgrades (an SSE client's
 * Last-Event-ID, `zz work`), so the bare JSON object servers issued before the cursor codec
 * still reads. A cursor names every Lane it has seen (about 150 characters each): the cap
 * leaves room for well over a thousand Lanes, where 4 KiB, the cap before, held about 30.
 */
export const EVENTS_CURSOR_MAX_LENGTH = 256 * 1024;
const eventsCursor = cursorCodec('lane_events', wirePositions, {
  maxLength: EVENTS_CURSOR_MAX_LENGTH,
  legacy: (json) => {
    const p = wirePositions.safeParse(json);
    return p.success ? p.data : undefined;
  },
});

export function decodeCursor(c: string | undefined, field = 'cursor'): Positions {
  if (c === undefined) return {};
  const out: Positions = {};
  for (const [k, v] of Object.entries(eventsCursor.decode(c, field))) {
    if (typeof v === 'number') {
      out[k] = v;
      continue;
    }
    const pos: Exclude<LanePosition, number> = { n: v[0], d: v[1], r: v[2] };
    if (v.length === 4 || v.length === 6) pos.c = v[v.length - 1] as string;
    if (v.length >= 5) pos.s = [v[3] as string, v[4] as number];
    out[k] = pos;
  }
  return out;
}

export const encodeCursor = (p: Positions): string => {
  const wire: WirePositions = {};
  for (const [k, v] of Object.entries(p)) {
    wire[k] =
      typeof v === 'number'
        ? v
        : ([v.n, v.d, v.r, ...(v.s ?? []), ...(v.c ? [v.c] : [])] as WirePositions[string]);
  }
  return eventsCursor.encode(wire);
};

type Op = { id: string; revision: string };

/** Digests of log prefixes, per log (a snapshot's log never changes: see store/op-log.ts). */
const digests = new WeakMap<OpLog<Op>, Map<number, string>>();
function digest(log: OpLog<Op>, n: number): string {
  let m = digests.get(log);
  if (!m) digests.set(log, (m = new Map()));
  let d = m.get(n);
  if (d === undefined) {
    const h = createHash('sha256');
    for (let i = 0; i < n; i++) h.update(log.at(i)!.id).update('\n');
    d = h.digest('hex').slice(0, 16);
    m.set(n, d);
  }
  return d;
}

/** Op ids of the first n ops of the Lane's fold at `revision` (empty when it is unknown). */
async function seenAt(repo: ZzRepo, laneId: string, revision: string, n: number) {
  let all: CommitRecord[];
  try {
    all = await repo.store.history(laneRef(laneId));
  } catch {
    return new Set<string>();
  }
  const byOid = new Map(all.map((c) => [c.revision, c]));
  if (!byOid.has(revision)) return new Set<string>();
  // Only the ancestors of `revision`: the fold as it stood when the cursor was issued.
  const keep = new Set<string>();
  const stack = [revision];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    if (keep.has(oid)) continue;
    keep.add(oid);
    stack.push(...(byOid.get(oid)?.parents ?? []));
  }
  const order = publicationOrder(
    all.filter((c) => keep.has(c.revision)),
    revision,
  );
  return new Set(order.slice(0, n).map((o) => o.op.id));
}

// Each Lane's refusals by op id, built once per refusal list: a snapshot keeps its OpLog, so
// reads between two writes share one map (rebuilding it per read cost O(refusals) each time).
const reasonsByLog = new WeakMap<OpLog<RejectedOp>, Map<string, EntryRejection>>();
function refusalReasons(rejected: OpLog<RejectedOp>): Map<string, EntryRejection> {
  let m = reasonsByLog.get(rejected);
  if (m === undefined) reasonsByLog.set(rejected, (m = rejectionsById(rejected)));
  return m;
}

function eventOf(
  l: { id: string; log: OpLog<LoggedOp>; why: Map<string, EntryRejection> },
  i: number,
): LaneEvent {
  const op = l.log.at(i)!;
  const r = l.why.get(op.id);
  return {
    lane_id: l.id,
    ...historyEntry(op),
    revision: op.revision,
    ...(r ? { rejected: r } : {}),
  };
}

/** The first 16 hex digits of refs/zz/config's revision (what cursors record), or null. */
async function configMark(repo: ZzRepo): Promise<string | null> {
  try {
    return (await repo.config.read()).revision?.slice(0, 16) ?? null;
  } catch {
    return null; // unreadable config: Lanes stay readable, no config notices
  }
}

/** The roles as of the config revision a cursor recorded; null when it is not in history. */
async function rolesAtMark(repo: ZzRepo, mark: string): Promise<RoleSource | null> {
  let history: CommitRecord[];
  try {
    history = await repo.store.history(CONFIG_REF);
  } catch {
    return null;
  }
  const tip = history.find((c) => c.revision.startsWith(mark));
  return tip ? rolesOf(history, tip.revision) : null;
}

function rejectionNotice(
  laneId: string,
  revision: string,
  op: LoggedOp,
  r: EntryRejection,
): LaneEvent {
  return {
    lane_id: laneId,
    revision,
    op: isLostClaim({ op: op.op, reason: r.reason }) ? 'claim_lost' : 'op_rejected',
    actor: op.actor,
    time: op.time,
    lamport: op.lamport,
    ask_id: r.ask_id ?? null,
    // The same arguments as the claim_lost notice auto-sync emits.
    args: {
      ask_id: r.ask_id ?? null,
      winner: r.winner ?? null,
      claim_op_id: op.id,
      ...(r.reason === 'claim_lost' ? {} : { reason: r.reason }),
      ...(r.closed_by === undefined ? {} : { closed_by: r.closed_by }),
      ...(r.blocked_by === undefined ? {} : { blocked_by: r.blocked_by }),
    },
    out: null,
    rejected: r,
  };
}

async function collect(repo: ZzRepo, args: LaneEventsArgs, pos: Positions, limit: number) {
  // Across Lanes, a Lane that cannot be read is skipped and named in `corrupt` (as lane_list
  // and repo_state do); asked for by name, it is an error. The config whose roles judged them is read
  // around them: if it moved meanwhile, read again (a cursor must name the config its Lanes
  // were judged under, or a notice could be missed).
  let config = await configMark(repo);
  let snaps: Array<{ id: string; snap: Snapshot<LaneState> }>;
  let corrupt: CorruptEntity[];
  for (let attempt = 0; ; attempt++) {
    ({ lanes: snaps, corrupt } = await readLanesOrOne(repo, args.lane_id));
    const after = await configMark(repo);
    if (after === config || attempt >= 2) break;
    config = after;
  }
  const rolesAt = new Map<string, Promise<RoleSource | null>>();
  const lanes: Array<{
    id: string;
    log: OpLog<LoggedOp>;
    revision: string | null;
    /** Indexes into log of the ops not yet seen, in log order. */
    fresh: number[];
    skip?: [string, number];
    why: Map<string, EntryRejection>;
  }> = [];
  /** Ops the caller saw before a merge that the merged fold refused: told once, on re-base. */
  const notices: LaneEvent[] = [];
  for (const { id, snap } of snaps) {
    const log = snap.log;
    const p = pos[id];
    let base = 0;
    let exclude = new Set<string>();
    let skip: [string, number] | undefined;
    if (typeof p === 'number') base = p;
    else if (p !== undefined) {
      if (p.n <= log.length && digest(log, p.n) === p.d) {
        base = p.n;
        skip = p.s;
        if (skip) exclude = await seenAt(repo, id, ...skip);
      } else {
        // Re-based by a merge (or rewritten): skip exactly what was seen, wherever it is now.
        if (p.r !== null) {
          exclude = await seenAt(repo, id, p.r, p.n);
          skip = [p.r, p.n];
        }
        if (p.s) for (const x of await seenAt(repo, id, ...p.s)) exclude.add(x);
      }
    }
    const why = refusalReasons(snap.state.rejected);
    const rebased = p !== undefined && typeof p !== 'number' && base === 0 && exclude.size > 0;
    const fresh: number[] = [];
    for (let i = base; i < log.length; i++) {
      const op = log.at(i)!;
      if (!exclude.has(op.id)) fresh.push(i);
      else if (rebased && why.has(op.id)) {
        notices.push(rejectionNotice(id, snap.revision ?? op.revision, op, why.get(op.id)!));
      }
    }
    // A config change since the caller's cursor (a role revoked, a scope changed) may refuse
    // ops it saw accepted: tell it once, as a re-base does. (A re-based Lane was told above.)
    const mark = typeof p === 'object' && !rebased ? p.c : undefined;
    if (mark && config !== null && mark !== config) {
      if (!rolesAt.has(mark)) rolesAt.set(mark, rolesAtMark(repo, mark));
      const then = await rolesAt.get(mark)!;
      const seenUpTo = exclude.size > 0 ? log.length : base;
      if (then) {
        const before = new Set(
          laneRejectionsUnder(log.slice(0, seenUpTo), then).map((r) => r.op_id),
        );
        for (let i = 0; i < seenUpTo; i++) {
          const op = log.at(i)!;
          if (!(i < base || exclude.has(op.id)) || !why.has(op.id) || before.has(op.id)) continue;
          notices.push(rejectionNotice(id, snap.revision ?? op.revision, op, why.get(op.id)!));
        }
      }
    }
    lanes.push({ id, log, revision: snap.revision, fresh, why, ...(skip ? { skip } : {}) });
  }
  const all: LaneEvent[] = [];
  for (const l of lanes) {
    for (const i of l.fresh) all.push(eventOf(l, i));
  }
  const byTime = (a: LaneEvent, b: LaneEvent) =>
    a.time < b.time ? -1 : a.time > b.time ? 1 : a.lamport - b.lamport;
  all.sort(byTime);
  // Hand out at most `limit` events; each Lane gives its first k fresh ops in log order, so
  // its next position is its (k+1)-th fresh op (seen ops past it are skipped by `s`).
  const taken = new Map<string, number>();
  for (const e of all.slice(0, limit)) taken.set(e.lane_id, (taken.get(e.lane_id) ?? 0) + 1);
  const events: LaneEvent[] = [];
  const next: Positions = { ...pos };
  for (const l of lanes) {
    const k = taken.get(l.id) ?? 0;
    for (const i of l.fresh.slice(0, k)) events.push(eventOf(l, i));
    const c = config !== null ? { c: config } : {};
    if (k === l.fresh.length) {
      next[l.id] = { n: l.log.length, d: digest(l.log, l.log.length), r: l.revision, ...c };
    } else {
      const at = l.fresh[k]!;
      next[l.id] = {
        n: at,
        d: digest(l.log, at),
        r: l.revision,
        ...(l.skip ? { s: l.skip } : {}),
        ...c,
      };
    }
  }
  events.push(...notices);
  events.sort(byTime);
  return { events, next, corrupt };
}

export interface LaneEventsPage {
  events: LaneEvent[];
  next_cursor: string;
  corrupt: CorruptEntity[];
  corrupt_more: number;
}

export async function laneEvents(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LaneEventsArgs,
  signal?: AbortSignal,
): Promise<LaneEventsPage> {
  const caller = requireCaller(callerIn);
  const pos = decodeCursor(args.cursor);
  const limit = args.limit ?? 500;
  const deadline = Date.now() + (args.wait_ms ?? 0);
  const release = (args.wait_ms ?? 0) > 0 ? longPolls.take(repo.key, personOf(caller.actor)) : null;
  try {
    return await eventsAfter(repo, args, pos, limit, deadline, signal);
  } finally {
    release?.();
  }
}

/**
 * Waiting lane_events calls per person and repository, in this process (the daemon): each wakes
 * on every commit and re-reads the Lanes, so one token must not hold hundreds.
 */
const longPolls = new PersonSlots(
  HELD.longPollsPerPerson,
  (person, held) =>
    `${person} and their agents already have ${held} lane_events calls waiting (wait_ms), the most one person may in one repository; wait on fewer at once (one call can follow every Lane) and retry`,
);

/**
 * How often a waiting call looks again with no commit notice: a commit of this daemon (a write,
 * a sync merge) wakes it at once; this only catches a Lane ref moved by another process.
 */
const SAFETY_POLL_MS = 2_000;

async function eventsAfter(
  repo: ZzRepo,
  args: LaneEventsArgs,
  pos: Positions,
  limit: number,
  deadline: number,
  signal: AbortSignal | undefined,
): Promise<LaneEventsPage> {
  for (;;) {
    const { events, next, corrupt } = await collect(repo, args, pos, limit);
    if (events.length > 0 || Date.now() >= deadline || signal?.aborted) {
      return {
        events: await markUnsigned(repo, events),
        next_cursor: encodeCursor(next),
        ...listedCorrupt(corrupt),
      };
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(SAFETY_POLL_MS, Math.max(0, deadline - Date.now())));
      const off = repo.onCommit(() => done());
      const onAbort = () => done();
      signal?.addEventListener('abort', onAbort, { once: true });
      function done() {
        clearTimeout(timer);
        off();
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
    });
  }
}

/** A cursor at every Lane's current tip: events from now on. */
export async function headCursor(repo: ZzRepo): Promise<string> {
  const next: Positions = {};
  const config = await configMark(repo);
  for (const { id, snap } of (await readLanes(repo)).lanes) {
    next[id] = {
      n: snap.log.length,
      d: digest(snap.log, snap.log.length),
      r: snap.revision,
      ...(config !== null ? { c: config } : {}),
    };
  }
  return encodeCursor(next);
}
