// The op log a snapshot holds (Entity<S>: every op, oldest first), shared between snapshots
// instead of copied. Each group commit made a new snapshot whose log was `[...old, ...new]`: a
// copy of the whole log (60 KB at 7,500 ops) per commit, alive until the next commit, and so
// young garbage that the scavenges of a writer storm found alive and copied (issue 17).
//
// How: the logs of one entity's successive snapshots are views of one append-only array, each
// with its own length (as CowMap shares its keys, core/cow-map.ts). concat() appends in place
// when this log is the newest view of its array; a log whose array has already grown past it (a
// second concat of one log: a CAS retry that re-decided, or a fold of an older snapshot) copies
// its own part first. Positions below any view's length are never written again, so a reader's
// log never changes under it.
// Hazard: the array must be written through concat() only; never hand it out (slice copies).
// The folds' lists of refused ops (a Lane's, the config's, the Ladder's `rejected`) are OpLogs
// for the same reason: shared by snapshots, a refusal appends in O(1) instead of copying the
// list (50,000 refusals from a hostile replica were ~1e9 element copies on a cold fold).
//
// Read like a ReadonlyArray where callers need it (length, at, iteration, slice, map, find,
// forEach); JSON.stringify writes it as an array. Not an Array: `log[i]` is `log.at(i)`.

export class OpLog<T> implements Iterable<T> {
  readonly #items: T[];
  readonly length: number;

  /** A log of `items`, which are this log's alone from now on (never change them). */
  constructor(items: T[] = [], length: number = items.length) {
    this.#items = items;
    this.length = length;
  }

  /** The op at position i (0 ≤ i < length), else undefined. */
  at(i: number): T | undefined {
    return i >= 0 && i < this.length ? this.#items[i] : undefined;
  }

  /** This log followed by `more`: shares this log's array when no other log has grown it. */
  concat(more: readonly T[]): OpLog<T> {
    if (more.length === 0) return this;
    const items =
      this.#items.length === this.length ? this.#items : this.#items.slice(0, this.length);
    for (const x of more) items.push(x);
    return new OpLog(items, this.length + more.length);
  }

  *[Symbol.iterator](): Iterator<T> {
    for (let i = 0; i < this.length; i++) yield this.#items[i]!;
  }

  /** Array.prototype.slice of this log's ops (a new array). */
  slice(start = 0, end = this.length): T[] {
    const n = this.length;
    const from = start < 0 ? Math.max(0, n + start) : Math.min(start, n);
    const to = end < 0 ? Math.max(0, n + end) : Math.min(end, n);
    return this.#items.slice(from, Math.max(from, to));
  }

  map<U>(f: (op: T, i: number) => U): U[] {
    const out: U[] = [];
    for (let i = 0; i < this.length; i++) out.push(f(this.#items[i]!, i));
    return out;
  }

  find(f: (op: T, i: number) => boolean): T | undefined {
    for (let i = 0; i < this.length; i++) if (f(this.#items[i]!, i)) return this.#items[i];
    return undefined;
  }

  forEach(f: (op: T, i: number) => void): void {
    for (let i = 0; i < this.length; i++) f(this.#items[i]!, i);
  }

  toJSON(): T[] {
    return this.slice();
  }
}
