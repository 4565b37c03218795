import type MiniSearch from 'minisearch';
import { describe, expect, it } from 'vitest';
import { scorePacked, scoreShard } from '../../src/search/direct-scorer.js';
import { bufferSource, encodeShard, ShardFile } from '../../src/search/shard-file.js';
import { BOOST } from '../../src/search/shard-store.js';
import { corpus, index } from './search-parts.fixture.js';

// direct-scorer.ts on its own: the same BM25 as minisearch's search() (same documents, same
// scores) for OR and AND, with kind filters and discarded documents, on a live index and on
// the packed postings read from a shard file.

const SEED = 7741;
const meta = {
  repo: 'o/n',
  ladder_oid: 'b'.repeat(40),
  options_version: 1,
  minisearch: '7.2.0',
  written_at: '2026-12-01T00:00:00.000Z',
};

type Req = Parameters<typeof scoreShard>[1];
const one = (...words: string[]): Req['groups'] => words.map((w) => [{ term: w, weight: 1 }]);

/** minisearch's own answer for exact terms, as (id, score per matched term) sorted by id. */
function reference(
  ms: MiniSearch<unknown>,
  words: string[],
  mode: 'and' | 'or',
  kinds: Set<string> | null,
) {
  const res = ms.search(words.join(' '), {
    tokenize: (s) => s.split(' '),
    processTerm: (t) => t,
    prefix: false,
    fuzzy: false,
    boost: BOOST,
    combineWith: mode === 'and' ? 'AND' : 'OR',
    ...(kinds ? { filter: (r) => kinds.has(r.kind as string) } : {}),
  });
  // minisearch multiplies a score by the number of query terms matched. The direct scorer does
  // too in OR mode (more words matched ranks higher); in AND mode every hit matched them all,
  // so it leaves that constant out.
  const per = (r: { score: number; queryTerms: string[] }) =>
    mode === 'and' ? r.score / r.queryTerms.length : r.score;
  return res.map((r) => [r.id as string, Number(per(r).toFixed(6))]).sort();
}

const norm = (xs: Array<{ id: string; score: number }> | null) =>
  (xs ?? []).map((r) => [r.id, Number(r.score.toFixed(6))]).sort();

describe(`direct scorer (seed ${SEED})`, () => {
  const docs = corpus(SEED, 400);
  const ms = index(docs);
  const cases: Array<{ words: string[]; mode: 'and' | 'or'; kinds: Set<string> | null }> = [
    { words: ['retry'], mode: 'or', kinds: null },
    { words: ['parse', 'config'], mode: 'and', kinds: null },
    { words: ['parse', 'config'], mode: 'or', kinds: null },
    { words: ['json', 'timeout', 'cache'], mode: 'and', kinds: null },
    { words: ['stream', 'buffer'], mode: 'or', kinds: new Set(['file']) },
    { words: ['ladder', 'rung'], mode: 'and', kinds: new Set(['release', 'changeset']) },
  ];

  it('scores a live index exactly as minisearch search() does', () => {
    for (const c of cases) {
      const got = scoreShard(ms, {
        groups: one(...c.words),
        mode: c.mode,
        kinds: c.kinds,
        boost: BOOST,
      });
      const want = reference(ms as MiniSearch<unknown>, c.words, c.mode, c.kinds);
      expect(want.length, JSON.stringify(c)).toBeGreaterThan(0);
      expect(norm(got), JSON.stringify(c)).toEqual(want);
    }
  });

  it('scores packed postings from a shard file exactly as the live index', () => {
    const { bytes } = encodeShard(ms as unknown as MiniSearch<never>, docs, meta);
    const file = new ShardFile(bufferSource(bytes));
    const packed = file.index(file.head());
    for (const c of cases) {
      const req = { groups: one(...c.words), mode: c.mode, kinds: c.kinds, boost: BOOST };
      expect(norm(scorePacked(packed, req)), JSON.stringify(c)).toEqual(norm(scoreShard(ms, req)));
    }
  });

  it('never returns a discarded document, and AND needs every word', () => {
    const local = index(docs);
    const withBoth = docs.filter((d) => /\bjson\b/.test(d.summary) && /\bcache\b/.test(d.summary));
    expect(withBoth.length).toBeGreaterThan(1);
    local.discard(withBoth[0]!.path);
    const got = scoreShard(local, {
      groups: one('json', 'cache'),
      mode: 'and',
      kinds: null,
      boost: BOOST,
    })!;
    const ids = got.map((r) => r.id);
    expect(ids).not.toContain(withBoth[0]!.path);
    for (const id of ids) {
      const d = docs.find((x) => x.path === id)!;
      const text = `${d.title} ${d.path} ${(d.symbols ?? []).join(' ')} ${d.summary}`.toLowerCase();
      expect(text).toContain('json');
      expect(text).toContain('cache');
    }
  });

  it('weighs an expansion by its weight', () => {
    const full = scoreShard(ms, {
      groups: [[{ term: 'retry', weight: 1 }]],
      mode: 'or',
      kinds: null,
      boost: BOOST,
    })!;
    const half = scoreShard(ms, {
      groups: [[{ term: 'retry', weight: 0.5 }]],
      mode: 'or',
      kinds: null,
      boost: BOOST,
    })!;
    const f = new Map(full.map((r) => [r.id, r.score]));
    for (const r of half) expect(r.score).toBeCloseTo(f.get(r.id)! / 2, 6);
  });
});
