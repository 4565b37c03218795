import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ZzError } from '../errors.js';
import { cursorCodec } from '../schema/cursor.js';
import { PAGE } from '../schema/limits.js';
import type { AskDoc } from '../schema/lane.js';
import { requireCaller, type Caller } from './access.js';
import { askKeyOf, askKeySchema, cmp, sortedAsks, startAfter, type AskKey } from './ask-order.js';
import type { LaneState } from './lane-state-types.js';
import { foreignOf, listedCorrupt, readLanesOrOne, type CorruptEntity } from './lanes.js';
import { pageEnd, type Seq } from './paging.js';
import { markUnsignedPage } from './sync/unsigned.js';
import { askView, historyView, type AskView, type HistoryEntry } from './views.js';
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

// Where a page of ask_list ended: the key of its last Ask (ask-order.ts says why a key), and
// a digest of the filters it was listed with. A cursor continued under other filters placed
// its page at a meaningless spot (another Lane's key: an empty page, or the whole list again):
// it is refused, as ask_query_claimable refuses a cursor of another Lane. Version 2: version 1
// cursors carried no filters.
const askListCursor = cursorCodec(
  'ask_list',
  z.tuple([askKeySchema, z.string().regex(/^[A-Za-z0-9_-]{1,64}$/)]),
  { version: 2, maxLength: 2048 },
);

/** The filters of a listing, as a short digest: the same set in any order is the same. */
function filterDigest(args: AskListArgs): string {
  const set = (xs: readonly string[] | undefined) => (xs ? [...new Set(xs)].sort() : null);
  const filters = [args.lane_id ?? null, !!args.mine, set(args.state), set(args.kind)];
  return createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 22);
}

type Hit = { s: LaneState; a: AskDoc; lane: string };

/**
 * Asks across every readable Lane (or one), filtered, in a stable order (Lane, then priority,
 * then age), paged by cursor (or offset)/limit and cut at about PAGE.maxBytes of JSON. Across Lanes, a
 * Lane that cannot be read is named in `corrupt` (as lane_list does), not left out silently;
 * asked for by name, it is an entity_corrupt error.
 * Each Lane's order is computed once per revision (sortedAsks); a page finds the cursor's
 * place in its Lane by binary search and continues through the Lanes after it. Every Ask is
 * still looked at once per page to count `total` under the filters (cheap: a few set lookups).
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
  const digest = filterDigest(args);
  let after: AskKey | null = null;
  if (args.cursor !== undefined) {
    const [key, filters] = askListCursor.decode(args.cursor, 'cursor');
    if (filters !== digest) {
      throw new ZzError(
        'invalid_argument',
        'cursor is from an ask_list with other filters (lane_id, mine, state, kind); pass the filters of its first page, or start again without it',
        { field: 'cursor' },
      );
    }
    after = key;
  }
  const now = repo.clock();
  const nowMs = now.getTime();
  const { lanes, corrupt } = await readLanesOrOne(repo, args.lane_id);
  const states = args.state ? new Set<string>(args.state) : null;
  const kinds = args.kind ? new Set(args.kind) : null;
  const filtered = !!(states || kinds || args.mine);
  const limit = args.limit ?? PAGE.defaultLimit;
  const offset = args.offset ?? 0;
  // One pass in key order: `total` counts every hit, `before` those ahead of the page (up to
  // the cursor's key, or the offset), and the page keeps at most `limit` after them.
  let total = 0;
  let before = 0;
  const page: Hit[] = [];
  for (const { id, snap } of [...lanes].sort((x, y) => cmp(x.id, y.id))) {
    const { asks, leaseEnds } = sortedAsks(snap.state, repo.key);
    // This Lane's first Ask after the cursor: none in a Lane before the cursor's, all after it.
    const c = after ? cmp(id, after[0]) : 1;
    const from = c < 0 ? asks.length : c > 0 ? 0 : startAfter(asks, (a) => askKeyOf(id, a), after!);
    if (!filtered) {
      // Every Ask is a hit: the page is a slice.
      const start = after ? from : Math.min(asks.length, Math.max(0, offset - total));
      before += start;
      total += asks.length;
      for (let i = start; i < asks.length && page.length < limit; i++)
        page.push({ s: snap.state, a: asks[i]!, lane: id });
      continue;
    }
    for (let i = 0; i < asks.length; i++) {
      const a = asks[i]!;
      if (kinds && !kinds.has(a.kind)) continue;
      // The state a reader sees: a claim whose lease ran out is open again.
      const shown = a.state === 'claimed' && leaseEnds[i]! <= nowMs ? 'open' : a.state;
      if (states && !states.has(shown)) continue;
      if (args.mine && a.posted_by !== caller.actor) {
        if (a.holder !== caller.actor || shown !== 'claimed') continue;
      }
      if (after ? i < from : total < offset) before++;
      else if (page.length < limit) page.push({ s: snap.state, a, lane: id });
      total++;
    }
  }
  const end = pageEnd(
    page.map((h) => h.a),
    0,
    limit,
  );
  const next = before + end;
  const last = page[end - 1];
  return {
    asks: page.slice(0, end).map(({ s, a }) => askView(s, a, now)),
    next_offset: next < total ? next : null,
    next_cursor:
      next < total && last ? askListCursor.encode([askKeyOf(last.lane, last.a), digest]) : null,
    total,
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
      const ids = snap.state.dependents.get(a.ask_id)?.slice() ?? [];
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
