import { rootedNowOf, type RootedState } from './rooted-roles.js';
import { rootedCoordinators } from './access.js';
import { ZzError } from '../errors.js';
import type { AskDoc, LaneDoc } from '../schema/lane.js';
import { OpLog, type LoggedOp, type OpRecord } from '../store/index.js';
import type { LaneState, RejectedOp } from './lane-state-types.js';
import { sealJson } from './json-text.js';
import { jsonBytes, knownTotals, type Seq } from './paging.js';

// What callers see: stored documents plus what is derived at read time (blocked, lease
// expiry) — never stored, because it depends on other Asks and on the clock.

export type BlockedBy = {
  ask_id: string;
  state: AskDoc['state'] | 'missing';
  outcome: string | null;
};

export type AskView = Omit<AskDoc, 'origin'> & {
  blocked: boolean;
  blocked_by: BlockedBy[];
  origin: AskDoc['origin'];
  lease_expired: boolean;
};

export type LaneView = LaneDoc & {
  revision: string | null;
  /** The coordinators whose role an owner stands behind (rooted-roles.ts). */
  rooted_coordinators: string[];
  /** The maintainers whose role an owner stands behind: only their reviews let code land. */
  rooted_maintainers: string[];
};

export const isResolved = (a: AskDoc | undefined): boolean =>
  !!a &&
  a.state === 'answered' &&
  (a.answer?.outcome === 'complete' || a.answer?.outcome === 'grant');

/**
 * When a claimed Ask's lease ends, in ms: Infinity when it has no end or one that does not
 * parse (such a claim never runs out, as in leaseExpired()); -Infinity when not claimed.
 */
export function leaseEndMs(a: AskDoc): number {
  if (a.state !== 'claimed') return -Infinity;
  const t = a.lease_expires_at === null ? NaN : Date.parse(a.lease_expires_at);
  return Number.isNaN(t) ? Infinity : t;
}

export function leaseExpired(a: AskDoc, now: Date): boolean {
  return (
    a.state === 'claimed' &&
    a.lease_expires_at !== null &&
    Date.parse(a.lease_expires_at) <= now.getTime()
  );
}

/** The one "caller holds a live claim" check: claimed by `actor`, lease not run out. */
export function holdsLiveClaim(a: AskDoc, actor: string, now: Date): boolean {
  return a.state === 'claimed' && a.holder === actor && !leaseExpired(a, now);
}

/**
 * The one "caller holds a live claim" refusal, saying what to do: an Ask held by someone else is
 * forbidden (naming the holder), a lease that ran out is a conflict (claim it again), and an
 * Ask nobody holds answers `unclaimed` (forbidden for answers, as the API has always said;
 * conflict for the Ladder's rung writes, as it has said). `what` completes "before you … it".
 */
export function assertLiveClaim(
  a: AskDoc,
  actor: string,
  now: Date,
  what: string,
  unclaimed: 'forbidden' | 'conflict' = 'forbidden',
): void {
  if (a.state !== 'claimed' || a.holder === null) {
    throw new ZzError(unclaimed, `ask ${a.ask_id} is not claimed; claim it before you ${what} it`);
  }
  if (a.holder !== actor) {
    throw new ZzError(
      'forbidden',
      `ask ${a.ask_id} is held by ${a.holder}; only the holder may ${what} it`,
      { holder: a.holder },
    );
  }
  if (leaseExpired(a, now)) {
    throw new ZzError(
      'conflict',
      `your lease on ask ${a.ask_id} expired at ${a.lease_expires_at}; claim it again before you ${what} it`,
    );
  }
}

export function blockedBy(s: LaneState, a: AskDoc): BlockedBy[] {
  const out: BlockedBy[] = [];
  for (const d of a.depends_on) {
    const dep = s.asks.get(d);
    if (!isResolved(dep))
      out.push({
        ask_id: d,
        state: dep?.state ?? 'missing',
        outcome: dep?.answer?.outcome ?? null,
      });
  }
  return out;
}

// An Ask's view depends on the clock only while it is claimed, and on other Asks only through
// its dependencies. The others are derived once and shared, frozen, between reads: a view of an
// Ask without dependencies for as long as that document lives (a write replaces only the Asks
// it changes), one with dependencies once per state (states never change once published).
const viewOfDoc = new WeakMap<AskDoc, AskView>();
const viewInState = new WeakMap<LaneState, Map<AskDoc, AskView>>();

/** askView of many Asks of one state, as a long Lane is read again and again. */
export function askViews(s: LaneState, asks: readonly AskDoc[], now: Date): AskView[] {
  return asks.map((a) => sharedView(s, a, now));
}

function sharedView(s: LaneState, a: AskDoc, now: Date): AskView {
  if (a.state === 'claimed') return askView(s, a, now);
  let cache: WeakMap<AskDoc, AskView> | Map<AskDoc, AskView> = viewOfDoc;
  if (a.depends_on.length > 0) {
    let inState = viewInState.get(s);
    if (!inState) viewInState.set(s, (inState = new Map()));
    cache = inState;
  }
  let v = cache.get(a);
  if (!v) cache.set(a, (v = sealJson(Object.freeze(askView(s, a, now)))));
  return v;
}

// A state's Asks in the order they were posted, as a list read by position from the state's
// own CowMap (never copied: a write makes a new state that differs from the last one read in a
// few Asks, and a copy of the whole Lane per state was young garbage that lived as long as the
// state and survived the scavenges of a writer storm, issue 17). What a page needs of an Ask is
// kept by document, not by position: its JSON size (sizeOfDoc) and its view (sharedView), so
// the next state finds them for every Ask it did not change. Sizes are measured as pages reach
// them (a page of 200 sizes 200 Asks, not the Lane). One list per state, so that pageEnd's
// running totals for it are kept between reads of that state.
const askListOfState = new WeakMap<LaneState, Seq<AskDoc>>();
const sizeOfDoc = new WeakMap<AskDoc, number>();

function docBytes(a: AskDoc): number {
  let n = sizeOfDoc.get(a);
  if (n === undefined) sizeOfDoc.set(a, (n = jsonBytes(a)));
  return n;
}

/** Every Ask of `s` in the order they were posted; the same list for the same state. */
export function asksOf(s: LaneState): Seq<AskDoc> {
  let list = askListOfState.get(s);
  if (!list) {
    const asks = s.asks;
    const length = asks.size;
    // A published state's maps never change (writes go to a fork): neither does this list.
    list = { length, at: (i) => (i < length ? asks.at(i) : undefined) };
    knownTotals(list, [0], (i) => docBytes(asks.at(i)!));
    askListOfState.set(s, list);
  }
  return list;
}

/** askViews of asksOf(s)[start, end). */
export function askPageViews(s: LaneState, start: number, end: number, now: Date): AskView[] {
  const out: AskView[] = [];
  for (let i = Math.max(0, start); i < end && i < s.asks.size; i++) {
    out.push(sharedView(s, s.asks.at(i)!, now));
  }
  return out;
}

// No blockers: one shared, frozen array (views are read, never changed; 5,000 Asks made 5,000
// empty arrays).
const NO_BLOCKERS: BlockedBy[] = [];
Object.freeze(NO_BLOCKERS);

export function askView(s: LaneState, a: AskDoc, now: Date): AskView {
  const bb = a.depends_on.length === 0 ? NO_BLOCKERS : blockedBy(s, a);
  const expired = leaseExpired(a, now);
  // Object literals of fixed shape, keys in the order `{ ...a, lease_expired, blocked,
  // blocked_by }` gave (responses keep their JSON): in V8 a spread that adds keys to an
  // object of this many made a hidden class per result — 2.7 MiB and most of the time of a
  // cold lane_get's 5,000 views. An Ask that was cancelled has one key more.
  if (a.cancelled === undefined) {
    return {
      ask_id: a.ask_id,
      lane_id: a.lane_id,
      kind: a.kind,
      title: a.title,
      body: a.body,
      priority: a.priority,
      depends_on: a.depends_on,
      state: expired ? 'open' : a.state,
      holder: expired ? null : a.holder,
      lease_expires_at: expired ? null : a.lease_expires_at,
      answer: a.answer,
      posted_by: a.posted_by,
      posted_at: a.posted_at,
      payload: a.payload,
      origin: a.origin,
      lease_expired: expired,
      blocked: bb.length > 0,
      blocked_by: bb,
    };
  }
  return {
    ask_id: a.ask_id,
    lane_id: a.lane_id,
    kind: a.kind,
    title: a.title,
    body: a.body,
    priority: a.priority,
    depends_on: a.depends_on,
    state: expired ? 'open' : a.state,
    holder: expired ? null : a.holder,
    lease_expires_at: expired ? null : a.lease_expires_at,
    answer: a.answer,
    posted_by: a.posted_by,
    posted_at: a.posted_at,
    payload: a.payload,
    origin: a.origin,
    cancelled: a.cancelled,
    lease_expired: expired,
    blocked: bb.length > 0,
    blocked_by: bb,
  };
}

/** `rooted`: the Lane's state, whose rooted roles are listed as they count now. */
export function laneView(lane: LaneDoc, revision: string | null, rooted: RootedState): LaneView {
  return {
    ...lane,
    revision,
    rooted_coordinators: rootedCoordinatorsOf(lane, rooted),
    rooted_maintainers: rootedNowOf(rooted, 'maintainers'),
  };
}

/**
 * Whom the daemon lets land code and write rungs in the Lane now (access.ts rootedCoordinators,
 * the very predicate commit_changeset and ladder_write_rung check). A fold that cannot see the
 * config (roles null) trusts owner-derived rights, as the guards do: its rooted roles, listed.
 */
function rootedCoordinatorsOf(lane: LaneDoc, s: RootedState): string[] {
  const config = s.roles?.now() ?? null;
  return config === null
    ? rootedNowOf(s, 'coordinators')
    : rootedCoordinators({ lane, rooted: s.rooted }, config);
}

export type HistoryEntry = {
  revision: string | null;
  op: string;
  actor: string;
  time: string;
  lamport: number;
  ask_id: string | null;
  args: Record<string, unknown>;
  out: Record<string, unknown> | null;
  /** Set when the guarded fold refused this op (after a sync merge): why, and who won. */
  rejected?: EntryRejection;
  /** Set when the op came from another replica unsigned by its actor (sync/unsigned.ts). */
  unsigned?: true;
};

export type EntryRejection = Omit<RejectedOp, 'op_id' | 'op' | 'actor'>;

/** op id → why the fold refused it, for marking history entries and events. */
export function rejectionsById(rejected: Iterable<RejectedOp>): Map<string, EntryRejection> {
  return new Map(Array.from(rejected, ({ op_id: id, op: _o, actor: _a, ...why }) => [id, why]));
}

/**
 * The op log as callers read it. A lease that ran out is not an op (nothing wrote it), so an
 * `ask_lease_expired` entry is derived where a claim's lease passed before anything else
 * happened to that Ask. A list that shares its entries with the log's derived history (see
 * HistoryList): never an array copied per log or per view.
 */
export function historyView(
  log: Seq<LoggedOp>,
  now: Date,
  rejected: OpLog<RejectedOp> = NO_REFUSALS,
): Seq<HistoryEntry> {
  const h = derivedHistory(log);
  // The view changes only when another running lease passes: until then (and unless the clock
  // went back) the last one is served again, the same list.
  const t = now.getTime();
  const last = viewCache.get(h);
  // By identity: a fold that refuses an op replaces its state's `rejected` by a longer OpLog
  // (lane-state.ts), and one that refuses nothing hands the same one on.
  if (last && last.rejected === rejected && last.from <= t && t < last.until) return last.out;
  const { entries, sizes, n } = h;
  let marked: Map<number, HistoryEntry> | null = null;
  if (rejected.length > 0) {
    // Entries are shared per log; the marks are added to copies (few ops are ever refused).
    marked = new Map();
    const why = rejectionsById(rejected);
    let j = 0;
    for (let i = 0; i < n && j < log.length; i++) {
      const e = entries[i]!;
      if (e.revision === null) continue; // a derived ask_lease_expired entry
      const r = why.get(log.at(j++)!.id);
      if (r) marked.set(i, { ...e, rejected: r });
    }
  }
  const tail: HistoryEntry[] = [];
  let until = Infinity;
  for (const [askId, l] of h.open) {
    if (l.untilMs <= t) tail.push(expiredEntry(askId, l));
    else until = Math.min(until, l.untilMs);
  }
  const out = new HistoryList(entries, n, marked, tail);
  viewCache.set(h, { rejected, from: t, until, out });
  // Sizes measured once per derived entry, as pages reach them; entries marked refused (copies)
  // and derived lease expiries are measured as they are.
  knownTotals(out, [0], (i) =>
    i < n && !marked?.has(i) ? (sizes[i] ??= jsonBytes(entries[i])) : jsonBytes(out.at(i)),
  );
  return out;
}

/**
 * A view of a log's history: the first `n` entries of a shared, append-only array (positions
 * below n never change, see derivedHistory), with refused ops' entries replaced by marked
 * copies, then the leases that have run out since the log's last op.
 */
class HistoryList implements Seq<HistoryEntry> {
  readonly length: number;
  constructor(
    private readonly entries: readonly HistoryEntry[],
    private readonly n: number,
    private readonly marked: ReadonlyMap<number, HistoryEntry> | null,
    private readonly tail: readonly HistoryEntry[],
  ) {
    this.length = n + tail.length;
  }

  at(i: number): HistoryEntry | undefined {
    if (!(i >= 0 && i < this.length)) return undefined;
    if (i >= this.n) return this.tail[i - this.n];
    return this.marked?.get(i) ?? this.entries[i];
  }
}

/** A log with no refused ops (one, shared: historyView's cache compares by identity). */
const NO_REFUSALS = new OpLog<RejectedOp>();

const viewCache = new WeakMap<
  Derived,
  { rejected: OpLog<RejectedOp>; from: number; until: number; out: HistoryList }
>();

type OpenLease = { holder: string; until: string; untilMs: number };
type Derived = {
  log: Seq<LoggedOp>;
  /**
   * The derived entries of `log` are entries[0, n). The array is shared with the Derived of
   * the logs this one extends and of the next log that extends it (append-only: see below).
   */
  entries: HistoryEntry[];
  n: number;
  /** JSON sizes of entries (see paging.ts), by position, measured as pages reach them. */
  sizes: Array<number | undefined>;
  open: Map<string, OpenLease>;
};

// A published log never changes, and the next one (after a commit) is the same ops plus new
// ones: everything but the leases still running at its end is derived once per log, and a
// log that extends the last one derived for its Lane (keyed by its first op) only derives the
// new ops, appending their entries to the same arrays (as CowMap shares its keys: cow-map.ts).
// Copying them per log was young garbage the size of the whole history for every group commit
// a reader saw, alive until the next one (issue 17).
// Hazard: only the Derived whose n is the arrays' length (the newest) may append; positions
// below any Derived's n are never written again, except sizes[i], a memo of entries[i] that
// is the same in every Derived holding i. An older log derived again (a slow reader) starts a
// chain of its own arrays.
const historyCache = new WeakMap<LoggedOp, Derived>();

function derivedHistory(log: Seq<LoggedOp>): Derived {
  const first = log.at(0);
  if (!first) return { log, entries: [], n: 0, sizes: [], open: new Map() };
  const prev = historyCache.get(first);
  if (prev?.log === log) return prev;
  const m = prev?.log.length ?? 0;
  const extends_ = !!prev && m <= log.length && log.at(m - 1) === prev.log.at(m - 1);
  let d: Derived;
  if (!extends_) d = { log, entries: [], n: 0, sizes: [], open: new Map() };
  else if (prev.n === prev.entries.length) {
    d = { log, entries: prev.entries, n: prev.n, sizes: prev.sizes, open: new Map(prev.open) };
  } else {
    // Another log already extended prev (two logs from one prefix): copy prev's part.
    const entries = prev.entries.slice(0, prev.n);
    d = { log, entries, n: prev.n, sizes: prev.sizes.slice(0, prev.n), open: new Map(prev.open) };
  }
  deriveInto(d, extends_ ? m : 0);
  historyCache.set(first, d);
  return d;
}

function expiredEntry(askId: string, l: OpenLease): HistoryEntry {
  return {
    revision: null,
    op: 'ask_lease_expired',
    actor: l.holder,
    time: l.until,
    lamport: 0,
    ask_id: askId,
    args: { ask_id: askId },
    out: null,
  };
}

function deriveInto(d: Derived, from: number): void {
  const { log, entries: out, sizes, open } = d;
  const push = (e: HistoryEntry): void => {
    out.push(e);
    sizes.push(undefined);
    d.n++;
  };
  for (let i = from; i < log.length; i++) {
    const op = log.at(i)!;
    const askId = opAskId(op);
    const l = askId === null ? undefined : open.get(askId);
    if (l) {
      if (l.untilMs <= Date.parse(op.time)) push(expiredEntry(askId!, l));
      open.delete(askId!);
    }
    // Shared by every view of this log and the logs that extend it, never changed: sealed.
    push(sealJson(historyEntry(op, askId)));
    if (op.op === 'ask_claim' && askId && typeof op.out?.lease_expires_at === 'string') {
      const until = op.out.lease_expires_at;
      open.set(askId, { holder: op.actor, until, untilMs: Date.parse(until) });
    }
  }
}

/** The Ask an op is about: named in its arguments, or created by it. */
export function opAskId(op: OpRecord): string | null {
  if (typeof op.args.ask_id === 'string') return op.args.ask_id;
  return typeof op.out?.ask_id === 'string' ? op.out.ask_id : null;
}

export function historyEntry(op: LoggedOp, askId = opAskId(op)): HistoryEntry {
  return {
    revision: op.revision,
    op: op.op,
    actor: op.actor,
    time: op.time,
    lamport: op.lamport,
    ask_id: askId,
    args: op.args,
    out: op.out ?? null,
  };
}
