import { z } from 'zod';
import { cursorCodec, type CursorCodec } from '../schema/cursor.js';
import type { AskDoc } from '../schema/lane.js';
import type { LaneState } from './lane-state-types.js';
import { leaseEndMs } from './views.js';

// The one order of Asks within a Lane (priority, then age, then id) and the keyset cursor over
// it that ask_list and ask_query_claimable page with. An offset walk of a filtered list skips
// Asks when writes land between pages (a claim takes an Ask out of the list and every later one
// moves up a place) and repeats them when a higher-priority Ask is posted; a key does neither:
// the next page is the Asks that sort after the last one shown, as they are now. The id breaks
// ties: Asks posted in the same millisecond would otherwise have no stable order, and a page
// ending between two of them would skip or repeat the other.

/** Code-unit order (not localeCompare: ids and timestamps sort the same on every machine). */
export const cmp = (x: string | number, y: string | number): number => (x < y ? -1 : x > y ? 1 : 0);

/** Highest priority (lowest number) first, then oldest, then by id. */
export function compareAsks(x: AskDoc, y: AskDoc): number {
  return cmp(x.priority, y.priority) || cmp(x.posted_at, y.posted_at) || cmp(x.ask_id, y.ask_id);
}

/** Where a page ended: its last Ask's Lane and place in the order. */
export type AskKey = [lane: string, priority: number, postedAt: string, askId: string];

export const askKeyOf = (laneId: string, a: AskDoc): AskKey => [
  laneId,
  a.priority,
  a.posted_at,
  a.ask_id,
];

/** Lanes by id, then the order of Asks within one. */
export function compareAskKeys(x: AskKey, y: AskKey): number {
  return cmp(x[0], y[0]) || cmp(x[1], y[1]) || cmp(x[2], y[2]) || cmp(x[3], y[3]);
}

/** An AskKey as a cursor carries it (input: checked before use). */
export const askKeySchema = z.tuple([
  z.string().max(256),
  z.number().int(),
  z.string().max(64),
  z.string().max(256),
]);

/** A codec of AskKey cursors for one listing (its kind: a cursor of another is refused). */
export const askKeyCursor = (kind: string): CursorCodec<AskKey> =>
  cursorCodec(kind, askKeySchema, { maxLength: 2048 });

/** A Lane's Asks in key order, with each one's lease end (views.ts leaseEndMs) beside it. */
export type SortedAsks = { asks: AskDoc[]; leaseEnds: Float64Array };

// The order depends only on the revision: sorted once per state, not per page (ask_list sorted
// every Lane's Asks on every page: 50 ms a page of 8,000 Asks, bench/ask-list.ts). Two flat
// arrays, not an object per Ask: a state's list lives until the next one, and under load an
// object per Ask per state was young garbage that survived scavenges (issue 17).
const sortedCache = new WeakMap<LaneState, SortedAsks>();

/** Every Ask of a Lane state in key order (compareAsks), computed once per state. */
export function sortedAsks(s: LaneState): SortedAsks {
  let c = sortedCache.get(s);
  if (!c) {
    const asks: AskDoc[] = [];
    s.asks.forEach((a) => asks.push(a));
    asks.sort(compareAsks);
    const leaseEnds = new Float64Array(asks.length);
    for (let i = 0; i < asks.length; i++) leaseEnds[i] = leaseEndMs(asks[i]!);
    c = { asks, leaseEnds };
    sortedCache.set(s, c);
  }
  return c;
}

/**
 * The index of the first item whose key sorts after `after`: where the next page starts.
 * `items` must be in key order (strictly after, so the last Ask shown is never shown again).
 */
export function startAfter<T>(
  items: readonly T[],
  keyOf: (item: T) => AskKey,
  after: AskKey,
): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareAskKeys(keyOf(items[mid]!), after) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
