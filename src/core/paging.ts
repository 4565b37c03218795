import { PAGE } from '../schema/limits.js';

// Pages of long lists (a Lane's Asks, its history, ask_list hits) cut by item count and by
// the JSON size they would answer.

// JSON size of what a page holds, per stored document (documents never change once stored).
const sizeOf = new WeakMap<object, number>();
export function jsonBytes(o: object): number {
  let n = sizeOf.get(o);
  if (n === undefined) sizeOf.set(o, (n = Buffer.byteLength(JSON.stringify(o), 'utf8')));
  return n;
}

// Running totals of jsonBytes per array, filled as far as pages have reached: the next page
// of the same array (a state's Asks, a cached history view) is a binary search. Arrays given
// to pageEnd are never changed afterwards.
const totalsOf = new WeakMap<readonly object[], number[]>();

/**
 * Running totals an array's owner already knows (totals[i] = bytes of items[0, i), as far as
 * it knows): pageEnd starts from them. The array must never change afterwards.
 */
export function knownTotals(items: readonly object[], totals: number[]): void {
  totalsOf.set(items, totals);
}

/**
 * [start, end) of one page: at most `limit` items and, past the first, no more than
 * PAGE.maxBytes of JSON, so no response is ever built much larger than that in memory.
 */
export function pageEnd<T extends object>(
  items: readonly T[],
  start: number,
  limit: number | undefined,
  maxBytes: number = PAGE.maxBytes,
): number {
  const last = Math.min(items.length, start + (limit ?? items.length));
  let totals = totalsOf.get(items);
  if (!totals) totalsOf.set(items, (totals = [0]));
  // totals[i] = bytes of items[0, i). Sizing stops once the page is over the cap: a first
  // page of a 5,000-Ask Lane sizes the Asks it can hold, not all of them.
  while (totals.length <= last) {
    const i = totals.length - 1;
    if (i > start && totals[i]! - totals[start]! > maxBytes) break;
    totals.push(totals[i]! + jsonBytes(items[i]!));
  }
  const known = Math.min(last, totals.length - 1);
  // The first i in (start, known) with bytes of [start, i] over the cap ends the page at i.
  const cap = totals[start]! + maxBytes;
  if (totals[known]! <= cap || known <= start + 1) return known;
  let lo = start + 1;
  let hi = known;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (totals[mid + 1]! > cap) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}
