import type MiniSearch from 'minisearch';
import { internalsOf } from './minisearch-internals.js';
import {
  findTerm,
  kindOfId,
  liveId,
  pathOfId,
  termPostings,
  type PackedIndex,
} from './packed-index.js';

// minisearch scores every matching document and allocates a result object, a `match` object
// and a `terms` array for each before returning them all sorted: about 1 µs per posting, so a
// common word across 50 shards costs tens of milliseconds. This scores the same postings with
// the same BM25 (minisearch's formula and defaults) into typed arrays reused between queries,
// and intersects words by looking the survivors of the rarer ones up in the common ones
// instead of walking every posting. It reads either a live minisearch index (private fields,
// shape-checked) or a shard's packed arrays as loaded from disk. bench/search.ts measures it
// against minisearch's own search(); LadderSearch falls back to that when needed.

const BM25 = { k: 1.2, b: 0.7, d: 0.5 };

export interface WeightedTerm {
  term: string;
  weight: number;
}

export interface ScoreRequest {
  /** Each group is one query word: its expansions, any of which may match. */
  groups: WeightedTerm[][];
  mode: 'and' | 'or';
  /** Only documents of these kinds. */
  kinds: ReadonlySet<string> | null;
  /** Field name → boost (missing fields count 1). */
  boost: Readonly<Record<string, number>>;
}

export interface Scored {
  readonly id: string;
  readonly score: number;
}

/**
 * A scored document whose path is decoded when first asked: a packed shard keeps its paths as
 * UTF-8 bytes, and a common word's survivors (thousands) are mostly cut by rank() unseen.
 * It carries the caller's tag (query.ts: the shard), so it is also the ranked result itself.
 */
export class Hit<T = null> implements Scored {
  private decoded: string | null = null;
  constructor(
    readonly shard: T,
    private src: Source | null,
    private readonly doc: number,
    readonly score: number,
  ) {}
  get path(): string {
    return this.id;
  }
  get id(): string {
    if (this.decoded === null) {
      this.decoded = this.src!.path(this.doc);
      // Not kept past the decode: a cached result must not hold the shard's index in memory.
      this.src = null;
    }
    return this.decoded;
  }
}

/** One term's documents in one field. */
interface List {
  fieldId: number;
  /** Live documents holding the term in this field. */
  n: number;
  forEach(fn: (id: number, tf: number) => void): void;
  get(id: number): number | undefined;
}

/** What scoring needs from an index, whichever form it is in. */
interface Source {
  documentCount: number;
  fieldIds: Record<string, number>;
  avgFieldLength: number[];
  /** Documents a posting may name that are gone (discarded, not yet vacuumed). */
  dirty: boolean;
  maxId: number;
  lists(term: string): List[];
  live(id: number): boolean;
  kind(id: number): string | undefined;
  path(id: number): string;
  /** Field lengths by short id × field count. */
  lengths: Uint32Array;
  nFields: number;
}

function minisearchSource<T>(ms: MiniSearch<T>): Source | null {
  const inner = internalsOf(ms);
  if (inner === null) return null;
  const nFields = Object.keys(inner._fieldIds).length;
  const lengths = new Uint32Array((inner._nextId + 1) * nFields);
  for (const [id, fl] of inner._fieldLength) {
    for (let f = 0; f < nFields; f++) lengths[id * nFields + f] = fl[f] ?? 0;
  }
  const dirty = inner._dirtCount > 0;
  const live = inner._documentIds;
  return {
    documentCount: inner._documentCount,
    fieldIds: inner._fieldIds,
    avgFieldLength: inner._avgFieldLength,
    dirty,
    maxId: inner._nextId,
    nFields,
    lengths,
    lists(term) {
      const fields = inner._index.get(term);
      if (!fields) return [];
      const out: List[] = [];
      for (const [fieldId, postings] of fields) {
        let n = postings.size;
        if (dirty) for (const id of postings.keys()) if (!live.has(id)) n--;
        out.push({
          fieldId,
          n,
          forEach: (fn) => postings.forEach((tf, id) => fn(id, tf)),
          get: (id) => postings.get(id),
        });
      }
      return out;
    },
    live: (id) => live.has(id),
    kind: (id) => inner._storedFields.get(id)?.kind as string | undefined,
    path: (id) => live.get(id)!,
  };
}

function packedSource(p: PackedIndex): Source {
  return {
    documentCount: p.documentCount,
    fieldIds: p.fieldIds,
    avgFieldLength: p.avgFieldLength,
    dirty: false,
    maxId: p.idRows.length,
    nFields: p.nFields,
    lengths: p.lengths,
    lists(term) {
      const t = findTerm(p.terms, term);
      if (t < 0) return [];
      // Decoded per query: a term's postings are a few hundred bytes of varints.
      return termPostings(p, t).map(({ fieldId, ids, tfs }) => ({
        fieldId,
        n: ids.length,
        forEach(fn) {
          for (let j = 0; j < ids.length; j++) fn(ids[j]!, tfs[j]!);
        },
        get(id) {
          let lo = 0;
          let hi = ids.length - 1;
          while (lo <= hi) {
            const mid = (lo + hi) >> 1;
            const v = ids[mid]!;
            if (v === id) return tfs[mid];
            if (v < id) lo = mid + 1;
            else hi = mid - 1;
          }
          return undefined;
        },
      }));
    },
    live: (id) => liveId(p, id),
    kind: (id) => kindOfId(p, id),
    path: (id) => pathOfId(p, id),
  };
}

/**
 * Per-document arrays every score() call uses. One set for all shards, grown to the largest
 * (score() runs one shard at a time and leaves `bits` zeroed; `mark` compares with epochs
 * that only ever grow): 50 shards kept ~1.6 MiB of them apart.
 */
const scratch = {
  score: new Float64Array(0),
  /** AND: the last step a document survived (+ epoch). */
  mark: new Int32Array(0),
  /** OR: which words matched, as bits. */
  bits: new Uint32Array(0),
  epoch: 0,
};

function scratchOfSize(size: number): typeof scratch {
  if (scratch.score.length < size) {
    const n = Math.max(size, 2 * scratch.score.length);
    scratch.score = new Float64Array(n);
    scratch.mark = new Int32Array(n);
    scratch.bits = new Uint32Array(n);
    scratch.epoch = 0;
  }
  return scratch;
}

const sources = new WeakMap<object, Source>();

/** Drops what was cached about an index that changed (add, replace, discard, vacuum). */
export function forgetScratch(index: object): void {
  sources.delete(index);
}

function sourceFor(key: object, make: () => Source | null): Source | null {
  const s = sources.get(key);
  if (s) return s;
  const made = make();
  if (made === null) return null;
  sources.set(key, made);
  return made;
}

interface FieldList {
  list: List;
  /** weight × field boost × idf: everything but the per-document part. */
  factor: number;
  avg: number;
}

function bm25(tf: number, length: number, avg: number): number {
  return BM25.d + (tf * (BM25.k + 1)) / (tf + BM25.k * (1 - BM25.b + (BM25.b * length) / avg));
}

/** Scores a packed shard (as loaded from disk). */
export function scorePacked<T = null>(
  p: PackedIndex,
  req: ScoreRequest,
  tag: T = null as T,
): Array<Hit<T>> {
  return score(
    sourceFor(p, () => packedSource(p))!,
    req,
    tag,
  );
}

/**
 * Scores a live minisearch index. Null when its internals are not the expected shape (the
 * caller then uses minisearch's search()).
 */
export function scoreShard<D, T = null>(
  ms: MiniSearch<D>,
  req: ScoreRequest,
  tag: T = null as T,
): Array<Hit<T>> | null {
  const src = sourceFor(ms, () => minisearchSource(ms));
  return src === null ? null : score(src, req, tag);
}

function score<T>(src: Source, req: ScoreRequest, tag: T): Array<Hit<T>> {
  const s = scratchOfSize(src.maxId + 1);
  const boostById: number[] = [];
  for (const [name, id] of Object.entries(src.fieldIds)) boostById[id] = req.boost[name] ?? 1;
  const kinds = req.kinds;
  const { score: acc, mark, bits } = s;
  const { lengths, nFields } = src;
  // Postings of discarded documents linger until a vacuum; only then is liveness checked.
  const admit = (id: number): boolean =>
    (!src.dirty || src.live(id)) && (kinds === null || kinds.has(src.kind(id) as string));
  const lists = req.groups.map((group) => {
    const out: FieldList[] = [];
    for (const e of group) {
      for (const list of src.lists(e.term)) {
        if (list.n <= 0) continue;
        const idf = Math.log(1 + (src.documentCount - list.n + 0.5) / (list.n + 0.5));
        out.push({
          list,
          factor: e.weight * (boostById[list.fieldId] ?? 1) * idf,
          avg: src.avgFieldLength[list.fieldId] ?? 1,
        });
      }
    }
    return out;
  });
  const add = (l: FieldList, id: number, tf: number) => {
    acc[id]! += l.factor * bm25(tf, lengths[id * nFields + l.list.fieldId]!, l.avg);
  };
  const touched: number[] = [];

  if (req.mode === 'or') {
    lists.forEach((group, g) => {
      const bit = 1 << (g % 32);
      for (const l of group) {
        l.list.forEach((id, tf) => {
          if (!admit(id)) return;
          if (bits[id] === 0) {
            touched.push(id);
            acc[id] = 0;
          }
          bits[id]! |= bit;
          add(l, id, tf);
        });
      }
    });
    const out: Array<Hit<T>> = [];
    for (const id of touched) {
      let b = bits[id]!;
      let matched = 0;
      for (; b !== 0; b &= b - 1) matched++;
      out.push(new Hit(tag, src, id, acc[id]! * matched));
      bits[id] = 0;
    }
    return out;
  }

  // AND: rarest word first; each later word only adds to documents that matched all before.
  const size = (group: FieldList[]) => group.reduce((n, l) => n + l.list.n, 0);
  if (lists.some((g) => g.length === 0)) return [];
  const order = lists.map((_, g) => g).sort((a, b) => size(lists[a]!) - size(lists[b]!));
  if (s.epoch > 0x3fffffff - 64) {
    mark.fill(0);
    s.epoch = 0;
  }
  const base = s.epoch;
  s.epoch += order.length + 1;
  let survivors: number[] = [];
  order.forEach((g, step) => {
    const group = lists[g]!;
    const prev = base + step; // mark of documents that matched every earlier word
    const next = prev + 1;
    if (step === 0) {
      for (const l of group) {
        l.list.forEach((id, tf) => {
          if (mark[id] !== next) {
            if (!admit(id)) return;
            mark[id] = next;
            acc[id] = 0;
            touched.push(id);
          }
          add(l, id, tf);
        });
      }
      survivors = touched;
      return;
    }
    // Walk whichever is shorter: this word's postings, or the survivors looked up in them.
    if (survivors.length * group.length < size(group)) {
      for (const id of survivors) {
        for (const l of group) {
          const tf = l.list.get(id);
          if (tf === undefined) continue;
          mark[id] = next;
          add(l, id, tf);
        }
      }
    } else {
      for (const l of group) {
        l.list.forEach((id, tf) => {
          const m = mark[id];
          if (m !== prev && m !== next) return;
          mark[id] = next;
          add(l, id, tf);
        });
      }
    }
    survivors = survivors.filter((id) => mark[id] === next);
  });
  return survivors.map((id) => new Hit(tag, src, id, acc[id]!));
}
