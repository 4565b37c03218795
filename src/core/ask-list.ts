import { ZzError } from '../errors.js';
import { PAGE } from '../schema/limits.js';
import type { AskDoc } from '../schema/lane.js';
import { requireCaller, type Caller } from './access.js';
import { readLane, readLanes, type CorruptEntity } from './lanes.js';
import { pageEnd } from './paging.js';
import { askView, leaseExpired, type AskView } from './views.js';
import type { ZzRepo } from './zz-repo.js';

// Reading Asks across Lanes, as users of gh, git-bug and beads expect: `ask list` with
// filters (mine, state, kind, one Lane), paged, and `ask get` of one Ask.

export const ASK_LIST_STATES = ['open', 'claimed', 'answered', 'cancelled'] as const;
export type AskListState = (typeof ASK_LIST_STATES)[number];

export interface AskListArgs {
  lane_id?: string;
  /** Asks the caller posted or holds. */
  mine?: boolean;
  state?: AskListState[];
  kind?: string[];
  limit?: number;
  offset?: number;
}

/** The state a reader sees: a claim whose lease ran out is open again. */
function shownState(a: AskDoc, now: Date): AskListState {
  return leaseExpired(a, now) ? 'open' : a.state;
}

/**
 * Asks across every readable Lane (or one), filtered, in a stable order (Lane, then priority,
 * then age), paged by offset/limit and cut at about PAGE.maxBytes of JSON. Across Lanes, a
 * Lane that cannot be read is named in `corrupt` (as lane_list does), not left out silently;
 * asked for by name, it is an entity_corrupt error.
 */
export async function askList(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskListArgs,
): Promise<{
  asks: AskView[];
  next_offset: number | null;
  total: number;
  corrupt: CorruptEntity[];
}> {
  const caller = requireCaller(callerIn);
  const now = repo.clock();
  const { lanes, corrupt } = args.lane_id
    ? { lanes: [{ id: args.lane_id, snap: await readLane(repo, args.lane_id) }], corrupt: [] }
    : await readLanes(repo);
  const states = args.state ? new Set(args.state) : null;
  const kinds = args.kind ? new Set(args.kind) : null;
  const hits: Array<{ s: (typeof lanes)[number]['snap']['state']; a: AskDoc }> = [];
  for (const { snap } of [...lanes].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))) {
    const asks = [...snap.state.asks.values()].sort(
      (x, y) =>
        x.priority - y.priority ||
        (x.posted_at < y.posted_at ? -1 : x.posted_at > y.posted_at ? 1 : 0) ||
        (x.ask_id < y.ask_id ? -1 : 1),
    );
    for (const a of asks) {
      if (kinds && !kinds.has(a.kind)) continue;
      if (states && !states.has(shownState(a, now))) continue;
      if (args.mine) {
        const holds = a.holder === caller.actor && shownState(a, now) === 'claimed';
        if (a.posted_by !== caller.actor && !holds) continue;
      }
      hits.push({ s: snap.state, a });
    }
  }
  const start = args.offset ?? 0;
  const end = pageEnd(
    hits.map((h) => h.a),
    start,
    args.limit ?? PAGE.defaultLimit,
  );
  return {
    asks: hits.slice(start, end).map(({ s, a }) => askView(s, a, now)),
    next_offset: end < hits.length ? end : null,
    total: hits.length,
    corrupt,
  };
}

export interface AskGetArgs {
  ask_id: string;
  lane_id?: string;
}

/** One Ask by id, in its Lane (or searched across Lanes when no lane_id is given). */
export async function askGet(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskGetArgs,
): Promise<{ ask: AskView; revision: string | null }> {
  requireCaller(callerIn);
  const now = repo.clock();
  const { lanes, corrupt } = args.lane_id
    ? { lanes: [{ id: args.lane_id, snap: await readLane(repo, args.lane_id) }], corrupt: [] }
    : await readLanes(repo);
  for (const { snap } of lanes) {
    const a = snap.state.asks.get(args.ask_id);
    if (a) return { ask: askView(snap.state, a, now), revision: snap.revision };
  }
  // The Ask may be in a Lane that cannot be read: say which were not searched (a few by name).
  const unread =
    corrupt.length === 0
      ? ''
      : ` that can be read; ${corrupt.length} lane ref(s) cannot be: ${corrupt
          .slice(0, 5)
          .map((c) => c.ref)
          .join(', ')}${corrupt.length > 5 ? ', …' : ''} (lane_list names them all)`;
  throw new ZzError(
    'not_found',
    args.lane_id
      ? `ask ${args.ask_id} does not exist in lane ${args.lane_id}`
      : `ask ${args.ask_id} does not exist in any lane${unread}`,
  );
}
