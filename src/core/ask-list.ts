import { ZzError } from '../errors.js';
import { PAGE } from '../schema/limits.js';
import type { AskDoc } from '../schema/lane.js';
import { requireCaller, type Caller } from './access.js';
import { askKeyCursor, askKeyOf, cmp, compareAsks, startAfter } from './ask-order.js';
import { foreignOf, listedCorrupt, readLanesOrOne, type CorruptEntity } from './lanes.js';
import { pageEnd, type Seq } from './paging.js';
import { markUnsignedPage } from './sync/unsigned.js';
import { askView, historyView, leaseExpired, type AskView, type HistoryEntry } from './views.js';
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
  /** next_cursor of the previous page: continues after its last Ask, whatever moved since. */
  cursor?: string;
}

// Where a page of ask_list ended: the key of its last Ask (ask-order.ts says why a key).
const askListCursor = askKeyCursor('ask_list');

/** The state a reader sees: a claim whose lease ran out is open again. */
function shownState(a: AskDoc, now: Date): AskListState {
  return leaseExpired(a, now) ? 'open' : a.state;
}

/**
 * Asks across every readable Lane (or one), filtered, in a stable order (Lane, then priority,
 * then age), paged by cursor (or offset)/limit and cut at about PAGE.maxBytes of JSON. Across Lanes, a
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
  next_cursor: string | null;
  total: number;
  corrupt: CorruptEntity[];
  corrupt_more: number;
}> {
  const caller = requireCaller(callerIn);
  if (args.offset !== undefined && args.cursor !== undefined) {
    throw new ZzError('invalid_argument', 'give offset or cursor, not both', { field: 'cursor' });
  }
  const after = args.cursor === undefined ? null : askListCursor.decode(args.cursor, 'cursor');
  const now = repo.clock();
  const { lanes, corrupt } = await readLanesOrOne(repo, args.lane_id);
  const states = args.state ? new Set(args.state) : null;
  const kinds = args.kind ? new Set(args.kind) : null;
  const hits: Array<{ s: (typeof lanes)[number]['snap']['state']; a: AskDoc; lane: string }> = [];
  for (const { id, snap } of [...lanes].sort((x, y) => cmp(x.id, y.id))) {
    const asks = [...snap.state.asks.values()].sort(compareAsks);
    for (const a of asks) {
      if (kinds && !kinds.has(a.kind)) continue;
      if (states && !states.has(shownState(a, now))) continue;
      if (args.mine) {
        const holds = a.holder === caller.actor && shownState(a, now) === 'claimed';
        if (a.posted_by !== caller.actor && !holds) continue;
      }
      hits.push({ s: snap.state, a, lane: id });
    }
  }
  // hits are in key order: the page starts at the first Ask after the cursor's.
  const start = after ? startAfter(hits, (h) => askKeyOf(h.lane, h.a), after) : (args.offset ?? 0);
  const end = pageEnd(
    hits.map((h) => h.a),
    start,
    args.limit ?? PAGE.defaultLimit,
  );
  return {
    asks: hits.slice(start, end).map(({ s, a }) => askView(s, a, now)),
    next_offset: end < hits.length ? end : null,
    next_cursor:
      end < hits.length && end > start
        ? askListCursor.encode(askKeyOf(hits[end - 1]!.lane, hits[end - 1]!.a))
        : null,
    total: hits.length,
    ...listedCorrupt(corrupt),
  };
}

export interface AskGetArgs {
  ask_id: string;
  lane_id?: string;
  /** Also a page of the Asks that depend on this one (what it blocks), in posting order. */
  include_dependents?: boolean;
  dependents_offset?: number;
  /** Also a page of this Ask's history entries, oldest first. */
  include_history?: boolean;
  history_offset?: number;
  /** Items per page of each list asked for (default PAGE.defaultLimit). */
  limit?: number;
}

export interface AskGetResult {
  ask: AskView;
  revision: string | null;
  dependents?: AskView[];
  next_dependents_offset?: number | null;
  history?: HistoryEntry[];
  next_history_offset?: number | null;
}

// An Ask's own history entries, grouped once per history array (historyView serves the same
// array until the Lane or a running lease changes): opening one Ask of a long Lane is then a
// lookup, not a scan of every op, and its pages keep their sizes (paging.ts) between calls.
const historyByAsk = new WeakMap<Seq<HistoryEntry>, Map<string, HistoryEntry[]>>();

function historyOfAsk(full: Seq<HistoryEntry>, askId: string): readonly HistoryEntry[] {
  let by = historyByAsk.get(full);
  if (!by) {
    by = new Map();
    for (let i = 0; i < full.length; i++) {
      const e = full.at(i)!;
      if (e.ask_id === null) continue;
      const list = by.get(e.ask_id);
      if (list) list.push(e);
      else by.set(e.ask_id, [e]);
    }
    historyByAsk.set(full, by);
  }
  return by.get(askId) ?? [];
}

/**
 * One Ask by id, in its Lane (or searched across Lanes when no lane_id is given); with
 * include_dependents / include_history, also a page of what it blocks and of its history, so
 * a client showing one Ask needs one bounded request, not the whole Lane read page by page.
 */
export async function askGet(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskGetArgs,
): Promise<AskGetResult> {
  requireCaller(callerIn);
  for (const list of ['dependents', 'history'] as const) {
    if (args[`${list}_offset`] !== undefined && !args[`include_${list}`]) {
      throw new ZzError('invalid_argument', `${list}_offset needs include_${list}: true`);
    }
  }
  const now = repo.clock();
  const { lanes, corrupt } = await readLanesOrOne(repo, args.lane_id);
  for (const { snap } of lanes) {
    const a = snap.state.asks.get(args.ask_id);
    if (!a) continue;
    const out: AskGetResult = { ask: askView(snap.state, a, now), revision: snap.revision };
    const limit = args.limit ?? PAGE.defaultLimit;
    if (args.include_dependents) {
      const ids = snap.state.dependents.get(a.ask_id) ?? [];
      const docs = ids.flatMap((id) => snap.state.asks.get(id) ?? []);
      const start = args.dependents_offset ?? 0;
      const end = pageEnd(docs, start, limit);
      out.dependents = docs.slice(start, end).map((d) => askView(snap.state, d, now));
      out.next_dependents_offset = end < docs.length ? end : null;
    }
    if (args.include_history) {
      const mine = historyOfAsk(historyView(snap.log, now, snap.state.rejected), a.ask_id);
      const start = args.history_offset ?? 0;
      const end = pageEnd(mine, start, limit);
      const foreign = foreignOf(snap.log, repo.store.replica);
      out.history = await markUnsignedPage(repo, mine, start, end, foreign);
      out.next_history_offset = end < mine.length ? end : null;
    }
    return out;
  }
  // The Ask may be in a Lane that cannot be read: say which were not searched (a few by name).
  const unread =
    corrupt.length === 0
      ? ''
      : ` that can be read; ${corrupt.length} lane ref(s) cannot be: ${corrupt
          .slice(0, 5)
          .map((c) => c.ref)
          .join(
            ', ',
          )}${corrupt.length > 5 ? ', …' : ''} (lane_list names the first ${PAGE.maxListedProblems})`;
  throw new ZzError(
    'not_found',
    args.lane_id
      ? `ask ${args.ask_id} does not exist in lane ${args.lane_id}`
      : `ask ${args.ask_id} does not exist in any lane${unread}`,
  );
}
