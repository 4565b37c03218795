import SearchableMap from 'minisearch/SearchableMap';
import { describe, expect, it } from 'vitest';
import { TermRouter } from '../../src/search/term-router.js';
import { prng } from '../helpers/seeded.js';

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

  // The router walks a sorted array; minisearch walks its radix tree. Same terms, same order.
  const SEED = 4242;
  it(`prefix and fuzzy lookups match minisearch's SearchableMap (seed ${SEED})`, () => {
    const r = prng(SEED);
    const alphabet = 'aabcdeeilnoprstu';
    const word = (min: number, max: number) =>
      Array.from(
        { length: min + Math.floor(r() * (max - min + 1)) },
        () => alphabet[Math.floor(r() * alphabet.length)]!,
      ).join('');
    // Words sharing stems, as a code vocabulary does (parse, parser, parsers, parsing).
    const stems = Array.from({ length: 300 }, () => word(2, 6));
    const vocab = new Set<string>();
    for (const st of stems) {
      vocab.add(st);
      for (let i = 0; i < 4; i++) vocab.add(st + word(1, 5));
    }
    const sorted = [...vocab].sort((a, b) => (a < b ? -1 : 1));
    const built = TermRouter.build([
      { shard: 0, terms: { terms: sorted, counts: new Uint32Array(sorted.length).fill(1) } },
    ]);
    const reference = new SearchableMap<number>();
    sorted.forEach((t, i) => reference.set(t, i));
    let fuzzyHits = 0;
    for (let q = 0; q < 400; q++) {
      const query = q % 3 === 0 ? sorted[Math.floor(r() * sorted.length)]! : word(1, 9);
      for (const distance of [1, 2]) {
        const want = [...reference.fuzzyGet(query, distance)]
          .filter(([, [, d]]) => d > 0)
          .map(([t, [row]]) => [t, row]);
        const got = built
          .expand(query, { prefix: false, fuzzy: distance })
          .filter((e) => e.term !== query)
          .map((e) => [e.term, e.row]);
        // expand() keeps the best 24; compare those whole lists only when nothing was cut.
        if (want.length <= 24) expect(got, `${query}~${distance}`).toEqual(want);
        fuzzyHits += want.length;
      }
      const wantPrefix = [...reference.atPrefix(query)]
        .filter(([t]) => t !== query)
        .map(([t]) => t);
      const gotPrefix = built
        .expand(query, { prefix: true, fuzzy: 0 })
        .filter((e) => e.term !== query)
        .map((e) => e.term);
      // expand() drops compounds of an indexed word; every term it keeps is a prefix match,
      // in minisearch's order.
      expect(
        gotPrefix.every((t) => wantPrefix.includes(t)),
        query,
      ).toBe(true);
      const order = wantPrefix.filter((t) => gotPrefix.includes(t));
      if (wantPrefix.length <= 24) expect(gotPrefix, query).toEqual(order);
    }
    expect(fuzzyHits).toBeGreaterThan(100);
  });
});
