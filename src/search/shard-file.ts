import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import type MiniSearch from 'minisearch';
import { internalsOf, type Postings } from './minisearch-internals.js';
import {
  KIND_CODES,
  kindOfCode,
  pathOfRow,
  rowCount,
  rowOf,
  VarintReader,
  type PackedIndex,
} from './packed-index.js';
import { compareTerms } from './radix.js';

export {
  buildFromPacked,
  findTerm,
  rowOf,
  termPostings,
  type FieldPostings,
  type PackedIndex,
} from './packed-index.js';

// The on-disk form of one repo's shard, laid out so that a process reads only what it uses:
//
//   <preamble JSON>\n<head JSON>\n<index JSON>\n<docs>
//
// - preamble: format, version, the shard's meta and the byte length of each section;
// - head: document count, kind counts and the sorted vocabulary with posting counts: all the
//   cross-shard router needs, so a cold start reads ~8% of each file;
// - index: per-document paths, kinds, field lengths and offsets into `docs`, and the postings
//   as varints with a byte offset per term. Read when a query first touches the shard; the
//   postings stay packed in one Buffer and a term is decoded when it is scored;
// - docs: one small JSON array per document (title, summary, symbols, anchor), read row by row
//   for the hits a page shows. Summaries are most of a shard's bytes and never sit in memory.
//
// minisearch's own toJSON()/loadJSON() cost ~300 ms and ~60 ms per 2k-rung shard (an object
// per term and field; the GC dominates): the maps are rebuilt from the packed postings
// (minisearch-internals.ts) only when a shard changes.

export const SHARD_FORMAT = 'zz-search-shard';
export const SHARD_FORMAT_VERSION = 3;
// A preamble is a few hundred bytes; a longer first line is not ours.
const MAX_PREAMBLE_BYTES = 16 * 1024;

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

interface Preamble extends ShardMeta {
  format: typeof SHARD_FORMAT;
  version: number;
  /** Byte lengths of the three sections that follow the preamble's newline. */
  head_bytes: number;
  index_bytes: number;
  data_bytes: number;
  docs_bytes: number;
}

interface HeadSection {
  doc_count: number;
  /**
   * What the shard is keyed on besides the ladder oid (opaque here: the Ladder fold's role
   * inputs, core/ladder/role-key.ts); null or absent when it was written without.
   */
  inputs?: string | null;
  kinds: Record<string, number>;
  terms: string[];
  /** Per term, its (field, doc) postings, base64 varints. */
  term_counts: string;
}

/** How far above the document count a shard's short ids may reach (see ShardFile.index). */
const MAX_ID_SPREAD = 16;

interface IndexSection {
  document_count: number;
  next_id: number;
  field_ids: Record<string, number>;
  avg_field_length: number[];
  /** One character per row (KIND_CODES); rows are documents in file order. */
  kinds: string;
}

// The data section, binary (platform byte order: the cache never leaves this machine), u32s:
//   short_ids[n], field_length[n × fields], doc_offsets[n + 1], term_offsets[terms + 1],
//   path_offsets[n + 1], then the paths (UTF-8, path_offsets into it) and the postings
//   (varints; per term: n fields, then per field: field id, n docs, doc ids (first absolute,
//   then deltas), freqs; term_offsets into it). Row i's document in the docs section is
//   [doc_offsets[i], doc_offsets[i + 1]).
// Read with three reads and no parsing: the u32s, the paths and the postings, each into its own array.

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
 * vacuum); the returned terms are the shard's vocabulary for the router. Throws when
 * minisearch's internals are not the expected shape (the shard is then kept in memory only).
 */
export function encodeShard(
  ms: MiniSearch<never>,
  docs: Iterable<ShardDoc>,
  meta: ShardMeta,
  inputs: string | null = null,
): { bytes: Buffer; terms: ShardTerms } {
  const inner = internalsOf(ms);
  if (inner === null) throw new Error('minisearch internals changed: cannot write a shard');
  const list = [...docs];
  const nFields = Object.keys(inner._fieldIds).length;
  const shortIds: number[] = [];
  const lengths = new Uint32Array(list.length * nFields);
  const kinds: Record<string, number> = {};
  const docParts: Buffer[] = [];
  const docOffsets = new Uint32Array(list.length + 1);
  let docBytes = 0;
  list.forEach((d, i) => {
    const id = inner._idToShortId.get(d.path);
    if (id === undefined) throw new Error(`shard doc ${d.path} is not in the index`);
    shortIds.push(id);
    const fl = inner._fieldLength.get(id) ?? [];
    for (let f = 0; f < nFields; f++) lengths[i * nFields + f] = fl[f] ?? 0;
    kinds[d.kind] = (kinds[d.kind] ?? 0) + 1;
    const row = Buffer.from(
      JSON.stringify([
        d.title,
        d.summary,
        d.symbols && d.symbols.length > 0 ? d.symbols.join('\n') : null,
        d.anchor ? `${d.anchor.commit}:${d.anchor.oid}` : null,
      ]),
    );
    docOffsets[i] = docBytes;
    docBytes += row.length;
    docParts.push(row);
  });
  docOffsets[list.length] = docBytes;

  const rows: Array<[string, Postings]> = [];
  for (const entry of inner._index) rows.push(entry);
  rows.sort((a, b) => compareTerms(a[0], b[0]));
  const out = new VarintWriter();
  const terms: string[] = [];
  const counts: number[] = [];
  const termOffsets: number[] = [];
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
    termOffsets.push(out.length);
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
  termOffsets.push(out.length);
  const head: HeadSection = {
    doc_count: list.length,
    inputs,
    kinds,
    terms,
    term_counts: varintsToBase64(counts),
  };
  const index: IndexSection = {
    document_count: inner._documentCount,
    next_id: inner._nextId,
    field_ids: inner._fieldIds,
    avg_field_length: inner._avgFieldLength,
    kinds: list.map((d) => KIND_CODES[d.kind] ?? '?').join(''),
  };
  const pathBytes = list.map((d) => Buffer.from(d.path));
  const pathOffsets = new Uint32Array(list.length + 1);
  pathBytes.forEach((b, i) => (pathOffsets[i + 1] = pathOffsets[i]! + b.length));
  const u32 = (a: Uint32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const data = [
    u32(Uint32Array.from(shortIds)),
    u32(lengths),
    u32(docOffsets),
    u32(Uint32Array.from(termOffsets)),
    u32(pathOffsets),
    ...pathBytes,
    Buffer.from(out.result()),
  ];
  const dataBytes = data.reduce((n, b) => n + b.length, 0);
  const headBytes = Buffer.from(JSON.stringify(head));
  const indexBytes = Buffer.from(JSON.stringify(index));
  const preamble: Preamble = {
    format: SHARD_FORMAT,
    version: SHARD_FORMAT_VERSION,
    ...meta,
    head_bytes: headBytes.length,
    index_bytes: indexBytes.length,
    data_bytes: dataBytes,
    docs_bytes: docBytes,
  };
  const nl = Buffer.from('\n');
  const bytes = Buffer.concat([
    Buffer.from(JSON.stringify(preamble)),
    nl,
    headBytes,
    nl,
    indexBytes,
    nl,
    ...data,
    ...docParts,
  ]);
  return { bytes, terms: { terms, counts: Uint32Array.from(counts) } };
}

/** Where a shard file's bytes come from: an open file (kept open) or a buffer (tests). */
export interface ShardSource {
  readonly size: number;
  read(pos: number, length: number): Buffer;
  /** Fills `into` from byte `pos` (throws past the end). */
  readInto(pos: number, into: Uint8Array): void;
  close(): void;
}

/**
 * An open shard file. The descriptor stays open while the shard is served: when another
 * process replaces the file (an atomic rename), reads keep seeing the file that was opened,
 * never a mix of two.
 */
export function fileSource(path: string): ShardSource {
  const fd = openSync(path, 'r');
  let closed = false;
  try {
    const size = fstatSync(fd).size;
    return {
      size,
      read(pos, length) {
        const buf = Buffer.allocUnsafe(length);
        this.readInto(pos, buf);
        return buf;
      },
      readInto(pos, into) {
        if (closed) throw new Error('shard file is closed');
        let done = 0;
        while (done < into.length) {
          const n = readSync(fd, into, done, into.length - done, pos + done);
          if (n === 0) throw new Error('shard file is truncated');
          done += n;
        }
      },
      close() {
        if (closed) return;
        closed = true;
        closeSync(fd);
      },
    };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

export function bufferSource(bytes: Buffer): ShardSource {
  return {
    size: bytes.length,
    read: (pos, length) => {
      if (pos + length > bytes.length) throw new Error('shard file is truncated');
      return bytes.subarray(pos, pos + length);
    },
    readInto: (pos, into) => {
      if (pos + into.length > bytes.length) throw new Error('shard file is truncated');
      into.set(bytes.subarray(pos, pos + into.length));
    },
    close: () => {},
  };
}

/** What a cold start reads of a shard: enough to route queries to it. */
export interface ShardHead {
  docCount: number;
  inputs: string | null;
  kinds: Map<string, number>;
  terms: ShardTerms;
}

export class ShardFile {
  readonly meta: ShardMeta;
  private readonly headAt: number;
  private readonly indexAt: number;
  private readonly dataAt: number;
  private readonly docsAt: number;

  private readonly pre: Preamble;

  /** Reads and checks the preamble; throws when this is not a whole current shard file. */
  constructor(private readonly src: ShardSource) {
    const { preamble: p, end } = readPreamble(src);
    this.pre = p;
    this.meta = {
      repo: p.repo,
      ladder_oid: p.ladder_oid,
      options_version: p.options_version,
      minisearch: p.minisearch,
      written_at: p.written_at,
    };
    this.headAt = end + 1;
    this.indexAt = this.headAt + p.head_bytes + 1;
    this.dataAt = this.indexAt + p.index_bytes + 1;
    this.docsAt = this.dataAt + p.data_bytes;
    if (this.docsAt + p.docs_bytes !== src.size) throw new Error('shard file is truncated');
  }

  close(): void {
    this.src.close();
  }

  head(): ShardHead {
    const h = JSON.parse(
      this.src.read(this.headAt, this.pre.head_bytes).toString('utf8'),
    ) as HeadSection;
    if (!Array.isArray(h.terms) || typeof h.doc_count !== 'number') {
      throw new Error('shard head is malformed');
    }
    const n = h.terms.length;
    for (let t = 1; t < n; t++) {
      if (!(h.terms[t - 1]! < h.terms[t]!)) throw new Error('shard terms are not sorted');
    }
    const cr = new VarintReader(Buffer.from(h.term_counts, 'base64'));
    const counts = new Uint32Array(n);
    for (let t = 0; t < n; t++) counts[t] = cr.next();
    if (!cr.done) throw new Error('shard term counts are inconsistent');
    const kinds = new Map<string, number>();
    for (const [k, c] of Object.entries(h.kinds ?? {})) {
      if (KIND_CODES[k] === undefined || typeof c !== 'number')
        throw new Error('shard kinds are malformed');
      kinds.set(k, c);
    }
    const inputs = typeof h.inputs === 'string' ? h.inputs : null;
    return { docCount: h.doc_count, inputs, kinds, terms: { terms: h.terms, counts } };
  }

  /**
   * The index and data sections, checked for consistency (postings as they are decoded). Each
   * part is read straight into the array it stays in: no copy of the whole data section is
   * made and dropped per load (that churn showed as RSS the allocator kept).
   */
  index(head: ShardHead): PackedIndex {
    const idx = JSON.parse(
      this.src.read(this.indexAt, this.pre.index_bytes).toString('utf8'),
    ) as IndexSection;
    const n = head.docCount;
    const nTerms = head.terms.terms.length;
    const nFields = Object.keys(idx.field_ids ?? {}).length;
    if (typeof idx.kinds !== 'string' || idx.kinds.length !== n || nFields === 0) {
      throw new Error('shard index is inconsistent');
    }
    const inconsistent = () => new Error('shard index is inconsistent');
    // short_ids, field lengths, doc offsets, term offsets, path offsets: one read of u32s.
    const u32Count = n + n * nFields + (n + 1) + (nTerms + 1) + (n + 1);
    if (u32Count * 4 > this.pre.data_bytes) throw inconsistent();
    const block = new Uint32Array(u32Count);
    this.src.readInto(this.dataAt, new Uint8Array(block.buffer));
    let at = 0;
    const take = (count: number): Uint32Array => block.subarray(at, (at += count));
    const shortIds = take(n);
    const fieldLength = take(n * nFields);
    // Copied out (slice): these stay while the section is loaded, the rest of `block` does not.
    const docOffsets = take(n + 1).slice();
    const termOffsets = take(nTerms + 1).slice();
    const pathOffsets = take(n + 1).slice();
    const pathsAt = this.dataAt + u32Count * 4;
    const postingsAt = pathsAt + pathOffsets[n]!;
    if (
      docOffsets[n] !== this.pre.docs_bytes ||
      postingsAt + termOffsets[nTerms]! !== this.dataAt + this.pre.data_bytes
    ) {
      throw inconsistent();
    }
    for (let i = 0; i < n; i++) {
      if (docOffsets[i]! > docOffsets[i + 1]! || pathOffsets[i]! > pathOffsets[i + 1]!) {
        throw inconsistent();
      }
    }
    for (let t = 0; t < nTerms; t++) {
      if (termOffsets[t]! >= termOffsets[t + 1]!) throw inconsistent();
    }
    // Hazard: the ids size two arrays, so one flipped u32 (0x1FFFFFFF) allocated 2 GiB (found
    // in review). They are minisearch's short ids, below its next id, which grows with every
    // replaced or discarded document and never shrinks: past MAX_ID_SPREAD per document the
    // shard counts as damaged and is rebuilt from the rungs, which numbers them afresh.
    const nextId = idx.next_id;
    if (!Number.isSafeInteger(nextId) || nextId < n || nextId > n * MAX_ID_SPREAD + 1024) {
      throw inconsistent();
    }
    let maxId = -1;
    for (const id of shortIds) {
      if (id >= nextId) throw inconsistent();
      if (id > maxId) maxId = id;
    }
    const idRows = new Int32Array(maxId + 1).fill(-1);
    const lengths = new Uint32Array((maxId + 1) * nFields);
    for (let i = 0; i < n; i++) {
      const id = shortIds[i]!;
      if (kindOfCode(idx.kinds[i]!) === undefined || idRows[id] !== -1) throw inconsistent();
      idRows[id] = i;
      for (let f = 0; f < nFields; f++) lengths[id * nFields + f] = fieldLength[i * nFields + f]!;
    }
    const pathBytes = Buffer.allocUnsafeSlow(pathOffsets[n]!);
    this.src.readInto(pathsAt, pathBytes);
    const postings = Buffer.allocUnsafeSlow(termOffsets[nTerms]!);
    this.src.readInto(postingsAt, postings);
    return {
      documentCount: idx.document_count,
      fieldIds: idx.field_ids,
      nFields,
      avgFieldLength: idx.avg_field_length,
      terms: head.terms.terms,
      termOffsets,
      postings,
      idRows,
      lengths,
      pathBytes,
      pathOffsets,
      rowKinds: idx.kinds,
      docOffsets,
      rows: null,
      bytes:
        postings.length +
        pathBytes.length +
        lengths.byteLength +
        idRows.byteLength +
        termOffsets.byteLength +
        docOffsets.byteLength +
        pathOffsets.byteLength +
        idx.kinds.length * 2,
    };
  }

  /** The document at `row`, read from the docs section. */
  doc(p: PackedIndex, row: number): ShardDoc {
    const start = p.docOffsets[row]!;
    const end = p.docOffsets[row + 1]!;
    const r = JSON.parse(
      this.src.read(this.docsAt + start, end - start).toString('utf8'),
    ) as unknown;
    if (!Array.isArray(r) || typeof r[0] !== 'string' || typeof r[1] !== 'string') {
      throw new Error('shard document is malformed');
    }
    const [title, summary, symbols, anchor] = r as [string, string, unknown, unknown];
    const doc: ShardDoc = {
      path: pathOfRow(p, row),
      kind: kindOfCode(p.rowKinds[row]!)!,
      title,
      summary,
    };
    if (typeof symbols === 'string' && symbols.length > 0) doc.symbols = symbols.split('\n');
    if (typeof anchor === 'string') {
      const i = anchor.indexOf(':');
      doc.anchor = { commit: anchor.slice(0, i), oid: anchor.slice(i + 1) };
    }
    return doc;
  }
}

function readPreamble(src: ShardSource): { preamble: Preamble; end: number } {
  const first = src.read(0, Math.min(src.size, MAX_PREAMBLE_BYTES));
  const nl = first.indexOf(0x0a);
  if (nl < 0) throw new Error('not a zz search shard');
  let p: Preamble;
  try {
    p = JSON.parse(first.subarray(0, nl).toString('utf8')) as Preamble;
  } catch {
    throw new Error('not a zz search shard');
  }
  if (p === null || typeof p !== 'object' || p.format !== SHARD_FORMAT) {
    throw new Error('not a zz search shard');
  }
  if (p.version !== SHARD_FORMAT_VERSION) throw new Error(`shard format version ${p.version}`);
  for (const k of ['head_bytes', 'index_bytes', 'data_bytes', 'docs_bytes'] as const) {
    if (!Number.isInteger(p[k]) || p[k] < 0) throw new Error('shard preamble is malformed');
  }
  return { preamble: p, end: nl };
}

/** The documents of a file-backed shard: read from its docs section by row, on demand. */
export class ShardDocs {
  constructor(
    readonly size: number,
    private readonly file: ShardFile,
    private readonly packed: () => PackedIndex,
  ) {}

  has(path: string): boolean {
    return rowOf(this.packed(), path) !== undefined;
  }

  get(path: string): ShardDoc | undefined {
    const p = this.packed();
    const row = rowOf(p, path);
    return row === undefined ? undefined : this.file.doc(p, row);
  }

  *values(): IterableIterator<ShardDoc> {
    const p = this.packed();
    for (let i = 0; i < rowCount(p); i++) yield this.file.doc(p, i);
  }
}
