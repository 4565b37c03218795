import { PAGE } from '../schema/limits.js';

// Pages of long lists (a Lane's Asks, its history, ask_list hits) cut by item count and by
// the JSON size they would answer.

// Printable ASCII other than `"` and `\`: JSON writes such a string as itself in quotes.
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

function stringBytes(s: string): number {
  return PLAIN.test(s) ? s.length + 2 : Buffer.byteLength(JSON.stringify(s), 'utf8');
}

// `"key":` once per key: documents of one kind repeat the same few keys thousands of times.
const keySizes = new Map<string, number>();

function keyBytes(key: string): number {
  let n = keySizes.get(key);
  if (n === undefined) {
    n = stringBytes(key) + 1;
    if (keySizes.size < 4096) keySizes.set(key, n);
  }
  return n;
}

const skipped = (x: unknown): boolean =>
  x === undefined || typeof x === 'function' || typeof x === 'symbol';

/**
 * Buffer.byteLength(JSON.stringify(v)), without building the JSON: a cold lane_get sizes every
 * Ask and history entry of a long Lane, and stringifying each was a third of its time. Plain
 * JSON data (what documents and ops are) is summed here; strings with anything to escape and
 * values with their own JSON form (toJSON, class instances) are measured by JSON itself.
 * test/core/paging.test.ts holds it to JSON.stringify on generated values.
 */
export function jsonBytes(v: unknown): number {
  switch (typeof v) {
    case 'string':
      return stringBytes(v);
    case 'number':
      return Number.isFinite(v) ? String(v).length : 4;
    case 'boolean':
      return v ? 4 : 5;
    case 'object': {
      if (v === null) return 4;
      if (Array.isArray(v)) {
        let n = v.length > 1 ? v.length + 1 : 2;
        for (const x of v) n += skipped(x) ? 4 : jsonBytes(x);
        return n;
      }
      const proto: unknown = Object.getPrototypeOf(v);
      if ((proto !== Object.prototype && proto !== null) || 'toJSON' in v) break;
      const o = v as Record<string, unknown>;
      let n = 2;
      let k = 0;
      for (const key of Object.keys(o)) {
        const x = o[key];
        if (skipped(x)) continue;
        n += keyBytes(key) + jsonBytes(x);
        k++;
      }
      return k > 1 ? n + k - 1 : n;
    }
  }
  return Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');
}

/**
 * A read-only list by position: an array, or a view that shares its items with other views
 * instead of copying them (a state's Asks read from its CowMap, a Lane's history: views.ts).
 * A Seq given to pageEnd or knownTotals never changes afterwards.
 */
export interface Seq<T> {
  readonly length: number;
  at(i: number): T | undefined;
}

/** seq[start, end) as a new array (Array.prototype.slice for any Seq). */
export function sliceOf<T>(seq: Seq<T>, start: number, end: number): T[] {
  if (Array.isArray(seq)) return (seq as T[]).slice(start, end);
  const out: T[] = [];
  for (let i = Math.max(0, start); i < end && i < seq.length; i++) out.push(seq.at(i)!);
  return out;
}

// Running totals of item sizes per list, filled as far as pages have reached: the next page
// of the same list (a state's Asks, a cached history view) is a binary search. Lists given
// to pageEnd are never changed afterwards.
interface Sizing {
  /** totals[i] = bytes of items[0, i), as far as known. */
  totals: number[];
  /** The size of items[i] (its owner may know it from an earlier list). */
  size?: (i: number) => number;
}
const sizingOf = new WeakMap<Seq<object>, Sizing>();

/**
 * What a list's owner already knows of its items' sizes: running totals from the start, and
 * a function answering the size of item i (for items it carried over from another list).
 * pageEnd starts from them. The list must never change afterwards.
 */
export function knownTotals(
  items: Seq<object>,
  totals: number[],
  size?: (i: number) => number,
): void {
  sizingOf.set(items, size ? { totals, size } : { totals });
}

/**
 * [start, end) of one page: at most `limit` items and, past the first, no more than
 * PAGE.maxBytes of JSON, so no response is ever built much larger than that in memory.
 */
export function pageEnd<T extends object>(
  items: Seq<T>,
  start: number,
  limit: number | undefined,
  maxBytes: number = PAGE.maxBytes,
): number {
  const last = Math.min(items.length, start + (limit ?? items.length));
  let sizing = sizingOf.get(items);
  if (!sizing) sizingOf.set(items, (sizing = { totals: [0] }));
  const { totals, size } = sizing;
  // totals[i] = bytes of items[0, i). Sizing stops once the page is over the cap: a first
  // page of a 5,000-Ask Lane sizes the Asks it can hold, not all of them.
  while (totals.length <= last) {
    const i = totals.length - 1;
    if (i > start && totals[i]! - totals[start]! > maxBytes) break;
    totals.push(totals[i]! + (size ? size(i) : jsonBytes(items.at(i))));
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

/**
 * The first `max` items (PAGE.maxListedProblems by default) and how many more there are: for
 * lists an answer names only a few of, such as refs that cannot be read, where the count of
 * the rest is what matters.
 */
export function firstOf<T>(
  items: readonly T[],
  max: number = PAGE.maxListedProblems,
): { shown: T[]; more: number } {
  return { shown: items.slice(0, max), more: Math.max(0, items.length - max) };
}
