import { ZzError } from '../errors.js';
import type { AskDoc } from '../schema/lane.js';
import { inScope, requireCaller, type Caller } from './access.js';
import { askKeyCursor, askKeyOf, sortedAsks, startAfter, type SortedAsks } from './ask-order.js';
import { assertKnownKinds, kindRule } from './kinds.js';
import { finishesWorkInHand } from './lane-closed.js';
import type { LaneState } from './lane-state.js';
import { noSuchLane } from './lanes.js';
import { pageEnd } from './paging.js';
import { askViews, blockedBy, type AskView } from './views.js';
import type { ZzRepo } from './zz-repo.js';

// ask_query_claimable: the Asks of a Lane the caller may claim now, in the order
// ask_claim_next takes them, a page at a time (asks.ts holds the writes).

export interface ClaimableArgs {
  lane_id: string;
  kinds?: string[];
  limit?: number;
  /** next_cursor of the previous page: continues after its last Ask, whatever moved since. */
  cursor?: string;
}

/** Where a page of ask_query_claimable ended (ask-order.ts); bound to the Lane it lists. */
const claimableCursor = askKeyCursor('ask_query_claimable');
export const CLAIMABLE_DEFAULT_LIMIT = 50;

// The candidates (unanswered, in key order) depend only on the revision, so they are taken
// once per revision from the Lane's sorted Asks (ask-order.ts), with their lease ends as
// numbers beside them (a query walks past every live claim); scope, blocking and the clock are
// checked per call.
const candidateCache = new WeakMap<LaneState, SortedAsks>();

function candidates(s: LaneState, repoKey: string): SortedAsks {
  let c = candidateCache.get(s);
  if (!c) {
    const all = sortedAsks(s, repoKey);
    const asks: AskDoc[] = [];
    const ends: number[] = [];
    for (let i = 0; i < all.asks.length; i++) {
      const a = all.asks[i]!;
      if (a.state !== 'open' && a.state !== 'claimed') continue;
      asks.push(a);
      ends.push(all.leaseEnds[i]!);
    }
    c = { asks, leaseEnds: Float64Array.from(ends) };
    candidateCache.set(s, c);
  }
  return c;
}

/**
 * The Asks of a Lane the caller may claim now, in claim order (the order ask_claim_next takes
 * them in), a page at a time: `total` counts them all, `next_cursor` continues after the last
 * one shown. Every candidate is looked at for the total; that is a walk of the per-revision
 * list with a scope check per kind, not per Ask.
 */
export async function askQueryClaimable(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: ClaimableArgs,
): Promise<{
  asks: AskView[];
  next_cursor: string | null;
  total: number;
  revision: string | null;
}> {
  const caller = requireCaller(callerIn);
  const after = args.cursor === undefined ? null : claimableCursor.decode(args.cursor, 'cursor');
  // A cursor carries its Lane: continued in another Lane its key would place the page at a
  // meaningless spot and silently skip that Lane's first Asks.
  if (after && after[0] !== args.lane_id) {
    throw new ZzError(
      'invalid_argument',
      `cursor is from a listing of another Lane, not of ${args.lane_id}; start again without it`,
      { field: 'cursor' },
    );
  }
  // Reading the Lane reads refs/zz/config first: use that read, not a second one.
  const read = await repo.lane(args.lane_id).read();
  const config = repo.configSeenByLanes();
  if (!read.state.lane) throw noSuchLane(args.lane_id);
  const snap = { ...read, lane: read.state.lane };
  assertKnownKinds(args.kinds, args.lane_id, snap.lane.ask_kinds, config.ask_kinds);
  const now = repo.clock();
  const nowMs = now.getTime();
  const kinds = args.kinds ? new Set(args.kinds) : null;
  // A closed Lane hands out only the follow-ups of work in hand (lane-closed.ts).
  const inHandOnly = !!snap.lane.closed;
  const keyOf = (a: AskDoc) => askKeyOf(args.lane_id, a);
  const limit = args.limit ?? CLAIMABLE_DEFAULT_LIMIT;
  const { asks, leaseEnds } = candidates(snap.state, repo.key);
  // The candidates are in key order: the page starts at the first one after the cursor's.
  // One pass counts every claimable Ask (total) and those before the page, and keeps the
  // page's: no list of every hit is built (a query is on the claim path, and a Lane may hold
  // thousands of open Asks).
  const from = after ? startAfter(asks, keyOf, after) : 0;
  const page: AskDoc[] = [];
  const scopeOk = new Map<string, boolean>();
  let total = 0;
  let before = 0;
  for (let i = 0; i < asks.length; i++) {
    const a = asks[i]!;
    if (leaseEnds[i]! > nowMs) continue; // claimed, lease running
    if (kinds && !kinds.has(a.kind)) continue;
    if (inHandOnly && !finishesWorkInHand(a)) continue;
    let ok = scopeOk.get(a.kind);
    if (ok === undefined) {
      const rule = kindRule(a.kind, snap.lane.ask_kinds, config.ask_kinds);
      ok = inScope(rule.scope, snap.lane, config, caller.actor);
      scopeOk.set(a.kind, ok);
    }
    if (!ok) continue;
    if (a.depends_on.length > 0 && blockedBy(snap.state, a).length > 0) continue;
    total++;
    if (i < from) before++;
    else if (page.length < limit) page.push(a);
  }
  const end = pageEnd(page, 0, limit);
  return {
    asks: askViews(snap.state, page.slice(0, end), now),
    next_cursor: before + end < total ? claimableCursor.encode(keyOf(page[end - 1]!)) : null,
    total,
    revision: snap.revision,
  };
}
