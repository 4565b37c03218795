import { foreignRevisions, markUnsignedPage } from './sync/unsigned.js';
import { createHash } from 'node:crypto';
import { ZzError } from '../errors.js';
import type { LaneDoc, Scope } from '../schema/lane.js';
import { cursorCodec, offsetCursor, type CursorCodec } from '../schema/cursor.js';
import { laneId } from '../schema/ids.js';
import { LIMITS, PAGE } from '../schema/limits.js';
import type { LaneOp } from '../schema/lane-ops.js';
import { randomHex, type Snapshot } from '../store/index.js';
import { assertSelf, isCoordinator, isOwner, requireCaller, type Caller } from './access.js';
import type { LaneState } from './lane-state.js';
import {
  leaseEndMs,
  askPageViews,
  asksOf,
  historyView,
  laneView,
  type AskView,
  type HistoryEntry,
  type LaneView,
} from './views.js';
import type { LaneOpSpec } from './lane-state.js';
import { cmp } from './ask-order.js';
import { firstOf, pageEnd } from './paging.js';
import { KeyedQueue } from '../local/index.js';
import { writeOp, type WriteMeta, type WriteOpts } from './write-op.js';
import { laneRef, type ZzRepo } from './zz-repo.js';

// Lane use cases: propose, read, list, relate, grant. Each write is one Entity mutation whose
// decide() re-checks every rule against the state it will apply to.

export type { WriteMeta, WriteOpts } from './write-op.js';

/**
 * A Lane id that names no Lane, with where the real ones are listed: a misspelt `--lane-id`
 * said only that it did not exist. The tool's name serves HTTP and MCP callers, the command
 * the CLI's.
 */
export const noSuchLane = (laneId: string): ZzError =>
  new ZzError(
    'not_found',
    `lane ${laneId} does not exist; lane_list (zz lane list) names the Lanes there are`,
  );

export async function readLane(
  repo: ZzRepo,
  laneId: string,
): Promise<Snapshot<LaneState> & { lane: NonNullable<LaneState['lane']> }> {
  const snap = await repo.lane(laneId).read();
  if (!snap.state.lane) throw noSuchLane(laneId);
  return { ...snap, lane: snap.state.lane };
}

export type LaneProposeArgs = WriteOpts & {
  lane_id?: string;
  title: string;
  description?: string;
  maintainers?: string[];
  related_lanes?: string[];
  ask_kinds?: Record<string, Scope>;
  from?: string;
};

/** Lane proposals of one repository, one at a time in this process (see lanePropose). */
const proposals = new KeyedQueue();

export async function lanePropose(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LaneProposeArgs,
): Promise<{ lane: LaneView } & WriteMeta> {
  // The id derives from the caller, so it is needed before writeOp checks the rest.
  const caller = requireCaller(callerIn);
  // Without a lane_id, a retry with the same key must land on the same Lane: derive the id.
  const laneId =
    args.lane_id ??
    (args.idempotency_key
      ? 'lane-' +
        createHash('sha256')
          .update(`${caller.actor}\0${args.idempotency_key}`)
          .digest('hex')
          .slice(0, 10)
      : 'lane-' + randomHex(5));
  const {
    lane_id: _l,
    actor: _a,
    from: _f,
    idempotency_key: _k,
    expected_revision: _r,
    ...rest
  } = args;
  // One proposal at a time per repository in this process, from the cap check to its commit
  // (each Lane is its own ref with its own queue, so nothing else orders them): proposals
  // racing at the cap each counted the Lanes before any landed, and all were made.
  const r = await proposals.run(repo.git?.gitdir ?? `memory:${repo.key}`, () =>
    writeOp(repo, caller, repo.lane(laneId), args, {
      tool: 'lane_propose',
      request: rest,
      ...(args.from === undefined ? {} : { from: args.from }),
      check: async () => {
        // LIMITS.lanesPerRepo, local only (see limits.ts), under `proposals`. Hazard: other
        // processes writing to this repository (a second daemon, a CLI without one) are not held
        // off, and may each pass it at the cap. A retry of a proposal that made its Lane (the same
        // idempotency key) replays it rather than meet the cap.
        const ids = await repo.laneIds();
        if (ids.length >= LIMITS.lanesPerRepo && !ids.includes(laneId)) {
          throw new ZzError(
            'precondition_failed',
            `the repository holds ${ids.length} Lanes and takes at most ${LIMITS.lanesPerRepo}; post in an existing Lane (lane_list)`,
            { limit: LIMITS.lanesPerRepo },
          );
        }
        for (const rel of args.related_lanes ?? []) {
          if (!(await repo.lane(rel).read()).state.lane)
            throw new ZzError('not_found', `related lane ${rel} does not exist`);
        }
      },
      decide: (s): LaneOpSpec => {
        if (s.lane)
          throw new ZzError('conflict', `lane ${laneId} already exists`, { lane_id: laneId });
        return {
          op: 'lane_propose',
          summary: `lane_propose ${laneId}: ${args.title}`,
          args: {
            lane_id: laneId,
            title: args.title,
            description: args.description ?? '',
            coordinators: [caller.actor],
            // With no maintainers named, the proposer reviews too: a Lane nobody may review
            // would stall every changeset.
            maintainers: args.maintainers ?? [caller.actor],
            related_lanes: args.related_lanes ?? [],
            ask_kinds: args.ask_kinds ?? {},
          },
        };
      },
      result: (s) => s,
    }),
  );
  return {
    lane: laneView(r.result.lane!, r.revision, r.result),
    revision: r.revision,
    replayed: r.replayed,
  };
}

export type LaneGetArgs = {
  lane_id: string;
  asks_limit?: number;
  asks_offset?: number;
  asks_cursor?: string;
  history_limit?: number;
  history_offset?: number;
  history_cursor?: string;
  include_history?: boolean;
};

export type LaneGetResult = {
  lane: LaneView;
  asks: AskView[];
  history: HistoryEntry[];
  next_asks_offset: number | null;
  next_history_offset: number | null;
  next_asks_cursor: string | null;
  next_history_cursor: string | null;
};

const asksCursor = offsetCursor('lane_asks');
const historyCursor = offsetCursor('lane_history');

function startOf(
  offset: number | undefined,
  cursor: string | undefined,
  codec: CursorCodec<number>,
  field: string,
): number {
  if (offset !== undefined && cursor !== undefined) {
    throw new ZzError('invalid_argument', `give ${field}_offset or ${field}_cursor, not both`);
  }
  if (offset !== undefined) return offset;
  return cursor === undefined ? 0 : codec.decode(cursor, `${field}_cursor`);
}

/**
 * One Lane, its Asks and its history, each paged: `*_limit` items (default PAGE.defaultLimit)
 * from `*_offset` (or the matching cursor), cut short at about PAGE.maxBytes of JSON;
 * `next_*_offset` continues. Without a default, a plain lane_get of a 5,000-Ask Lane answered
 * every Ask and history entry: 5 MB over HTTP, 14 MB as one MCP tool result (an agent's whole
 * context), 10,000 lines from `zz lane get`.
 */
export async function laneGet(
  repo: ZzRepo,
  _caller: Caller | null,
  args: LaneGetArgs,
): Promise<LaneGetResult> {
  const snap = await readLane(repo, args.lane_id);
  const now = repo.clock();
  const all = asksOf(snap.state);
  const aStart = startOf(args.asks_offset, args.asks_cursor, asksCursor, 'asks');
  const aEnd = pageEnd(all, aStart, args.asks_limit ?? PAGE.defaultLimit);
  const asks = askPageViews(snap.state, aStart, aEnd, now);
  const fullHistory =
    args.include_history === false ? [] : historyView(snap.log, now, snap.state.rejected);
  const hStart = startOf(args.history_offset, args.history_cursor, historyCursor, 'history');
  const hEnd = pageEnd(fullHistory, hStart, args.history_limit ?? PAGE.defaultLimit);
  const nextAsks = aEnd < all.length ? aEnd : null;
  const nextHistory = hEnd < fullHistory.length ? hEnd : null;
  return {
    lane: laneView(snap.lane, snap.revision, snap.state),
    asks,
    history: await markUnsignedPage(
      repo,
      fullHistory,
      hStart,
      hEnd,
      foreignOf(snap.log, repo.store.replica),
    ),
    next_asks_offset: nextAsks,
    next_history_offset: nextHistory,
    next_asks_cursor: nextAsks === null ? null : asksCursor.encode(nextAsks),
    next_history_cursor: nextHistory === null ? null : historyCursor.encode(nextHistory),
  };
}

// A published log never changes: which of its commits hold another replica's ops is worked out
// once per log (usually none, and then no commit is read to mark history entries unsigned).
const foreignByLog = new WeakMap<object, ReadonlySet<string>>();

export function foreignOf(
  log: Snapshot<LaneState>['log'],
  local: string | undefined,
): ReadonlySet<string> {
  let f = foreignByLog.get(log);
  if (!f) foreignByLog.set(log, (f = foreignRevisions(log, local)));
  return f;
}

export type LaneSummary = LaneView & {
  counts: { open: number; claimed: number; answered: number; cancelled: number; total: number };
};

// Counts by stored state depend only on the revision; only claimed Asks need the clock. Their
// lease ends are parsed once per state and kept sorted: a lane_list under load counted the
// expired leases of hundreds of claimed Asks with a Date.parse each, on every call (4% of the
// daemon's time in a write storm).
const countCache = new WeakMap<
  LaneState,
  {
    open: number;
    claimed: number;
    /** Lease ends (ms) of the claimed Asks that have one, ascending. */
    leaseEnds: Float64Array;
    answered: number;
    cancelled: number;
  }
>();

function laneCounts(s: LaneState, now: Date): LaneSummary['counts'] {
  let c = countCache.get(s);
  if (!c) {
    let open = 0;
    let answered = 0;
    let cancelled = 0;
    let claimed = 0;
    const ends: number[] = [];
    // forEach, not for-of over values(): no iterator result per Ask.
    s.asks.forEach((a) => {
      if (a.state === 'open') open++;
      else if (a.state === 'answered') answered++;
      else if (a.state === 'cancelled') cancelled++;
      else {
        claimed++;
        const end = leaseEndMs(a); // Infinity: a lease that never runs out
        if (end !== Infinity) ends.push(end);
      }
    });
    const leaseEnds = Float64Array.from(ends).sort();
    c = { open, claimed, leaseEnds, answered, cancelled };
    countCache.set(s, c);
  }
  const expired = countAtMost(c.leaseEnds, now.getTime());
  return {
    open: c.open + expired,
    claimed: c.claimed - expired,
    answered: c.answered,
    cancelled: c.cancelled,
    total: s.asks.size,
  };
}

/** How many of the ascending `xs` are ≤ t. */
function countAtMost(xs: Float64Array, t: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (xs[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** An entity that cannot be read, reported by its ref instead of failing every read. */
export type CorruptEntity = { ref: string; error: string };

/**
 * What an answer says of unreadable Lane refs: the first PAGE.maxListedProblems (readLanes
 * sorts them by ref) and how many more.
 */
export function listedCorrupt(corrupt: readonly CorruptEntity[]): {
  corrupt: CorruptEntity[];
  corrupt_more: number;
} {
  const { shown, more } = firstOf(corrupt);
  return { corrupt: shown, corrupt_more: more };
}

/**
 * Every Lane that can be read, and every ref under refs/zz/lanes/ that cannot (a malformed op,
 * a ref at a blob, a Lane copied under another name, a name that is not a lane id). One bad
 * Lane never hides the others; other failures (I/O) still throw.
 */
export async function readLanes(repo: ZzRepo): Promise<{
  lanes: Array<{ id: string; snap: Snapshot<LaneState, LaneOp> }>;
  corrupt: CorruptEntity[];
}> {
  return readLanesOf(repo, await repo.laneIds());
}

/** readLanes over the Lane refs `ids` (names under refs/zz/lanes/), in their order. */
async function readLanesOf(repo: ZzRepo, ids: readonly string[]): Promise<LanesRead> {
  const read = await Promise.allSettled(
    ids.map((id) =>
      laneId.safeParse(id).success
        ? repo.lane(id).read()
        : Promise.reject(
            new ZzError('entity_corrupt', `${laneRef(id)}: "${id}" is not a lane id`, {
              ref: laneRef(id),
            }),
          ),
    ),
  );
  const lanes: Array<{ id: string; snap: Snapshot<LaneState, LaneOp> }> = [];
  const corrupt: CorruptEntity[] = [];
  read.forEach((r, i) => {
    const id = ids[i]!;
    if (r.status === 'fulfilled') {
      if (r.value.state.lane) lanes.push({ id, snap: r.value });
    } else if (r.reason instanceof ZzError && r.reason.code === 'entity_corrupt') {
      corrupt.push({ ref: laneRef(id), error: r.reason.message });
    } else {
      throw r.reason;
    }
  });
  // By ref (laneIds sorts): answers name the first PAGE.maxListedProblems, the same each time.
  return { lanes, corrupt };
}

/**
 * The one Lane `laneId` names (a bad one is an error, as for any read of it by name), else
 * every Lane as readLanes gives them: what the tools taking an optional lane_id read.
 */
export async function readLanesOrOne(
  repo: ZzRepo,
  laneId?: string,
): Promise<{ lanes: Array<{ id: string; snap: Snapshot<LaneState> }>; corrupt: CorruptEntity[] }> {
  if (!laneId) return readLanes(repo);
  return { lanes: [{ id: laneId, snap: await readLane(repo, laneId) }], corrupt: [] };
}

export type LanesRead = Awaited<ReturnType<typeof readLanes>>;

function readLanesById(repo: ZzRepo): Promise<LanesRead> {
  return readLanes(repo).then(({ lanes, corrupt }) => ({
    lanes: lanes.sort((x, y) => cmp(x.id, y.id)),
    corrupt,
  }));
}

function laneSummary(snap: LanesRead['lanes'][number]['snap'], now: Date): LaneSummary {
  return {
    ...laneView(snap.state.lane!, snap.revision, snap.state),
    counts: laneCounts(snap.state, now),
  };
}

export interface LaneListArgs {
  limit?: number;
  /** next_cursor of the previous page: the Lanes whose id sorts after its last one. */
  cursor?: string;
}

export type LaneListPage = {
  lanes: LaneSummary[];
  next_cursor: string | null;
  total: number;
  /** The first PAGE.maxListedProblems Lane refs that cannot be read, by ref. */
  corrupt: CorruptEntity[];
  /** How many more cannot be read. */
  corrupt_more: number;
};

// Where a page of lane_list ended: its last Lane's id. A Lane proposed between pages lands
// where its id sorts; none is skipped or repeated, as an offset would when one is added.
const laneListCursor = cursorCodec('lane_list', laneId);

/** A page of Lanes by id (PAGE.defaultLimit by default), `total` counting them all. */
export async function laneList(repo: ZzRepo, args: LaneListArgs = {}): Promise<LaneListPage> {
  const after = args.cursor === undefined ? null : laneListCursor.decode(args.cursor, 'cursor');
  const limit = args.limit ?? PAGE.defaultLimit;
  // One ref listing gives every id (sorted) and the total; only the Lanes this page can hold
  // are read. Reading them all on every page made paging through N Lanes cost N²/limit
  // reads (2,003 Lanes at limit 10: 96 s, found in review). An unreadable ref is named on
  // the page whose range holds it, so a reader paging through meets each once.
  const ids = await repo.laneIds();
  let at = countUpTo(ids, after);
  const lanes: LanesRead['lanes'] = [];
  const corrupt: CorruptEntity[] = [];
  while (lanes.length < limit && at < ids.length) {
    const chunk = ids.slice(at, at + limit - lanes.length);
    const read = await readLanesOf(repo, chunk);
    lanes.push(...read.lanes);
    corrupt.push(...read.corrupt);
    at += chunk.length;
  }
  const page = lanePage(repo, { lanes, corrupt }, limit);
  // The byte cap may end the page early: the bad refs after its last Lane go with the next.
  const last = page.next_cursor === null ? null : page.lanes.at(-1)!.lane_id;
  const shown = last === null ? corrupt : corrupt.filter((c) => c.ref <= laneRef(last));
  return {
    ...page,
    next_cursor:
      page.next_cursor ?? (at < ids.length ? laneListCursor.encode(lanes.at(-1)!.id) : null),
    total: ids.length,
    ...listedCorrupt(shown),
  };
}

/** How many of the sorted `ids` sort at or before `after` (none when null). */
function countUpTo(ids: readonly string[], after: string | null): number {
  if (after === null) return 0;
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ids[mid]! <= after) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The first page of lane_list over Lanes already read (by id), and every Lane's doc: what
 * repo_state answers with (its roles need all the Lanes, its list only a page of them).
 */
export async function laneListFirst(
  repo: ZzRepo,
): Promise<{ page: LaneListPage; lanes: LaneDoc[] }> {
  const read = await readLanesById(repo);
  return {
    page: lanePage(repo, read),
    lanes: read.lanes.map((l) => l.snap.state.lane!),
  };
}

function lanePage(
  repo: ZzRepo,
  { lanes, corrupt }: LanesRead,
  limit: number = PAGE.defaultLimit,
): LaneListPage {
  // Counts only for the Lanes this page can hold: each walks its Lane's Asks, and a reader
  // paging through N Lanes would otherwise count all N on every page (found in review).
  const now = repo.clock();
  const page = lanes.slice(0, limit).map((l) => laneSummary(l.snap, now));
  const end = pageEnd(page, 0, limit);
  return {
    lanes: page.slice(0, end),
    next_cursor: end < lanes.length ? laneListCursor.encode(page[end - 1]!.lane_id) : null,
    total: lanes.length,
    ...listedCorrupt(corrupt),
  };
}

export type LaneAddRelatedArgs = WriteOpts & {
  lane_id: string;
  related_lane_id: string;
};

export async function laneAddRelated(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LaneAddRelatedArgs,
): Promise<{ lane: LaneView } & WriteMeta> {
  // Who is calling is settled before anything is read (writeOp checks it again, cheaply).
  assertSelf(requireCaller(callerIn), args.actor, 'actor');
  await repo.requireConfig();
  if (args.related_lane_id === args.lane_id)
    throw new ZzError('invalid_argument', 'a lane cannot be related to itself');
  const related = (await repo.lane(args.related_lane_id).read()).state.lane;
  if (!related)
    throw new ZzError('not_found', `related lane ${args.related_lane_id} does not exist`);
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'lane_add_related',
    request: { lane_id: args.lane_id, related_lane_id: args.related_lane_id },
    decide: (s, { caller, config }): LaneOpSpec => {
      if (!s.lane) throw noSuchLane(args.lane_id);
      // Only this Lane's coordinators (or an owner) write its list. "Either side" let any
      // member propose a Lane and, as its coordinator, fill any other Lane's related_lanes up
      // to its cap for good (the list has no removal).
      if (!isCoordinator(s.lane, config, caller.actor) && !isOwner(config, caller.actor)) {
        throw new ZzError(
          'forbidden',
          `only the coordinators of lane ${args.lane_id} (or an owner) may add to its related_lanes; link from your own Lane (lane_add_related with lane_id ${args.related_lane_id}) or ask a coordinator of ${args.lane_id}`,
        );
      }
      const rel = s.lane.related_lanes;
      if (!rel.includes(args.related_lane_id) && rel.length >= LIMITS.list) {
        throw new ZzError(
          'precondition_failed',
          `lane ${args.lane_id} already names ${LIMITS.list} related lanes`,
        );
      }
      return {
        op: 'lane_add_related',
        summary: `lane_add_related ${args.lane_id} → ${args.related_lane_id}`,
        args: { lane_id: args.lane_id, related_lane_id: args.related_lane_id },
      };
    },
    result: (s) => s,
  });
  return {
    lane: laneView(r.result.lane!, r.revision, r.result),
    revision: r.revision,
    replayed: r.replayed,
  };
}

export type LaneGrantArgs = WriteOpts & {
  lane_id: string;
  grantee: string;
  role: 'coordinator' | 'maintainer';
  revoke?: boolean;
};

export async function laneGrant(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LaneGrantArgs,
): Promise<{ lane: LaneView } & WriteMeta> {
  const revoke = args.revoke ?? false;
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'lane_grant',
    request: { lane_id: args.lane_id, grantee: args.grantee, role: args.role, revoke },
    decide: (s, { caller, config }): LaneOpSpec => {
      if (!s.lane) throw noSuchLane(args.lane_id);
      if (!isCoordinator(s.lane, config, caller.actor) && !isOwner(config, caller.actor)) {
        throw new ZzError(
          'forbidden',
          `only a coordinator of lane ${args.lane_id} or an owner may grant lane roles`,
        );
      }
      if (revoke && args.role === 'coordinator' && s.lane.lane_id !== '_repo') {
        const rest = s.lane.coordinators.filter((c) => c !== args.grantee);
        if (rest.length === 0)
          throw new ZzError(
            'conflict',
            `cannot revoke the last coordinator of lane ${args.lane_id}`,
          );
      }
      const list = args.role === 'maintainer' ? s.lane.maintainers : s.lane.coordinators;
      if (!revoke && !list.includes(args.grantee) && list.length >= LIMITS.list) {
        throw new ZzError(
          'precondition_failed',
          `lane ${args.lane_id} already has ${LIMITS.list} ${args.role}s; revoke one first`,
        );
      }
      return {
        op: 'lane_grant',
        summary: `lane_grant ${args.lane_id}: ${revoke ? 'revoke' : 'grant'} ${args.role} ${args.grantee}`,
        args: { lane_id: args.lane_id, grantee: args.grantee, role: args.role, revoke },
      };
    },
    result: (s) => s,
  });
  return {
    lane: laneView(r.result.lane!, r.revision, r.result),
    revision: r.revision,
    replayed: r.replayed,
  };
}
