import { describe, expect, it } from 'vitest';
import { TermRouter } from '../../src/search/term-router.js';

// term-router.ts on its own: the union of shard vocabularies, which shards hold a term and how
// often, and the prefix and fuzzy expansions a query word gets (with minisearch's weights).

const terms = (list: Array<[string, number]>) => {
  const sorted = [...list].sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return { terms: sorted.map((t) => t[0]), counts: Uint32Array.from(sorted.map((t) => t[1])) };
};

const router = TermRouter.build([
  {
    shard: 3,
    terms: terms([
      ['request', 2],
      ['retry', 5],
      ['retries', 1],
      ['timeout', 4],
    ]),
  },
  {
    shard: 1,
    terms: terms([
      ['request', 7],
      ['requesthandler', 1],
      ['handler', 3],
      ['json', 2],
    ]),
  },
  { shard: 9, terms: terms([]) },
]);

const shardsOf = (term: string) => {
  const row = router.expand(term, { prefix: false, fuzzy: 0 })[0]!.row;
  const out: Array<[number, number]> = [];
  router.forEachShard(row, (s, n) => out.push([s, n]));
  return out;
};

describe('TermRouter', () => {
  it('merges vocabularies: each term once, with every shard holding it', () => {
    expect(router.size).toBe(7);
    expect(router.terms).toEqual([...router.terms].sort());
    expect(shardsOf('request').sort()).toEqual([
      [1, 7],
      [3, 2],
    ]);
    expect(shardsOf('json')).toEqual([[1, 2]]);
    const row = router.expand('request', { prefix: false, fuzzy: 0 })[0]!.row;
    expect(router.frequency(row)).toBe(9);
  });

  it('expands nothing for a term no shard holds, and an empty router holds nothing', () => {
    expect(router.expand('zebra', { prefix: true, fuzzy: 1 })).toEqual([]);
    expect(TermRouter.empty().size).toBe(0);
    expect(TermRouter.empty().expand('retry', { prefix: true, fuzzy: 2 })).toEqual([]);
  });

  it('expands a prefix to longer terms with a lower weight, the term itself at weight 1', () => {
    const exps = router.expand('retr', { prefix: true, fuzzy: 0 });
    const byTerm = new Map(exps.map((e) => [e.term, e.weight]));
    expect([...byTerm.keys()].sort()).toEqual(['retries', 'retry']);
    expect(byTerm.get('retry')!).toBeGreaterThan(byTerm.get('retries')!);
    expect(byTerm.get('retry')!).toBeLessThan(1);
    const exact = router.expand('retry', { prefix: true, fuzzy: 0 });
    expect(exact.find((e) => e.term === 'retry')!.weight).toBe(1);
  });

  it('does not expand a whole word to a compound of it and another indexed word', () => {
    const exps = router.expand('request', { prefix: true, fuzzy: 0 }).map((e) => e.term);
    expect(exps).toEqual(['request']); // not requesthandler: `handler` is indexed too
  });

  it('expands by edit distance only when asked, within the distance', () => {
    expect(router.expand('timeuot', { prefix: false, fuzzy: 0 })).toEqual([]);
    const one = router.expand('timeoot', { prefix: false, fuzzy: 1 }).map((e) => e.term);
    expect(one).toEqual(['timeout']);
    const w = router.expand('timeoot', { prefix: false, fuzzy: 1 })[0]!.weight;
    expect(w).toBeGreaterThan(0);
    expect(w).toBeLessThan(1);
    expect(router.expand('tmeuot', { prefix: false, fuzzy: 1 })).toEqual([]);
  });
});
