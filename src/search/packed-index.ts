import MiniSearch, { type Options } from 'minisearch';
import { internalsOf, type Postings } from './minisearch-internals.js';
import { radixFromSorted } from './radix.js';

/** One character per rung kind in a shard file's index section. */
export const KIND_CODES: Record<string, string> = {
  repo: 'R',
  directory: 'D',
  file: 'F',
  release: 'V',
  changeset: 'C',
  issue: 'I',
  pull_request: 'P',
  contributor: 'A',
  topic: 'T',
};
const KIND_BY_CODE: Record<string, string> = Object.fromEntries(
  Object.entries(KIND_CODES).map(([k, c]) => [c, k]),
);

/** The kind a KIND_CODES character stands for, or undefined. */
export function kindOfCode(code: string): string | undefined {
  return KIND_BY_CODE[code];
}

/** The kind of short id `id` (one the index holds). */
export function kindOfId(p: PackedIndex, id: number): string | undefined {
  return KIND_BY_CODE[p.rowKinds[p.idRows[id]!]!];
}

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
 * when it scores it; minisearch's maps are only built when the shard changes. Everything per
 * document is a typed array or a byte range, never a JS string or array per document (50
 * loaded shards held ~9 MiB of path strings and per-document arrays that way): a path is
 * decoded from `pathBytes` only for a hit that is returned or shown.
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
  /** Row (file order) of each short id, -1 for an id no document has. */
  idRows: Int32Array;
  /** Field lengths by short id × nFields. */
  lengths: Uint32Array;
  /** Rows' paths, UTF-8: row i is pathBytes[pathOffsets[i], pathOffsets[i + 1]). */
  pathBytes: Buffer;
  pathOffsets: Uint32Array;
  /** One KIND_CODES character per row. */
  rowKinds: string;
  /** Where each row's document is in the docs section. */
  docOffsets: Uint32Array;
  /** Path → row, an open-addressing table built on first lookup (rowOf): most loaded shards never have a hit shown. */
  rows: Int32Array | null;
  /** Rough resident size, for the store's memory budget. */
  bytes: number;
}

/** Documents (rows) of a packed index. */
export function rowCount(p: PackedIndex): number {
  return p.pathOffsets.length - 1;
}

/** The path of row `row`. */
export function pathOfRow(p: PackedIndex, row: number): string {
  return p.pathBytes.toString('utf8', p.pathOffsets[row]!, p.pathOffsets[row + 1]!);
}

/** The path of short id `id` (one the index holds). */
export function pathOfId(p: PackedIndex, id: number): string {
  return pathOfRow(p, p.idRows[id]!);
}

/** Whether short id `id` names a document of the index. */
export function liveId(p: PackedIndex, id: number): boolean {
  return id < p.idRows.length && p.idRows[id]! >= 0;
}

/** FNV-1a over `b[start, end)`. */
function hashBytes(b: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
  return h >>> 0;
}

/** The row of `path` in a packed index, or undefined. */
export function rowOf(p: PackedIndex, path: string): number | undefined {
  const n = rowCount(p);
  // Twice the rows, rounded up to a power of two: probes stay short.
  const mask = (1 << Math.max(4, Math.ceil(Math.log2(2 * n + 1)))) - 1;
  if (p.rows === null) {
    const table = new Int32Array(mask + 1).fill(-1);
    for (let row = 0; row < n; row++) {
      let slot = hashBytes(p.pathBytes, p.pathOffsets[row]!, p.pathOffsets[row + 1]!) & mask;
      while (table[slot] !== -1) slot = (slot + 1) & mask;
      table[slot] = row;
    }
    p.rows = table;
    p.bytes += table.byteLength;
  }
  const key = Buffer.from(path);
  let slot = hashBytes(key, 0, key.length) & mask;
  for (;;) {
    const row = p.rows[slot]!;
    if (row === -1) return undefined;
    const start = p.pathOffsets[row]!;
    const end = p.pathOffsets[row + 1]!;
    if (end - start === key.length && p.pathBytes.compare(key, 0, key.length, start, end) === 0)
      return row;
    slot = (slot + 1) & mask;
  }
}

/** One term's postings in one field. */
export interface FieldPostings {
  fieldId: number;
  ids: Uint32Array;
  tfs: Uint32Array;
}

/** Decodes term `t` of a packed index (bounds-checked: a damaged file throws). */
export function termPostings(p: PackedIndex, t: number): FieldPostings[] {
  const r = new VarintReader(p.postings, p.termOffsets[t]!, p.termOffsets[t + 1]!);
  const nf = r.next();
  if (nf > p.nFields) throw new Error('shard postings are inconsistent');
  const out: FieldPostings[] = [];
  const maxId = p.idRows.length - 1;
  for (let f = 0; f < nf; f++) {
    const fieldId = r.next();
    const count = r.next();
    if (fieldId >= p.nFields || count > rowCount(p)) {
      throw new Error('shard postings are inconsistent');
    }
    const ids = new Uint32Array(count);
    const tfs = new Uint32Array(count);
    let id = 0;
    for (let j = 0; j < count; j++) {
      id += r.next();
      if (id > maxId || p.idRows[id]! < 0)
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
      nextId: p.idRows.length,
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
  p.idRows.forEach((row, id) => {
    if (row < 0) return;
    const path = pathOfRow(p, row);
    inner._documentIds.set(id, path);
    inner._idToShortId.set(path, id);
    inner._fieldLength.set(
      id,
      Array.from(p.lengths.subarray(id * p.nFields, (id + 1) * p.nFields)),
    );
    if (storesKind) inner._storedFields.set(id, { kind: kindOfCode(p.rowKinds[row]!) });
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
