import MiniSearch, { type Options } from 'minisearch';
import { internalsOf, type Postings } from './minisearch-internals.js';
import { radixFromSorted } from './radix.js';

// A shard's index section as it sits in memory once read (shard-file.ts reads it): postings
// packed as varints in one Buffer, decoded a term at a time when scored (direct-scorer.ts), and
// minisearch's own maps built from it only when the shard changes.

/** Reads varints from `buf` at `pos`; every read is bounds-checked (a damaged file throws). */
export class VarintReader {
  constructor(
    private readonly buf: Uint8Array,
    public pos = 0,
    private readonly end = buf.length,
  ) {}
  get done(): boolean {
    return this.pos >= this.end;
  }
  next(): number {
    let v = 0;
    let mul = 1;
    for (;;) {
      if (this.pos >= this.end) throw new Error('shard postings are truncated');
      const b = this.buf[this.pos++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 0x80;
      if (mul > 2 ** 28) throw new Error('shard postings hold an oversized number');
    }
  }
}

/**
 * A shard's index section, searchable as it is: the direct scorer decodes a term's postings
 * when it scores it; minisearch's maps are only built when the shard changes.
 */
export interface PackedIndex {
  documentCount: number;
  fieldIds: Record<string, number>;
  nFields: number;
  avgFieldLength: number[];
  /** Sorted (the head's). */
  terms: string[];
  termOffsets: Uint32Array;
  postings: Buffer;
  /** By short id. */
  paths: Array<string | undefined>;
  kinds: Array<string | undefined>;
  /** Field lengths by short id × nFields. */
  lengths: Float64Array;
  /** Row (file order) of each path, and where each row's document is in the docs section. */
  /** Built on first lookup (rowOf): most loaded shards never have a hit shown. */
  rows: Map<string, number> | null;
  rowPaths: string[];
  rowKinds: string;
  docOffsets: Uint32Array;
  /** Rough resident size, for the store's memory budget. */
  bytes: number;
}

/** One term's postings in one field. */
export interface FieldPostings {
  fieldId: number;
  ids: Uint32Array;
  tfs: Uint32Array;
}

/** The row of `path` in a packed index, or undefined. */
export function rowOf(p: PackedIndex, path: string): number | undefined {
  if (p.rows === null) {
    p.rows = new Map();
    p.rowPaths.forEach((x, i) => p.rows!.set(x, i));
    p.bytes += 64 * p.rowPaths.length;
  }
  return p.rows.get(path);
}

/** Decodes term `t` of a packed index (bounds-checked: a damaged file throws). */
export function termPostings(p: PackedIndex, t: number): FieldPostings[] {
  const r = new VarintReader(p.postings, p.termOffsets[t]!, p.termOffsets[t + 1]!);
  const nf = r.next();
  if (nf > p.nFields) throw new Error('shard postings are inconsistent');
  const out: FieldPostings[] = [];
  const maxId = p.paths.length - 1;
  for (let f = 0; f < nf; f++) {
    const fieldId = r.next();
    const count = r.next();
    if (fieldId >= p.nFields || count > p.rowPaths.length) {
      throw new Error('shard postings are inconsistent');
    }
    const ids = new Uint32Array(count);
    const tfs = new Uint32Array(count);
    let id = 0;
    for (let j = 0; j < count; j++) {
      id += r.next();
      if (id > maxId || p.paths[id] === undefined)
        throw new Error('shard postings name an unknown document');
      ids[j] = id;
    }
    for (let j = 0; j < count; j++) tfs[j] = r.next();
    out.push({ fieldId, ids, tfs });
  }
  if (!r.done) throw new Error('shard postings are inconsistent');
  return out;
}

/** A term's row in a sorted vocabulary, or -1. */
export function findTerm(terms: readonly string[], term: string): number {
  let lo = 0;
  let hi = terms.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const t = terms[mid]!;
    if (t === term) return mid;
    if (t < term) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/** minisearch's maps from a packed index. */
export function buildFromPacked<T>(p: PackedIndex, options: Options<T>): MiniSearch<T> {
  const ms = MiniSearch.loadJS<T>(
    {
      documentCount: p.documentCount,
      nextId: p.paths.length,
      documentIds: {},
      fieldIds: p.fieldIds,
      fieldLength: {},
      averageFieldLength: p.avgFieldLength,
      storedFields: {},
      dirtCount: 0,
      index: [],
      serializationVersion: 2,
    },
    options,
  );
  const inner = internalsOf(ms);
  if (inner === null)
    throw new Error('minisearch internals changed: compact shard cannot be loaded');
  // The shard's only stored field is the kind (ladder-index.ts filters on it).
  const storesKind = (options.storeFields ?? []).includes('kind');
  p.paths.forEach((path, id) => {
    if (path === undefined) return;
    inner._documentIds.set(id, path);
    inner._idToShortId.set(path, id);
    inner._fieldLength.set(
      id,
      Array.from(p.lengths.subarray(id * p.nFields, (id + 1) * p.nFields)),
    );
    if (storesKind) inner._storedFields.set(id, { kind: p.kinds[id] });
  });
  const values: Postings[] = new Array(p.terms.length);
  for (let t = 0; t < p.terms.length; t++) {
    const fields: Postings = new Map();
    for (const { fieldId, ids, tfs } of termPostings(p, t)) {
      const byDoc = new Map<number, number>();
      for (let j = 0; j < ids.length; j++) byDoc.set(ids[j]!, tfs[j]!);
      fields.set(fieldId, byDoc);
    }
    values[t] = fields;
  }
  inner._index._tree = radixFromSorted(p.terms, values);
  inner._index._size = undefined;
  return ms;
}
