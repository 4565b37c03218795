import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LadderSearch, MAX_LIMIT, type IndexRung } from '../../src/search/index.js';
import { syntheticRungs, syntheticQueries } from '../../bench/search-corpus.js';

// The order of the scores a search lists, across its relaxed steps (search/query.ts).

const oid = (n: number): string => n.toString(16).padStart(40, '0');
let root: string;
let ls: LadderSearch;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'zz-score-order-'));
});
afterAll(async () => {
  await ls?.close();
  await rm(root, { recursive: true, force: true, maxRetries: 5 });
});
const openSearch = (opts: ConstructorParameters<typeof LadderSearch>[0]) =>
  (ls = new LadderSearch(opts));
const freshDir = () => mkdtemp(join(root, 'case-'));

describe('search scores', () => {
  it('lists scores that never rise down the results, relaxed steps included, page after page', async () => {
    // A relaxed step (identifier parts, all words but one, any word) ranks below the stricter
    // ones; its best match once showed a higher score than their worst, which reads as out of
    // order to a caller that sorts or cuts by score.
    const ls = openSearch({ cacheDir: await freshDir(), persistDelayMs: 0 });
    for (let r = 0; r < 3; r++)
      await ls.setRepo(`syn/r${r}`, oid(500 + r), syntheticRungs(r, 400) as IndexRung[]);
    let relaxedChecked = 0;
    for (const query of [...syntheticQueries(60, 3), 'empty configuration', 'parse the config']) {
      const scores: number[] = [];
      let cursor: string | undefined;
      do {
        const page = ls.search({ query, limit: MAX_LIMIT, ...(cursor ? { cursor } : {}) });
        for (const h of page.hits) scores.push(h.score);
        cursor = page.next_cursor ?? undefined;
      } while (cursor && scores.length < 300);
      for (let i = 1; i < scores.length; i++)
        expect(scores[i]!).toBeLessThanOrEqual(scores[i - 1]!);
      if (query.includes(' ')) relaxedChecked++;
    }
    expect(relaxedChecked).toBeGreaterThan(10);
  });
});
