import SearchableMap from 'minisearch/SearchableMap';
import { compareTerms, radixFromSorted } from './radix.js';
import type { ShardTerms } from './shard-file.js';

// The vocabulary of every loaded shard in one radix tree. A query's fuzzy and prefix
// expansions are computed here once, instead of once per shard (a fuzzy lookup costs about
// the same in a 5k-term shard as in a 150k-term union), and each shard is then asked only
// for the exact expanded terms it holds. Shards that cannot match are never touched.

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
}

export class TermRouter {
  private constructor(
    readonly terms: string[],
    /** CSR: the shards holding terms[i] are shards[offsets[i] .. offsets[i + 1]). */
    private readonly offsets: Uint32Array,
    private readonly shards: Uint32Array,
    private readonly counts: Uint32Array,
    private readonly tree: SearchableMap<number>,
  ) {}

  static empty(): TermRouter {
    return new TermRouter(
      [],
      new Uint32Array(1),
      new Uint32Array(0),
      new Uint32Array(0),
      new SearchableMap(),
    );
  }

  /** k-way merge of the shards' sorted vocabularies: no global sort, no per-term inserts. */
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
    const rows = terms.map((_, i) => i);
    const tree = new SearchableMap<number>(radixFromSorted(terms, rows) as never);
    return new TermRouter(terms, Uint32Array.from(offsets), shards, counts, tree);
  }

  get size(): number {
    return this.terms.length;
  }

  /** Calls fn(shard, postings) for each shard holding the term at `row`. */
  forEachShard(row: number, fn: (shard: number, count: number) => void): void {
    for (let k = this.offsets[row]!; k < this.offsets[row + 1]!; k++)
      fn(this.shards[k]!, this.counts[k]!);
  }

  /** Total (field, doc) postings of a term across shards: a cheap document frequency. */
  frequency(row: number): number {
    let n = 0;
    for (let k = this.offsets[row]!; k < this.offsets[row + 1]!; k++) n += this.counts[k]!;
    return n;
  }

  /** The term itself and, as asked, its prefix and fuzzy relatives present in some shard. */
  expand(term: string, opts: ExpandOptions): Expansion[] {
    const out = new Map<string, Expansion>();
    const exact = this.tree.get(term);
    if (exact !== undefined) out.set(term, { term, weight: 1, row: exact });
    if (opts.prefix) {
      const found: Expansion[] = [];
      let visits = 0;
      for (const [t, row] of this.tree.atPrefix(term)) {
        if (++visits > MAX_PREFIX_VISITS) break;
        if (t === term) continue;
        // `requesthandler` is indexed from `requestHandler` together with its parts, so every
        // document holding it already matches `request` itself: expanding to it only costs.
        if (exact !== undefined && this.isCompoundOf(term, t)) continue;
        const distance = t.length - term.length;
        found.push({
          term: t,
          row,
          weight: (PREFIX_WEIGHT * t.length) / (t.length + 0.3 * distance),
        });
      }
      this.keepBest(found, MAX_PREFIX_EXPANSIONS, out);
    }
    if (opts.fuzzy > 0) {
      const found: Expansion[] = [];
      for (const [t, [row, distance]] of this.tree.fuzzyGet(term, opts.fuzzy)) {
        // A term that is also a prefix match keeps its (higher) prefix weight, as in minisearch.
        if (distance === 0 || out.has(t)) continue;
        found.push({ term: t, row, weight: (FUZZY_WEIGHT * t.length) / (t.length + distance) });
      }
      this.keepBest(found, MAX_FUZZY_EXPANSIONS, out);
    }
    return [...out.values()];
  }

  /** Whether `term` is `head` followed by another indexed word (`request` + `handler…`). */
  private isCompoundOf(head: string, term: string): boolean {
    const rest = term.slice(head.length).replace(/^[_$]+/, '');
    for (let i = 3; i <= Math.min(rest.length, 16); i++)
      if (this.tree.has(rest.slice(0, i))) return true;
    return false;
  }

  private keepBest(found: Expansion[], max: number, out: Map<string, Expansion>): void {
    if (found.length > max) {
      const freq = new Map(found.map((e) => [e.row, this.frequency(e.row)]));
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
