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

/**
 * Every Ask of a Lane state in key order (compareAsks), computed once per state. `repoKey`: the
 * repository the state is of (ZzRepo.key), whose Lane's last order is carried to it.
 */
export function sortedAsks(s: LaneState, repoKey: string): SortedAsks {
  let c = sortedCache.get(s);
  if (!c) {
    const laneId = s.lane?.lane_id;
    // By repository and Lane: by Lane alone, every repository's _repo Lane (and any two Lane
    // ids repositories share) took the one entry in turn, each evicting the other's order.
    const key = laneId === undefined ? undefined : `${repoKey}\0${laneId}`;
    const prior = key === undefined ? undefined : priors.get(key);
    const docs = s.asks.valuesArray();
    const carried = prior ? orderFrom(prior, docs) : null;
    askOrderStats[carried ? 'carried' : 'sorted']++;
    const order = carried ?? fullOrder(docs);
    // An Ask the prior state held as it is (the same doc) has the lease end it had there.
    const same = carried ? prior!.docs : null;
    const endsAt = new Float64Array(docs.length);
    const asks: AskDoc[] = new Array<AskDoc>(order.length);
    const leaseEnds = new Float64Array(order.length);
    for (let i = 0; i < order.length; i++) {
      const p = order[i]!;
      const a = docs[p]!;
      asks[i] = a;
      leaseEnds[i] = endsAt[p] = same !== null && same[p] === a ? prior!.endsAt[p]! : leaseEndMs(a);
    }
    c = { asks, leaseEnds };
    sortedCache.set(s, c);
    if (key !== undefined) {
      priors.delete(key);
      priors.set(key, { docs, order, endsAt });
      if (priors.size > MAX_PRIORS) priors.delete(priors.keys().next().value!);
    }
  }
  return c;
}

// A Lane's next state differs from its last by a group commit's few ops, and sorting all of its
// Asks again for each new state (under a steady load: every group commit, the first query after
// it) cost ~1.4 ms a state on a Lane of ~1,700 Asks, ~1.8% of the daemon's time in the 64-client
// load (a profile, 3 December). So the last order computed per Lane (of each repository) is kept (the Lanes read
// last, MAX_PRIORS of them: an array of its Asks, and of positions and lease ends) and carried to the
// next state in one pass: the Asks are positions in the state's CowMap (first-insertion order,
// never deleted), so the prior's positions hold the same Asks in a later state of the same Lane;
// those whose key did not move keep their place, the rest and the new ones are sorted (a few)
// and merged in. Any doubt (another Lane's map, positions that name other Asks) sorts in full.
const MAX_PRIORS = 8;

interface Prior {
  /** The prior state's Asks by CowMap position. */
  docs: AskDoc[];
  /** Positions in key order. */
  order: Int32Array;
  /** Lease ends (views.ts leaseEndMs) by position. */
  endsAt: Float64Array;
}
/** By `${repository key}\0${Lane id}`, the least recently set first. */
const priors = new Map<string, Prior>();

/**
 * How many states' orders were carried from a prior and how many sorted in full, since the
 * process started: what a test of the carrying reads (a count, not a timing).
 */
export const askOrderStats = { carried: 0, sorted: 0 };

function fullOrder(docs: readonly AskDoc[]): Int32Array {
  const positions = Array.from({ length: docs.length }, (_, i) => i);
  positions.sort((x, y) => compareAsks(docs[x]!, docs[y]!));
  return Int32Array.from(positions);
}

/**
 * The order of a state's Asks (`docs`, by CowMap position) from a prior state's of the same
 * Lane; null when this state is no later state of that one.
 */
function orderFrom(prior: Prior, docs: readonly AskDoc[]): Int32Array | null {
  const n0 = prior.docs.length;
  const n = docs.length;
  if (n < n0) return null;
  // Positions that moved in the order (a key changed) or are new; the rest keep theirs.
  const moved = new Uint8Array(n);
  const extra: number[] = [];
  for (let i = 0; i < n0; i++) {
    const was = prior.docs[i]!;
    const now = docs[i]!;
    if (was === now) continue;
    if (was.ask_id !== now.ask_id) return null; // positions name other Asks: no later state
    if (was.priority !== now.priority || was.posted_at !== now.posted_at) {
      moved[i] = 1;
      extra.push(i);
    }
  }
  for (let i = n0; i < n; i++) extra.push(i);
  if (extra.length === 0) return prior.order;
  extra.sort((x, y) => compareAsks(docs[x]!, docs[y]!));
  const order = new Int32Array(n);
  let k = 0;
  let e = 0;
  for (let j = 0; j < prior.order.length; j++) {
    const p = prior.order[j]!;
    if (moved[p]) continue;
    while (e < extra.length && compareAsks(docs[extra[e]!]!, docs[p]!) < 0)
      order[k++] = extra[e++]!;
    order[k++] = p;
  }
  while (e < extra.length) order[k++] = extra[e++]!;
  return order;
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
