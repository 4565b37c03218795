import { describe, expect, it } from 'vitest';
import {
  decodeShard,
  encodeShard,
  parseShard,
  shardTerms,
  type ShardMeta,
} from '../../src/search/shard-file.js';
import type MiniSearch from 'minisearch';
import type { Options } from 'minisearch';
import { corpus, index, MINI_OPTIONS } from './search-parts.fixture.js';

// shard-file.ts on its own: what is written is what is read back — documents, vocabulary and
// postings — and a file that is not a current shard is refused, never half-read.

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
  const { text, terms } = encodeShard(ms as unknown as MiniSearch<never>, docs, meta);
  const decoded = decodeShard(parseShard(text), MINI_OPTIONS as Options<never>);
  return { docs, ms, text, terms, decoded };
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
    const kinds = new Map<string, number>();
    for (const d of docs) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
    expect(decoded.docs.kindCounts()).toEqual(kinds);
  });

  it('returns the same vocabulary the index holds, sorted, with posting counts', () => {
    const { ms, terms, decoded } = roundTrip(200);
    const fromIndex = shardTerms(ms as unknown as MiniSearch<never>)!;
    expect(terms.terms).toEqual(fromIndex.terms);
    expect([...terms.counts]).toEqual([...fromIndex.counts]);
    expect(decoded.terms!.terms).toEqual(fromIndex.terms);
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
    const { text } = encodeShard(ms as unknown as MiniSearch<never>, kept, meta);
    const decoded = decodeShard(parseShard(text), MINI_OPTIONS as Options<never>);
    expect(decoded.docs.has(gone.path)).toBe(false);
    const hits = (decoded.index() as unknown as MiniSearch<unknown>).search(gone.title);
    expect(hits.map((h) => h.id)).not.toContain(gone.path);
  });

  it('refuses a file that is not a current shard', () => {
    const { text } = roundTrip(5);
    expect(() => parseShard('{"format":"something-else"}')).toThrow(/not a zz search shard/);
    expect(() => parseShard(text.replace('"version":2', '"version":1'))).toThrow(/version/);
    expect(() => parseShard(text.slice(0, text.length / 2))).toThrow();
  });
});
