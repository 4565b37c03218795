import MiniSearch, { type Options } from 'minisearch';
import { internalsOf, type Postings } from './minisearch-internals.js';
import { compareTerms, radixFromSorted } from './radix.js';

// The on-disk form of one repo's shard. minisearch's own toJSON()/loadJSON() cost ~300 ms and
// ~60 ms per 2k-rung shard on this class of machine (toJSON builds an object per term and field
// with sparse integer keys; the GC dominates), which made a cold start over 50 repos take
// seconds. Here the postings travel as varints and are put back into the instance's maps
// directly (minisearch-internals.ts); when those internals are not what we expect, the official
// toJSON()/loadJS() path is used instead.

export const SHARD_FORMAT = 'zz-search-shard';
export const SHARD_FORMAT_VERSION = 2;

/** The stored copy of a rung a hit is built from (minisearch keeps only what it scores). */
export interface ShardDoc {
  path: string;
  kind: string;
  title: string;
  summary: string;
  symbols?: string[];
  anchor?: { commit: string; oid: string };
}

export interface ShardMeta {
  repo: string;
  ladder_oid: string;
  options_version: number;
  minisearch: string;
  written_at: string;
}

/** A shard's vocabulary, sorted, with how many (field, doc) postings each term has. */
export interface ShardTerms {
  terms: string[];
  counts: Uint32Array;
}

interface CompactIndex {
  encoding: 'compact';
  document_count: number;
  next_id: number;
  field_ids: Record<string, number>;
  avg_field_length: number[];
  /** Short id of each doc, in `docs` order. */
  short_ids: number[];
  /** `fields` lengths per doc, in `docs` order, base64 Uint32Array. */
  field_length: string;
  terms: string[];
  /** Per term, its (field, doc) postings: the router's input, readable without the postings. */
  term_counts: string;
  /**
   * Base64 varints; per term: n fields, then per field: field id, n docs, doc ids (first
   * absolute, then deltas), freqs.
   */
  postings: string;
}

interface OfficialIndex {
  encoding: 'minisearch-json';
  json: unknown;
}

interface ShardFile extends ShardMeta {
  format: typeof SHARD_FORMAT;
  version: number;
  docs: Columns;
  index: CompactIndex | OfficialIndex;
}

// Documents are stored, and kept after loading, as columns: a cold start then creates a few
// strings per rung instead of an object graph per rung (parsing and collecting those objects
// was most of the load time). A rung becomes an object when a search returns it.
interface Columns {
  paths: string[];
  /** One character per document (KIND_CODES). */
  kinds: string;
  titles: string[];
  summaries: string[];
  /** Symbols joined by newlines. */
  symbols: Array<string | null>;
  /** `commit:oid` */
  anchors: Array<string | null>;
}

const KIND_CODES: Record<string, string> = {
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

/** The documents of a shard read from disk: looked up by path, built into objects on demand. */
export class DocColumns {
  private readonly rows = new Map<string, number>();

  constructor(private readonly c: Columns) {
    const n = c.paths.length;
    if (
      typeof c.kinds !== 'string' ||
      c.kinds.length !== n ||
      ![c.titles, c.summaries, c.symbols, c.anchors].every(
        (a) => Array.isArray(a) && a.length === n,
      )
    ) {
      throw new Error('shard docs are inconsistent');
    }
    for (let i = 0; i < n; i++) this.rows.set(c.paths[i]!, i);
  }

  get size(): number {
    return this.c.paths.length;
  }

  has(path: string): boolean {
    return this.rows.has(path);
  }

  get(path: string): ShardDoc | undefined {
    const row = this.rows.get(path);
    return row === undefined ? undefined : this.doc(row);
  }

  path(row: number): string {
    return this.c.paths[row]!;
  }

  kind(row: number): string {
    const k = KIND_BY_CODE[this.c.kinds[row]!];
    if (k === undefined) throw new Error('shard docs hold an unknown kind');
    return k;
  }

  doc(row: number): ShardDoc {
    const c = this.c;
    const doc: ShardDoc = {
      path: c.paths[row]!,
      kind: this.kind(row),
      title: c.titles[row]!,
      summary: c.summaries[row]!,
    };
    const sym = c.symbols[row];
    if (sym) doc.symbols = sym.split('\n');
    const a = c.anchors[row];
    if (a) {
      const i = a.indexOf(':');
      doc.anchor = { commit: a.slice(0, i), oid: a.slice(i + 1) };
    }
    return doc;
  }

  *values(): IterableIterator<ShardDoc> {
    for (let i = 0; i < this.size; i++) yield this.doc(i);
  }

  kindCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (let i = 0; i < this.size; i++) {
      const k = this.kind(i);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return counts;
  }
}

const u32ToBase64 = (a: Uint32Array): string =>
  Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');

function base64ToU32(s: string): Uint32Array {
  const b = Buffer.from(s, 'base64');
  // Buffer.from may hand back a view into a shared pool at any offset; copy when unaligned.
  if (b.byteOffset % 4 === 0) return new Uint32Array(b.buffer, b.byteOffset, b.byteLength >>> 2);
  const copy = new Uint8Array(b.byteLength);
  copy.set(b);
  return new Uint32Array(copy.buffer, 0, copy.byteLength >>> 2);
}

/**
 * Unsigned LEB128 varints. Doc ids within one (term, field) list are delta-coded, so most
 * numbers fit one byte: the postings take ~1/3 of the Uint32 size and the file reads faster.
 */
class VarintWriter {
  private buf = new Uint8Array(1 << 16);
  length = 0;
  push(v: number): void {
    if (this.length + 5 > this.buf.length) {
      const next = new Uint8Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    while (v >= 0x80) {
      this.buf[this.length++] = (v & 0x7f) | 0x80;
      v >>>= 7;
    }
    this.buf[this.length++] = v;
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

class VarintReader {
  pos = 0;
  constructor(private readonly buf: Uint8Array) {}
  get done(): boolean {
    return this.pos >= this.buf.length;
  }
  next(): number {
    let v = 0;
    let shift = 0;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error('shard postings are truncated');
      const b = this.buf[this.pos++]!;
      v += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return v;
      shift += 7;
      if (shift > 28) throw new Error('shard postings hold an oversized number');
    }
  }
}

function varintsToBase64(values: readonly number[]): string {
  const w = new VarintWriter();
  for (const v of values) w.push(v);
  return Buffer.from(w.result()).toString('base64');
}

/** The sorted vocabulary of a live shard (the router is built from these). */
export function shardTerms(ms: MiniSearch<never>): ShardTerms | null {
  const inner = internalsOf(ms);
  if (inner === null) return null;
  const rows: Array<[string, number]> = [];
  for (const [term, fields] of inner._index) {
    let n = 0;
    for (const docs of fields.values()) {
      for (const id of docs.keys()) if (inner._documentIds.has(id)) n++;
    }
    if (n > 0) rows.push([term, n]);
  }
  rows.sort((a, b) => compareTerms(a[0], b[0]));
  return { terms: rows.map((r) => r[0]), counts: Uint32Array.from(rows, (r) => r[1]) };
}

/**
 * Serialises a shard. Postings of discarded documents are left out (so the file is also a
 * vacuum); the returned terms are the shard's vocabulary for the router.
 */
export function encodeShard(
  ms: MiniSearch<never>,
  docs: Iterable<ShardDoc>,
  meta: ShardMeta,
): { text: string; terms: ShardTerms } {
  const list = [...docs];
  const file: ShardFile = {
    format: SHARD_FORMAT,
    version: SHARD_FORMAT_VERSION,
    ...meta,
    docs: {
      paths: list.map((d) => d.path),
      kinds: list.map((d) => KIND_CODES[d.kind] ?? '?').join(''),
      titles: list.map((d) => d.title),
      summaries: list.map((d) => d.summary),
      symbols: list.map((d) => (d.symbols && d.symbols.length > 0 ? d.symbols.join('\n') : null)),
      anchors: list.map((d) => (d.anchor ? `${d.anchor.commit}:${d.anchor.oid}` : null)),
    },
    index: { encoding: 'minisearch-json', json: null },
  };
  const inner = internalsOf(ms);
  if (inner === null) {
    file.index = { encoding: 'minisearch-json', json: ms.toJSON() };
    return { text: JSON.stringify(file), terms: { terms: [], counts: new Uint32Array(0) } };
  }
  const nFields = Object.keys(inner._fieldIds).length;
  const shortIds: number[] = [];
  const lengths = new Uint32Array(list.length * nFields);
  list.forEach((d, i) => {
    const id = inner._idToShortId.get(d.path);
    if (id === undefined) throw new Error(`shard doc ${d.path} is not in the index`);
    shortIds.push(id);
    const fl = inner._fieldLength.get(id) ?? [];
    for (let f = 0; f < nFields; f++) lengths[i * nFields + f] = fl[f] ?? 0;
  });
  const rows: Array<[string, Postings]> = [];
  for (const entry of inner._index) rows.push(entry);
  rows.sort((a, b) => compareTerms(a[0], b[0]));
  const out = new VarintWriter();
  const terms: string[] = [];
  const counts: number[] = [];
  const live = inner._documentIds;
  const ids: number[] = [];
  for (const [term, fields] of rows) {
    let nf = 0;
    let total = 0;
    for (const byDoc of fields.values()) {
      let n = 0;
      for (const id of byDoc.keys()) if (live.has(id)) n++;
      if (n > 0) nf++;
      total += n;
    }
    if (nf === 0) continue;
    out.push(nf);
    for (const [fieldId, byDoc] of fields) {
      ids.length = 0;
      for (const id of byDoc.keys()) if (live.has(id)) ids.push(id);
      if (ids.length === 0) continue;
      // Insertion order is ascending short ids in practice; sort to be sure deltas are >= 0.
      for (let j = 1; j < ids.length; j++) {
        if (ids[j]! < ids[j - 1]!) {
          ids.sort((x, y) => x - y);
          break;
        }
      }
      out.push(fieldId);
      out.push(ids.length);
      let prev = 0;
      for (const id of ids) {
        out.push(id - prev);
        prev = id;
      }
      for (const id of ids) out.push(byDoc.get(id)!);
    }
    terms.push(term);
    counts.push(total);
  }
  file.index = {
    encoding: 'compact',
    document_count: inner._documentCount,
    next_id: inner._nextId,
    field_ids: inner._fieldIds,
    avg_field_length: inner._avgFieldLength,
    short_ids: shortIds,
    field_length: u32ToBase64(lengths),
    terms,
    term_counts: varintsToBase64(counts),
    postings: Buffer.from(out.result()).toString('base64'),
  };
  return { text: JSON.stringify(file), terms: { terms, counts: Uint32Array.from(counts) } };
}

/**
 * A shard's index as flat arrays, straight from its file. The direct scorer searches it as is;
 * minisearch's own maps (an object per term, field and posting) are only built when the shard
 * changes or minisearch's search() is asked for, which keeps a cold start to parsing.
 */
export interface PackedIndex {
  documentCount: number;
  fieldIds: Record<string, number>;
  nFields: number;
  avgFieldLength: number[];
  /** Sorted. */
  terms: string[];
  /** Where each term's entry starts in `data`; one more entry marks the end. */
  termStart: Uint32Array;
  /** Per term: n fields, then per field: field id, n docs, doc ids (ascending), freqs. */
  data: Uint32Array;
  /** By short id. */
  paths: Array<string | undefined>;
  kinds: Array<string | undefined>;
  /** Field lengths by short id × nFields. */
  lengths: Float64Array;
}

export interface DecodedShard<T = never> {
  meta: ShardMeta;
  docs: DocColumns;
  /** Null when the file used minisearch's own encoding. */
  packed: PackedIndex | null;
  /**
   * Builds the minisearch instance (memoised). Throws on inconsistent postings; the documents
   * are still good for a rebuild.
   */
  index: () => MiniSearch<T>;
  /** Null when the file used minisearch's own encoding (the router then asks the index). */
  terms: ShardTerms | null;
}

/** Reads just enough of a shard file to tell whether it is current. */
export function parseShard(text: string): ShardFile {
  const file = JSON.parse(text) as ShardFile;
  if (file === null || typeof file !== 'object' || file.format !== SHARD_FORMAT) {
    throw new Error('not a zz search shard');
  }
  if (file.version !== SHARD_FORMAT_VERSION)
    throw new Error(`shard format version ${file.version}`);
  return file;
}

export function decodeShard<T = never>(file: ShardFile, options: Options<T>): DecodedShard<T> {
  const docs = new DocColumns(file.docs);
  const meta: ShardMeta = {
    repo: file.repo,
    ladder_oid: file.ladder_oid,
    options_version: file.options_version,
    minisearch: file.minisearch,
    written_at: file.written_at,
  };
  const idx = file.index;
  let built: MiniSearch<T> | null = null;
  if (idx.encoding === 'minisearch-json') {
    const json = idx.json;
    return {
      meta,
      docs,
      packed: null,
      index: () => (built ??= MiniSearch.loadJS<T>(json as never, options)),
      terms: null,
    };
  }
  const nTerms = idx.terms.length;
  for (let t = 1; t < nTerms; t++) {
    if (!(idx.terms[t - 1]! < idx.terms[t]!)) throw new Error('shard terms are not sorted');
  }
  const cr = new VarintReader(Buffer.from(idx.term_counts, 'base64'));
  const counts = new Uint32Array(nTerms);
  for (let t = 0; t < nTerms; t++) counts[t] = cr.next();
  if (!cr.done) throw new Error('shard term counts are inconsistent');
  let packed: PackedIndex;
  try {
    packed = unpackIndex(idx, docs, counts);
  } catch (e) {
    // The documents read fine: the caller can rebuild the index from them.
    return {
      meta,
      docs,
      packed: null,
      index: () => {
        throw e;
      },
      terms: null,
    };
  }
  return {
    meta,
    docs,
    packed,
    index: () => (built ??= buildFromPacked(packed, options)),
    terms: { terms: idx.terms, counts },
  };
}

function unpackIndex(idx: CompactIndex, docs: DocColumns, counts: Uint32Array): PackedIndex {
  const n = docs.size;
  const nFields = Object.keys(idx.field_ids).length;
  const fieldLength = base64ToU32(idx.field_length);
  if (idx.short_ids.length !== n || fieldLength.length !== n * nFields) {
    throw new Error('shard index is inconsistent');
  }
  let maxId = -1;
  for (const id of idx.short_ids) if (id > maxId) maxId = id;
  const paths = new Array<string | undefined>(maxId + 1);
  const kinds = new Array<string | undefined>(maxId + 1);
  const lengths = new Float64Array((maxId + 1) * nFields);
  for (let i = 0; i < n; i++) {
    const id = idx.short_ids[i]!;
    paths[id] = docs.path(i);
    kinds[id] = docs.kind(i);
    for (let f = 0; f < nFields; f++) lengths[id * nFields + f] = fieldLength[i * nFields + f]!;
  }
  const nTerms = idx.terms.length;
  let postings = 0;
  for (let t = 0; t < nTerms; t++) postings += counts[t]!;
  const data = new Uint32Array(nTerms * (1 + 2 * nFields) + 2 * postings);
  const termStart = new Uint32Array(nTerms + 1);
  const buf = Buffer.from(idx.postings, 'base64');
  const end = buf.length;
  let pos = 0;
  // Inlined varint reads: this loop runs ~7 million times for 50 repos.
  const next = (): number => {
    let b = buf[pos++]!;
    if (b < 0x80) return b;
    let v = b & 0x7f;
    let mul = 0x80;
    for (;;) {
      if (pos >= end) throw new Error('shard postings are truncated');
      b = buf[pos++]!;
      v += (b & 0x7f) * mul;
      if (b < 0x80) return v;
      mul *= 0x80;
      if (mul > 2 ** 35) throw new Error('shard postings hold an oversized number');
    }
  };
  let k = 0;
  for (let t = 0; t < nTerms; t++) {
    if (pos >= end) throw new Error('shard postings are truncated');
    termStart[t] = k;
    const nf = next();
    if (nf > nFields) throw new Error('shard postings are inconsistent');
    data[k++] = nf;
    let seen = 0;
    for (let f = 0; f < nf; f++) {
      const fieldId = next();
      const count = next();
      seen += count;
      if (fieldId >= nFields || seen > counts[t]! || pos + 2 * count > end) {
        throw new Error('shard postings are inconsistent');
      }
      data[k++] = fieldId;
      data[k++] = count;
      let id = 0;
      for (let j = 0; j < count; j++) {
        id += next();
        if (id > maxId || paths[id] === undefined)
          throw new Error('shard postings name an unknown document');
        data[k++] = id;
      }
      for (let j = 0; j < count; j++) data[k++] = next();
    }
    if (seen !== counts[t]) throw new Error('shard term counts are inconsistent');
  }
  termStart[nTerms] = k;
  if (pos !== end) throw new Error('shard postings are inconsistent');
  return {
    documentCount: idx.document_count,
    fieldIds: idx.field_ids,
    nFields,
    avgFieldLength: idx.avg_field_length,
    terms: idx.terms,
    termStart,
    data: data.subarray(0, k),
    paths,
    kinds,
    lengths,
  };
}

/** minisearch's maps from a packed index. */
function buildFromPacked<T>(p: PackedIndex, options: Options<T>): MiniSearch<T> {
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
  const d = p.data;
  const values: Postings[] = new Array(p.terms.length);
  for (let t = 0; t < p.terms.length; t++) {
    let k = p.termStart[t]!;
    const nf = d[k++]!;
    const fields: Postings = new Map();
    for (let f = 0; f < nf; f++) {
      const fieldId = d[k++]!;
      const count = d[k++]!;
      const byDoc = new Map<number, number>();
      for (let j = 0; j < count; j++) byDoc.set(d[k + j]!, d[k + count + j]!);
      k += 2 * count;
      fields.set(fieldId, byDoc);
    }
    values[t] = fields;
  }
  inner._index._tree = radixFromSorted(p.terms, values);
  inner._index._size = undefined;
  return ms;
}
