import { compareTerms } from './radix.js';
import type { ShardTerms } from './shard-file.js';

// The vocabulary of every loaded shard in one sorted array. A query's fuzzy and prefix
// expansions are computed here once, instead of once per shard (a fuzzy lookup costs about
// the same in a 5k-term shard as in a 150k-term union), and each shard is then asked only
// for the exact expanded terms it holds. Shards that cannot match are never touched.
// No tree is built: a prefix is a range of the array, and the fuzzy walk shares Levenshtein
// rows between neighbours the way a trie walk shares them between siblings (building
// minisearch's radix tree over 200k terms took ~0.4 s and ~40 MB at a cold start). Both return
// what SearchableMap's atPrefix() and fuzzyGet() would over the same terms, in the same order.

// minisearch's default weights for derived terms, kept so scores stay comparable.
const PREFIX_WEIGHT = 0.375;
const FUZZY_WEIGHT = 0.45;
// A short prefix can expand to thousands of terms; the best few carry the ranking.
const MAX_PREFIX_VISITS = 2000;
const MAX_PREFIX_EXPANSIONS = 24;
const MAX_FUZZY_EXPANSIONS = 24;

export interface Expansion {
  term: string;
  /** minisearch's weight for this derived term (1 for the term itself). */
  weight: number;
  /** Row of the term in the router. */
  row: number;
}

export interface ExpandOptions {
  prefix: boolean;
  /** Maximum edit distance, 0 for none. */
  fuzzy: number;
  /**
   * The shards the caller may read (null: all). A term none of them holds is treated as absent
   * throughout (exact match, compound skip, caps, tie-breaks): the vocabulary is every served
   * repository's, and a word only a private one holds must not change what the caller's own
   * shards answer — `quokka` dropping `quokkahandler` as a compound of a word it cannot see
   * told whether a private repository holds `quokka`.
   */
  shards?: ReadonlySet<number> | null;
}

export class TermRouter {
  private constructor(
    readonly terms: string[],
    /** CSR: the shards holding terms[i] are shards[offsets[i] .. offsets[i + 1]). */
    private readonly offsets: Uint32Array,
    private readonly shards: Uint32Array,
    private readonly counts: Uint32Array,
  ) {}

  static empty(): TermRouter {
    return new TermRouter([], new Uint32Array(1), new Uint32Array(0), new Uint32Array(0));
  }

  /**
   * k-way merge of the shards' sorted vocabularies: no global sort, no per-term inserts.
   * Interns as it merges: a term several shards hold is replaced in each shard's array by the
   * one string the router keeps (each shard's head was parsed on its own; 50 shards of 2,000
   * rungs held 332k term strings for 207k distinct terms, ~4 MiB of duplicates).
   */
  static build(inputs: ReadonlyArray<{ shard: number; terms: ShardTerms }>): TermRouter {
    const lists = inputs.filter((i) => i.terms.terms.length > 0);
    const total = lists.reduce((n, l) => n + l.terms.terms.length, 0);
    const heap: number[] = []; // indexes into lists, ordered by their current term
    const pos = new Uint32Array(lists.length);
    const head = (l: number): string => lists[l]!.terms.terms[pos[l]!]!;
    const less = (a: number, b: number): boolean => {
      const c = compareTerms(head(a), head(b));
      return c < 0 || (c === 0 && lists[a]!.shard < lists[b]!.shard);
    };
    const up = (i: number) => {
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!less(heap[i]!, heap[p]!)) break;
        [heap[i], heap[p]] = [heap[p]!, heap[i]!];
        i = p;
      }
    };
    const down = (i: number) => {
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
        if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
        if (m === i) return;
        [heap[i], heap[m]] = [heap[m]!, heap[i]!];
        i = m;
      }
    };
    lists.forEach((_, i) => {
      heap.push(i);
      up(heap.length - 1);
    });
    const terms: string[] = [];
    const offsets: number[] = [];
    const shards = new Uint32Array(total);
    const counts = new Uint32Array(total);
    let n = 0;
    while (heap.length > 0) {
      const l = heap[0]!;
      const term = head(l);
      if (terms.length === 0 || terms[terms.length - 1] !== term) {
        terms.push(term);
        offsets.push(n);
      } else {
        lists[l]!.terms.terms[pos[l]!] = terms[terms.length - 1]!;
      }
      shards[n] = lists[l]!.shard;
      counts[n] = lists[l]!.terms.counts[pos[l]!]!;
      n++;
      pos[l] = pos[l]! + 1;
      if (pos[l]! < lists[l]!.terms.terms.length) {
        down(0);
      } else {
        heap[0] = heap[heap.length - 1]!;
        heap.pop();
        if (heap.length > 0) down(0);
      }
    }
    offsets.push(n);
    return new TermRouter(terms, Uint32Array.from(offsets), shards, counts);
  }

  get size(): number {
    return this.terms.length;
  }

  /** Calls fn(shard, postings) for each shard holding the term at `row`. */
  forEachShard(row: number, fn: (shard: number, count: number) => void): void {
    for (let k = this.offsets[row]!; k < this.offsets[row + 1]!; k++)
      fn(this.shards[k]!, this.counts[k]!);
  }

  /**
   * Total (field, doc) postings of a term across shards (those in `shards` when given): a cheap
   * document frequency; 0 when none of them holds it.
   */
  frequency(row: number, shards?: ReadonlySet<number> | null): number {
    let n = 0;
    for (let k = this.offsets[row]!; k < this.offsets[row + 1]!; k++)
      if (!shards || shards.has(this.shards[k]!)) n += this.counts[k]!;
    return n;
  }

  /** Whether some shard in `shards` (any, when null) holds the term at `row`. */
  private holds(row: number, shards: ReadonlySet<number> | null | undefined): boolean {
    if (row < 0) return false;
    if (!shards) return true;
    for (let k = this.offsets[row]!; k < this.offsets[row + 1]!; k++)
      if (shards.has(this.shards[k]!)) return true;
    return false;
  }

  /** The term itself and, as asked, its prefix and fuzzy relatives present in some shard. */
  expand(term: string, opts: ExpandOptions): Expansion[] {
    const out = new Map<string, Expansion>();
    const shards = opts.shards;
    const found0 = this.row(term);
    const exact = this.holds(found0, shards) ? found0 : undefined;
    if (exact !== undefined) out.set(term, { term, weight: 1, row: exact });
    if (opts.prefix) {
      const found: Expansion[] = [];
      let visits = 0;
      // SearchableMap walks a prefix's subtree last child first: reverse sorted order.
      const [lo, hi] = this.prefixRange(term);
      for (let row = hi - 1; row >= lo; row--) {
        const t = this.terms[row]!;
        // Unseen terms are skipped before the count: else a private repository's words could
        // push the caller's own past the cap. (Skipping one costs a scan of its shard list.)
        if (!this.holds(row, shards)) continue;
        if (++visits > MAX_PREFIX_VISITS) break;
        if (t === term) continue;
        // `requesthandler` is indexed from `requestHandler` together with its parts, so every
        // document holding it already matches `request` itself: expanding to it only costs.
        if (exact !== undefined && this.isCompoundOf(term, t, shards)) continue;
        const distance = t.length - term.length;
        found.push({
          term: t,
          row,
          weight: (PREFIX_WEIGHT * t.length) / (t.length + 0.3 * distance),
        });
      }
      this.keepBest(found, MAX_PREFIX_EXPANSIONS, out, shards);
    }
    if (opts.fuzzy > 0) {
      const found: Expansion[] = [];
      for (const [t, row, distance] of this.fuzzy(term, opts.fuzzy)) {
        // A term that is also a prefix match keeps its (higher) prefix weight, as in minisearch.
        if (distance === 0 || out.has(t) || !this.holds(row, shards)) continue;
        found.push({ term: t, row, weight: (FUZZY_WEIGHT * t.length) / (t.length + distance) });
      }
      this.keepBest(found, MAX_FUZZY_EXPANSIONS, out, shards);
    }
    return [...out.values()];
  }

  /** Whether `term` is `head` followed by another indexed word (`request` + `handler…`). */
  private isCompoundOf(
    head: string,
    term: string,
    shards: ReadonlySet<number> | null | undefined,
  ): boolean {
    const rest = term.slice(head.length).replace(/^[_$]+/, '');
    for (let i = 3; i <= Math.min(rest.length, 16); i++)
      if (this.holds(this.row(rest.slice(0, i)), shards)) return true;
    return false;
  }

  /** The row of a term, or -1. */
  private row(term: string): number {
    const i = this.lowerBound(term, 0);
    return i < this.terms.length && this.terms[i] === term ? i : -1;
  }

  /** First row at or after `from` whose term is not below `term`. */
  private lowerBound(term: string, from: number): number {
    let lo = from;
    let hi = this.terms.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.terms[mid]! < term) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Rows [lo, hi) of the terms starting with `prefix`. */
  private prefixRange(prefix: string, from = 0): [number, number] {
    const lo = this.lowerBound(prefix, from);
    let a = lo;
    let b = this.terms.length;
    while (a < b) {
      const mid = (a + b) >>> 1;
      if (this.terms[mid]!.startsWith(prefix)) a = mid + 1;
      else b = mid;
    }
    return [lo, a];
  }

  /**
   * Terms within `maxDistance` edits of `query`, in sorted order, with their row and distance:
   * minisearch's fuzzySearch (the same banded Levenshtein matrix, row i for the term's i-th
   * character) walked over the sorted array. Rows are kept for the prefix a term shares with
   * the previous one; a prefix whose row is already past the distance skips every term under it.
   */
  private fuzzy(query: string, maxDistance: number): Array<[string, number, number]> {
    const out: Array<[string, number, number]> = [];
    const n = query.length + 1;
    const m = n + maxDistance;
    const matrix = new Uint8Array(m * n).fill(maxDistance + 1);
    for (let j = 0; j < n; ++j) matrix[j] = j;
    for (let i = 1; i < m; ++i) matrix[i * n] = i;
    const terms = this.terms;
    let prev = '';
    let valid = 0; // rows 1..valid hold `prev`'s first `valid` characters
    let k = 0;
    while (k < terms.length) {
      const term = terms[k]!;
      let shared = 0;
      const limit = Math.min(valid, term.length);
      while (shared < limit && term.charCodeAt(shared) === prev.charCodeAt(shared)) shared++;
      let pruned = 0;
      let i = shared + 1;
      // No term longer than the query plus the distance can match (nor has a matrix row).
      for (; i <= term.length && i < m; ++i) {
        const char = term[i - 1];
        const thisRowOffset = n * i;
        const prevRowOffset = thisRowOffset - n;
        let minDistance = matrix[thisRowOffset]!;
        const jmin = Math.max(0, i - maxDistance - 1);
        const jmax = Math.min(n - 1, i + maxDistance);
        for (let j = jmin; j < jmax; ++j) {
          const different = char !== query[j];
          const rpl = matrix[prevRowOffset + j]! + +different;
          const del = matrix[prevRowOffset + j + 1]! + 1;
          const ins = matrix[thisRowOffset + j]! + 1;
          const dist = (matrix[thisRowOffset + j + 1] = Math.min(rpl, del, ins));
          if (dist < minDistance) minDistance = dist;
        }
        if (minDistance > maxDistance) {
          pruned = i;
          break;
        }
      }
      prev = term;
      if (pruned > 0) {
        valid = pruned;
        // Every term under this prefix is as far or farther: skip them all.
        k = this.prefixRange(term.slice(0, pruned), k)[1];
        continue;
      }
      valid = i - 1;
      if (term.length < m) {
        const distance = matrix[term.length * n + n - 1]!;
        if (distance <= maxDistance) out.push([term, k, distance]);
      }
      k++;
    }
    return out;
  }

  private keepBest(
    found: Expansion[],
    max: number,
    out: Map<string, Expansion>,
    shards: ReadonlySet<number> | null | undefined,
  ): void {
    if (found.length > max) {
      const freq = new Map(found.map((e) => [e.row, this.frequency(e.row, shards)]));
      found.sort(
        (a, b) =>
          b.weight - a.weight ||
          freq.get(b.row)! - freq.get(a.row)! ||
          compareTerms(a.term, b.term),
      );
      found.length = max;
    }
    for (const e of found) if (!out.has(e.term)) out.set(e.term, e);
  }
}
