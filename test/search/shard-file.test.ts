import { describe, expect, it } from 'vitest';
import {
  bufferSource,
  buildFromPacked,
  encodeShard,
  ShardDocs,
  ShardFile,
  shardTerms,
  type ShardMeta,
} from '../../src/search/shard-file.js';
import type MiniSearch from 'minisearch';
import type { Options } from 'minisearch';
import { corpus, index, MINI_OPTIONS } from './search-parts.fixture.js';

// shard-file.ts on its own: what is written is what is read back — documents, vocabulary and
// postings — and a file that is not a current shard is refused, never half-read.

/** A shard file read back as a process serving it would: head, index section, documents. */
function readBack(bytes: Buffer) {
  const file = new ShardFile(bufferSource(bytes));
  const head = file.head();
  const packed = file.index(head);
  const docs = new ShardDocs(head.docCount, file, () => packed);
  return {
    meta: file.meta,
    head,
    packed,
    docs,
    index: () => buildFromPacked(packed, MINI_OPTIONS as Options<never>),
  };
}

const SEED = 20261201;
const meta: ShardMeta = {
  repo: 'o/n',
  ladder_oid: 'a'.repeat(40),
  options_version: 1,
  minisearch: '7.2.0',
  written_at: '2026-12-01T00:00:00.000Z',
};

function roundTrip(n: number) {
  const docs = corpus(SEED, n);
  const ms = index(docs);
  const { bytes, terms } = encodeShard(ms as unknown as MiniSearch<never>, docs, meta);
  return { docs, ms, bytes, terms, decoded: readBack(bytes) };
}

describe(`shard-file (seed ${SEED})`, () => {
  it('reads back every document, field for field, and its kind counts', () => {
    const { docs, decoded } = roundTrip(300);
    expect(decoded.meta).toEqual(meta);
    expect(decoded.docs.size).toBe(docs.length);
    for (const d of docs) {
      expect(decoded.docs.has(d.path)).toBe(true);
      expect(decoded.docs.get(d.path)).toEqual(d);
    }
    expect(decoded.docs.get('nope.ts')).toBeUndefined();
    expect([...decoded.docs.values()]).toEqual(docs);
    const kinds = new Map<string, number>();
    for (const d of docs) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
    expect(decoded.head.kinds).toEqual(kinds);
    expect(decoded.head.docCount).toBe(docs.length);
  });

  it('finds each document by path, byte for byte, and no path it does not hold', () => {
    // Paths are kept as UTF-8 bytes with an open-addressing table: neighbours, prefixes,
    // multi-byte characters and a thousand rows (collisions) must all resolve exactly.
    const base = corpus(SEED, 1000);
    const tricky = [
      'src/a.ts',
      'src/a.tsx',
      'src/a.t',
      'dóc/ünï 码.md',
      'dóc/ünï 码.m',
      'x',
      'x/y',
    ];
    const docs = [...base, ...tricky.map((path) => ({ ...base[0]!, path, title: `t ${path}` }))];
    const ms = index(docs);
    const decoded = readBack(encodeShard(ms as unknown as MiniSearch<never>, docs, meta).bytes);
    for (const d of docs) expect(decoded.docs.get(d.path)).toEqual(d);
    for (const miss of ['src/a', 'src/a.tsxx', 'dóc/ünï 码', 'dóc/üni 码.md', '', 'X', 'y']) {
      expect(decoded.docs.has(miss)).toBe(false);
      expect(decoded.docs.get(miss)).toBeUndefined();
    }
  });

  it('returns the same vocabulary the index holds, sorted, with posting counts', () => {
    const { ms, terms, decoded } = roundTrip(200);
    const fromIndex = shardTerms(ms as unknown as MiniSearch<never>)!;
    expect(terms.terms).toEqual(fromIndex.terms);
    expect([...terms.counts]).toEqual([...fromIndex.counts]);
    expect(decoded.head.terms.terms).toEqual(fromIndex.terms);
    expect([...decoded.head.terms.counts]).toEqual([...fromIndex.counts]);
    expect([...terms.terms].sort()).toEqual(terms.terms);
  });

  it('decodes postings that answer queries exactly as the original index', () => {
    const { ms, decoded } = roundTrip(250);
    const again = decoded.index() as unknown as MiniSearch<unknown>;
    for (const q of ['retry', 'parse config', 'json', 'cursor ladder']) {
      const a = ms.search(q, { combineWith: 'AND' }).map((r) => [r.id, r.score.toFixed(6)]);
      const b = again.search(q, { combineWith: 'AND' }).map((r) => [r.id, r.score.toFixed(6)]);
      expect(b).toEqual(a);
      expect(a.length).toBeGreaterThan(0);
    }
  });

  it('leaves discarded documents out of the file', () => {
    const docs = corpus(SEED, 50);
    const ms = index(docs);
    const gone = docs[7]!;
    ms.discard(gone.path);
    const kept = docs.filter((d) => d !== gone);
    const { bytes } = encodeShard(ms as unknown as MiniSearch<never>, kept, meta);
    const decoded = readBack(bytes);
    expect(decoded.docs.has(gone.path)).toBe(false);
    const hits = (decoded.index() as unknown as MiniSearch<unknown>).search(gone.title);
    expect(hits.map((h) => h.id)).not.toContain(gone.path);
  });

  it('refuses a file that is not a current shard, and notices damage past the head', () => {
    const { bytes } = roundTrip(40);
    const open = (b: Buffer) => new ShardFile(bufferSource(b));
    expect(() => open(Buffer.from('{"format":"something-else"}\n'))).toThrow(
      /not a zz search shard/,
    );
    expect(() => open(Buffer.from('no preamble at all'))).toThrow(/not a zz search shard/);
    const patched = (find: string, replace: string) => {
      const copy = Buffer.from(bytes);
      copy.write(replace, bytes.indexOf(find));
      return copy;
    };
    expect(() => open(patched('"version":3', '"version":2'))).toThrow(/version/);
    // Cut anywhere, the section lengths no longer add up.
    expect(() => open(bytes.subarray(0, bytes.length - 1))).toThrow(/truncated/);
    expect(() => open(bytes.subarray(0, bytes.length / 2))).toThrow();
    // A garbled index section is refused when read, not half-used.
    const file = open(patched('"kinds":"', '"kinds":"Z'));
    expect(() => file.index(file.head())).toThrow(/inconsistent/);
  });

  it('refuses a short id flipped past the next id instead of allocating for it', () => {
    // One 4-byte flip in short_ids[0] once made the reader allocate ~2 GiB (hostile review).
    const { bytes } = roundTrip(40);
    const pre = JSON.parse(bytes.subarray(0, bytes.indexOf('\n')).toString('utf8')) as {
      head_bytes: number;
      index_bytes: number;
    };
    const dataAt = bytes.indexOf('\n') + 1 + pre.head_bytes + 1 + pre.index_bytes + 1;
    const flip = (id: number) => {
      const copy = Buffer.from(bytes);
      new DataView(copy.buffer, copy.byteOffset, copy.byteLength).setUint32(dataAt, id, true);
      return new ShardFile(bufferSource(copy));
    };
    const before = process.memoryUsage().rss;
    for (const id of [0x1fffffff, 40 * 16 + 1024, 0xffffffff]) {
      const file = flip(id);
      expect(() => file.index(file.head())).toThrow(/inconsistent/);
    }
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    // The untouched file reads, so the offset above is short_ids[0]'s.
    const whole = new ShardFile(bufferSource(Buffer.from(bytes)));
    expect(whole.index(whole.head()).idRows.length).toBeLessThanOrEqual(41);
  });
});
