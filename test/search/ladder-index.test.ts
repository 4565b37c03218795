import { readFile, stat, writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import type { LadderSearch } from '../../src/search/index.js';
import {
  MAX_LIMIT,
  OPTIONS_VERSION,
  type IndexRung,
  type SearchHit,
} from '../../src/search/index.js';
import { bufferSource, ShardFile } from '../../src/search/shard-file.js';
import { syntheticRungs, syntheticQueries } from '../../bench/search-corpus.js';
import {
  oid,
  anchor,
  API,
  WEB,
  freshDir,
  openSearch,
  twoRepos,
  paths,
  expectInvalid,
  ladderSearchTestbed,
} from './ladder-search.fixture.js';

// LadderSearch (src/search): queries, persisted shards, lazy loading under a memory budget,
// incremental updates, its scorers and the order of one repository's writes. The testbed (two
// small repositories' rungs, a cache directory per case): ladder-search.fixture.ts.

ladderSearchTestbed();

describe('LadderSearch queries', () => {
  it('finds rungs by words in summary, title, path and symbols, across repos', async () => {
    const ls = await twoRepos();
    const page = ls.search({ query: 'configuration' });
    const got = paths(page.hits);
    expect(got).toContain('acme/api:src/config/parse-config.ts');
    expect(got).toContain('acme/web:src/config.ts');
    for (const h of page.hits) {
      expect(typeof h.summary).toBe('string');
      expect(h.score).toBeGreaterThan(0);
    }
    const hit = page.hits.find((h) => h.path === 'src/config/parse-config.ts')!;
    expect(hit).toMatchObject({
      repo: 'acme/api',
      kind: 'file',
      anchor: anchor(3),
      title: 'parse-config.ts',
    });
    // Scores never increase down the list.
    for (let i = 1; i < page.hits.length; i++)
      expect(page.hits[i]!.score).toBeLessThanOrEqual(page.hits[i - 1]!.score);
  });

  it('splits camelCase and snake_case identifiers', async () => {
    const ls = await twoRepos();
    expect(paths(ls.search({ query: 'parseConfigFile' }).hits)[0]).toBe(
      'acme/api:src/config/parse-config.ts',
    );
    // A part of an identifier finds it.
    expect(paths(ls.search({ query: 'migrations' }).hits)).toContain('acme/api:src/db/migrate.py');
    expect(paths(ls.search({ query: 'cart view' }).hits)[0]).toBe('acme/web:src/checkout/cart.tsx');
    // A prefix of the whole identifier (last word is a prefix).
    expect(paths(ls.search({ query: 'parseConf' }).hits)[0]).toBe(
      'acme/api:src/config/parse-config.ts',
    );
    // The identifier in a query matches prose that spells out its parts.
    expect(paths(ls.search({ query: 'rotateCredentials' }).hits)).toEqual([
      'acme/api:docs/guide.md',
    ]);
    // Path segments are words.
    expect(paths(ls.search({ query: 'checkout' }).hits)).toContain(
      'acme/web:src/checkout/cart.tsx',
    );
  });

  it('is fuzzy for longer words only and prefix on the last word', async () => {
    const ls = await twoRepos();
    expect(paths(ls.search({ query: 'migratoins' }).hits)).toContain('acme/api:src/db/migrate.py');
    expect(paths(ls.search({ query: 'catalog' }).hits)).toContain('acme/web:_repo'); // prefix of catalogue
    expect(paths(ls.search({ query: 'sever' }).hits)).toContain('acme/api:src/http/server.ts');
    // Four letters are too few for a typo to be told from another word: "cort" is not "cart".
    expect(ls.search({ query: 'cort' }).hits).toEqual([]);
  });

  it('ANDs words and falls back to OR when nothing has them all', async () => {
    const ls = await twoRepos();
    // The one rung with both words first; rungs with only one follow, below it.
    const both = ls.search({ query: 'empty configuration' }).hits;
    expect(paths(both)[0]).toBe('acme/api:_changesets/' + oid(77));
    expect(both.length).toBeGreaterThan(1);
    expect(paths(both.slice(1))).toEqual(
      expect.arrayContaining(
        paths(ls.search({ query: 'configuration' }).hits).filter(
          (p) => p !== 'acme/api:_changesets/' + oid(77),
        ),
      ),
    );
    const or = paths(ls.search({ query: 'cart zebra' }).hits);
    expect(or).toEqual(['acme/web:src/checkout/cart.tsx']);
  });

  it('filters by kind and by repo', async () => {
    const ls = await twoRepos();
    const releases = ls.search({ query: 'configuration', kind: 'release' }).hits;
    expect(paths(releases)).toEqual(['acme/api:_releases/v1.2.0']);
    const two = ls.search({ query: 'configuration', kind: ['release', 'changeset'] }).hits;
    expect(new Set(two.map((h) => h.kind))).toEqual(new Set(['release', 'changeset']));
    const web = ls.search({ query: 'configuration', repo: 'acme/web' }).hits;
    expect(web.length).toBeGreaterThan(0);
    expect(web.every((h) => h.repo === 'acme/web')).toBe(true);
    expect(ls.search({ query: 'configuration', repo: 'acme/web', kind: 'release' }).hits).toEqual(
      [],
    );
    expect(() => ls.search({ query: 'x', repo: 'acme/nope' })).toThrow(/not indexed/);
  });

  it('pages with an opaque cursor, without overlap or gaps', async () => {
    const ls = openSearch({ cacheDir: await freshDir(), persistDelayMs: 0 });
    const many: IndexRung[] = Array.from({ length: 37 }, (_, i) => ({
      path: `src/widgets/widget-${i}.ts`,
      kind: 'file' as const,
      title: `widget-${i}.ts`,
      summary: `Widget number ${i}${' widget'.repeat(i % 5)} for the dashboard.`,
      anchor: anchor(100 + i),
    }));
    await ls.setRepo('acme/widgets', oid(3), many);
    const seen: SearchHit[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = ls.search({ query: 'widget', limit: 10, ...(cursor ? { cursor } : {}) });
      seen.push(...page.hits);
      cursor = page.next_cursor ?? undefined;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(new Set(seen.map((h) => h.path)).size).toBe(37);
    for (let i = 1; i < seen.length; i++)
      expect(seen[i]!.score).toBeLessThanOrEqual(seen[i - 1]!.score);
    // A cursor belongs to its query and filters.
    const first = ls.search({ query: 'widget', limit: 5 });
    expectInvalid(
      () => ls.search({ query: 'dashboard', limit: 5, cursor: first.next_cursor! }),
      'cursor',
    );
    expectInvalid(
      () => ls.search({ query: 'widget', limit: 5, kind: 'file', cursor: first.next_cursor! }),
      'cursor',
    );
    // The same cursor with another page size is fine: it is an offset.
    expect(ls.search({ query: 'widget', limit: 3, cursor: first.next_cursor! }).hits[0]!.path).toBe(
      ls.search({ query: 'widget', limit: 6 }).hits[5]!.path,
    );
  });

  it('refuses hostile input with invalid_argument', async () => {
    const ls = await twoRepos();
    expectInvalid(() => ls.search({ query: '' }), 'query');
    expectInvalid(() => ls.search({ query: '   ' }), 'query');
    expectInvalid(() => ls.search({ query: '!!! ... ???' }), 'query');
    expectInvalid(() => ls.search({ query: 'x'.repeat(501) }), 'query');
    expectInvalid(
      () => ls.search({ query: Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ') }),
      'query',
    );
    expectInvalid(() => ls.search({ query: 42 as unknown as string }), 'query');
    expectInvalid(() => ls.search({ query: 'config', limit: MAX_LIMIT + 1 }), 'limit');
    expectInvalid(() => ls.search({ query: 'config', limit: 0 }), 'limit');
    expectInvalid(() => ls.search({ query: 'config', limit: 2.5 }), 'limit');
    expectInvalid(() => ls.search({ query: 'config', kind: 'bogus' as never }), 'kind');
    expectInvalid(() => ls.search({ query: 'config', kind: [] }), 'kind');
    expectInvalid(() => ls.search({ query: 'config', repo: '' }), 'repo');
    expectInvalid(() => ls.search({ query: 'config', cursor: 'garbage!' }), 'cursor');
    expectInvalid(() => ls.search({ query: 'config', cursor: 'eyJ2IjoxfQ' }), 'cursor'); // {"v":1}
    const forged = Buffer.from(
      JSON.stringify(['ladder_search', 1, { o: 5, q: 'AAAAAAAAAAAAAAAA' }]),
    ).toString('base64url');
    expectInvalid(() => ls.search({ query: 'config', cursor: forged }), 'cursor');
    const far = Buffer.from(
      JSON.stringify(['ladder_search', 1, { o: 1e9, q: 'AAAAAAAAAAAAAAAA' }]),
    ).toString('base64url');
    expectInvalid(() => ls.search({ query: 'config', cursor: far }), 'cursor');
    // Regex metacharacters and odd unicode are just text.
    expect(ls.search({ query: '.*(config)+ [a-z] \\d ∑ 🙂' }).hits.length).toBeGreaterThan(0);
    await expect(
      ls.setRepo('acme/x', oid(9), [{ ...API[2]!, path: '../etc/passwd' }]),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(
      ls.setRepo('acme/x', oid(9), [{ ...API[2]!, kind: 'nope' as never }]),
    ).rejects.toMatchObject({
      code: 'invalid_argument',
    });
    await expect(ls.setRepo('acme/x', 'not-an-oid', API)).rejects.toMatchObject({
      code: 'invalid_argument',
    });
  });
});

describe('LadderSearch persistence', () => {
  it('reloads a persisted shard without rebuilding when the ladder oid matches', async () => {
    const dir = await freshDir();
    const a = await twoRepos(dir);
    const queries = ['configuration', 'parseConf', 'server', 'cart', 'migratoins', 'empty config'];
    const before = queries.map((q) => a.search({ query: q, limit: 50 }));
    await a.close();
    const file = a.fileFor('acme/api');
    expect((await stat(file)).size).toBeGreaterThan(0);

    const b = openSearch({ cacheDir: dir });
    let calls = 0;
    const provider = () => {
      calls++;
      return API;
    };
    const r = await b.setRepo('acme/api', oid(1), provider);
    expect(r).toMatchObject({ source: 'cache', docs: API.length });
    await b.setRepo('acme/web', oid(2), () => {
      calls++;
      return WEB;
    });
    expect(calls).toBe(0);
    // The index itself is built when first needed, or by materialize().
    expect(b.stats().shards.map((s) => s.materialized)).toEqual([false, false]);
    await b.materialize();
    expect(b.stats().shards.map((s) => s.materialized)).toEqual([true, true]);
    expect(queries.map((q) => b.search({ query: q, limit: 50 }))).toEqual(before);
    // Already loaded at that oid: nothing to do.
    expect((await b.setRepo('acme/api', oid(1), provider)).source).toBe('memory');
    expect(calls).toBe(0);
  });

  it('rebuilds when the ladder moved, the options changed or the file is damaged', async () => {
    const dir = await freshDir();
    const a = await twoRepos(dir);
    await a.close();
    const file = a.fileFor('acme/api');

    const moved = openSearch({ cacheDir: dir, persistDelayMs: 0 });
    let calls = 0;
    const changed = API.filter((r) => r.path !== 'src/db/migrate.py');
    const r1 = await moved.setRepo('acme/api', oid(99), () => {
      calls++;
      return changed;
    });
    expect(r1).toMatchObject({ source: 'built', reason: 'ladder_moved', docs: changed.length });
    expect(calls).toBe(1);
    expect(moved.search({ query: 'migrations' }).hits).toEqual([]);
    await moved.close();
    const written = JSON.parse((await readFile(file, 'utf8')).split('\n')[0]!) as {
      ladder_oid: string;
    };
    expect(written.ladder_oid).toBe(oid(99));

    const bytes = await readFile(file);
    // The preamble is the first line; patched in place, so every section stays where it was.
    const patched = (find: string, replace: string) => {
      const at = bytes.indexOf(find);
      expect(at).toBeGreaterThanOrEqual(0);
      expect(replace.length).toBe(find.length);
      const copy = Buffer.from(bytes);
      copy.write(replace, at);
      return copy;
    };
    await writeFile(
      file,
      patched(`"options_version":${OPTIONS_VERSION}`, `"options_version":${OPTIONS_VERSION - 1}`),
    );
    const opt = openSearch({ cacheDir: dir });
    expect(await opt.setRepo('acme/api', oid(99), changed)).toMatchObject({
      source: 'built',
      reason: 'options_changed',
    });
    // Its rebuild is written at once: let it land before the file is damaged again.
    await opt.close();

    await writeFile(file, bytes.subarray(0, Math.floor(bytes.length / 2)));
    const broken = openSearch({ cacheDir: dir });
    expect(await broken.setRepo('acme/api', oid(99), changed)).toMatchObject({
      source: 'built',
      reason: 'unreadable',
    });
    expect(paths(broken.search({ query: 'parseConfigFile' }).hits)[0]).toBe(
      'acme/api:src/config/parse-config.ts',
    );
    await broken.close();

    // A sound head and index whose postings are damaged: the documents still read, so the
    // index is rebuilt from them. Every term's postings garbled (the postings end the data
    // section, just before the documents).
    const layout = new ShardFile(bufferSource(bytes));
    const postingsLength = layout.index(layout.head()).postings.length;
    const docsBytes = (
      JSON.parse(bytes.subarray(0, bytes.indexOf('\n')).toString()) as {
        docs_bytes: number;
      }
    ).docs_bytes;
    const garbled = Buffer.from(bytes);
    garbled.fill(0xff, bytes.length - docsBytes - postingsLength, bytes.length - docsBytes);
    await writeFile(file, garbled);
    const damaged = openSearch({ cacheDir: dir, persistDelayMs: 0 });
    expect((await damaged.setRepo('acme/api', oid(99), () => [])).source).toBe('cache');
    expect(paths(damaged.search({ query: 'parseConfigFile' }).hits)[0]).toBe(
      'acme/api:src/config/parse-config.ts',
    );
    expect(damaged.stats().shards[0]!.materialized).toBe(true);
    await damaged.close();

    const other = openSearch({ cacheDir: await freshDir() });
    expect(await other.setRepo('acme/api', oid(99), changed)).toMatchObject({
      source: 'built',
      reason: 'missing',
    });
  });

  it('gives the same results from a reloaded shard as from the one it was written from', async () => {
    const dir = await freshDir();
    const a = openSearch({ cacheDir: dir, persistDelayMs: 0 });
    for (let i = 0; i < 3; i++)
      await a.setRepo(`org/r${i}`, oid(i + 1), syntheticRungs(i, 600) as IndexRung[]);
    // Churn so the written shard has replaced and discarded documents behind it.
    const r0 = syntheticRungs(0, 600) as IndexRung[];
    await a.applyDiff('org/r0', oid(50), {
      upsert: r0
        .slice(100, 140)
        .map((r) => ({ ...r, summary: `${r.summary} Rewritten with quartz.` })),
      remove: r0.slice(200, 230).map((r) => r.path),
    });
    await a.close();
    const queries = [...syntheticQueries(60, 3), 'quartz', 'rewritten quartz'];
    const before = queries.map((q) => a.search({ query: q, limit: 50 }));
    const b = openSearch({ cacheDir: dir });
    await b.setRepo('org/r0', oid(50), () => {
      throw new Error('should load from cache');
    });
    for (let i = 1; i < 3; i++) {
      await b.setRepo(`org/r${i}`, oid(i + 1), () => {
        throw new Error('should load from cache');
      });
    }
    expect(queries.map((q) => b.search({ query: q, limit: 50 }))).toEqual(before);
    expect(b.search({ query: 'quartz', limit: 50 }).hits).toHaveLength(40);
  });
});

describe('LadderSearch lazy shards and memory budget', () => {
  const REPOS = 6;
  async function persisted(): Promise<string> {
    const dir = await freshDir();
    const a = openSearch({ cacheDir: dir, persistDelayMs: 0 });
    for (let i = 0; i < REPOS; i++)
      await a.setRepo(`org/r${i}`, oid(i + 1), syntheticRungs(i, 300) as IndexRung[]);
    await a.close();
    return dir;
  }
  async function open(dir: string, memoryBudget?: number): Promise<LadderSearch> {
    const ls = openSearch({ cacheDir: dir, ...(memoryBudget ? { memoryBudget } : {}) });
    for (let i = 0; i < REPOS; i++) {
      const r = await ls.setRepo(`org/r${i}`, oid(i + 1), () => {
        throw new Error('should load from cache');
      });
      expect(r.source).toBe('cache');
    }
    return ls;
  }
  const loaded = (ls: LadderSearch) =>
    ls
      .stats()
      .shards.filter((s) => s.loaded)
      .map((s) => s.repo);

  it('reads a shard index only when a query needs it', async () => {
    const ls = await open(await persisted());
    expect(loaded(ls)).toEqual([]);
    // Restricted to one repo: no other shard is read.
    expect(ls.search({ query: 'config', repo: 'org/r2' }).hits.length).toBeGreaterThan(0);
    expect(loaded(ls)).toEqual(['org/r2']);
    // A word no shard holds reads nothing at all.
    ls.search({ query: 'qqzzxxjj' });
    expect(loaded(ls)).toEqual(['org/r2']);
    expect(ls.stats().shards.every((s) => !s.materialized)).toBe(true);
  });

  it('serves a shard built here from its file once written, dropping the built index', async () => {
    const ls = openSearch({ cacheDir: await freshDir(), persistDelayMs: 60_000 });
    await ls.setRepo('org/r0', oid(1), syntheticRungs(0, 300) as IndexRung[]);
    const before = ls.search({ query: 'config', limit: 50 });
    // A fresh build is written at once, whatever the debounce for diffs.
    await ls.flush();
    expect(ls.stats().shards[0]).toMatchObject({ materialized: false, pending_write: false });
    expect(ls.search({ query: 'config', limit: 50 })).toEqual(before);
  });

  it('gives the same results when every index is dropped after each query', async () => {
    const dir = await persisted();
    const roomy = await open(dir);
    // A budget of one byte: nothing stays loaded between queries.
    const tight = await open(dir, 1);
    const requests = [
      ...syntheticQueries(40, REPOS).map((query) => ({ query, limit: 20 })),
      ...syntheticQueries(10, REPOS).map((query) => ({ query, kind: 'file' as const })),
      ...syntheticQueries(10, REPOS).map((query, i) => ({ query, repo: `org/r${i % REPOS}` })),
    ];
    let hits = 0;
    for (const req of requests) {
      const want = roomy.search(req);
      const got = tight.search(req);
      expect(got, JSON.stringify(req)).toEqual(want);
      expect(loaded(tight)).toEqual([]);
      hits += want.hits.length;
      // The next page, from a cursor, after the indexes it ranked were dropped.
      if (want.next_cursor) {
        expect(tight.search({ ...req, cursor: got.next_cursor! })).toEqual(
          roomy.search({ ...req, cursor: want.next_cursor }),
        );
      }
    }
    expect(hits).toBeGreaterThan(200);
    expect(tight.stats().evictions).toBeGreaterThan(REPOS);
    expect(roomy.stats().evictions).toBe(0);
    expect(loaded(roomy).length).toBe(REPOS);
  });
});

describe('LadderSearch incremental updates', () => {
  it('reflects upserts and removals, and checks the diff base', async () => {
    const dir = await freshDir();
    const ls = await twoRepos(dir);
    const result = await ls.applyDiff('acme/api', oid(5), {
      base: oid(1),
      upsert: [
        {
          path: 'src/http/server.ts',
          kind: 'file',
          title: 'server.ts',
          summary: 'Starts the HTTPS listener with TLS certificates.',
          symbols: ['startSecureServer'],
          anchor: anchor(40),
        },
        {
          path: 'src/cache/lru.ts',
          kind: 'file',
          title: 'lru.ts',
          summary: 'Least recently used cache for rendered pages.',
          symbols: ['LruCache'],
          anchor: anchor(41),
        },
      ],
      remove: ['src/db/migrate.py', 'no/such/path'],
    });
    expect(result).toMatchObject({
      ladder_oid: oid(5),
      upserted: 2,
      removed: 1,
      docs: API.length,
      rebuilt: false,
    });
    expect(ls.ladderOid('acme/api')).toBe(oid(5));
    expect(paths(ls.search({ query: 'lruCache' }).hits)).toEqual(['acme/api:src/cache/lru.ts']);
    expect(paths(ls.search({ query: 'certificates' }).hits)).toEqual([
      'acme/api:src/http/server.ts',
    ]);
    expect(
      ls.search({ query: 'startServer', repo: 'acme/api' }).hits.map((h) => h.path),
    ).not.toContain('src/db/migrate.py');
    expect(ls.search({ query: 'binds' }).hits).toEqual([]); // the old summary of server.ts
    expect(ls.search({ query: 'migrations' }).hits).toEqual([]);
    expect(ls.search({ query: 'certificates' }).hits[0]!.anchor).toEqual(anchor(40));

    await expect(
      ls.applyDiff('acme/api', oid(6), { base: oid(1), upsert: [] }),
    ).rejects.toMatchObject({
      code: 'conflict',
    });
    await expect(ls.applyDiff('acme/none', oid(6), { upsert: [] })).rejects.toMatchObject({
      code: 'not_found',
    });

    // The diff is persisted: a new process loads it at the new oid.
    await ls.close();
    const again = openSearch({ cacheDir: dir });
    expect((await again.setRepo('acme/api', oid(5), [])).source).toBe('cache');
    expect(paths(again.search({ query: 'lruCache' }).hits)).toEqual(['acme/api:src/cache/lru.ts']);
    expect(again.search({ query: 'migrations' }).hits).toEqual([]);
    // A shard loaded from disk takes diffs too (its minisearch index is built for it).
    await again.applyDiff('acme/api', oid(7), { base: oid(5), remove: ['src/cache/lru.ts'] });
    expect(again.search({ query: 'lruCache' }).hits).toEqual([]);
    expect(paths(again.search({ query: 'certificates' }).hits)).toEqual([
      'acme/api:src/http/server.ts',
    ]);
  });

  it('vacuums past the dirt threshold and rebuilds when most of a shard changed', async () => {
    const ls = openSearch({
      cacheDir: await freshDir(),
      persistDelayMs: 0,
      vacuumMinDirt: 5,
    });
    const rungs = syntheticRungs(4, 400) as IndexRung[];
    await ls.setRepo('org/big', oid(1), rungs);
    const small = await ls.applyDiff('org/big', oid(2), {
      remove: rungs.slice(0, 6).map((r) => r.path),
    });
    expect(small).toMatchObject({ vacuumed: true, rebuilt: false, docs: 394 });
    expect(ls.stats().shards[0]!.dirt).toBe(0);
    const big = await ls.applyDiff('org/big', oid(3), {
      upsert: rungs
        .slice(6, 300)
        .map((r) => ({ ...r, summary: 'Replaced by the tungsten migration.' })),
    });
    expect(big).toMatchObject({ rebuilt: true, docs: 394 });
    expect(ls.search({ query: 'tungsten', limit: 50 }).next_cursor).not.toBeNull();
    await ls.close();
  });

  it('forgets a repo and can purge its file', async () => {
    const dir = await freshDir();
    const ls = await twoRepos(dir);
    await ls.flush();
    const file = ls.fileFor('acme/web');
    expect(await ls.removeRepo('acme/web', { purge: true })).toBe(true);
    expect(ls.search({ query: 'cart' }).hits).toEqual([]);
    await expect(stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
    expect(await ls.removeRepo('acme/web')).toBe(false);
    const s = ls.stats();
    expect(s).toMatchObject({ repos: 1, docs: API.length });
    expect(s.shards[0]).toMatchObject({
      repo: 'acme/api',
      ladder_oid: oid(1),
      pending_write: false,
      last_write_error: null,
    });
  });
});

describe('LadderSearch scorers', () => {
  it('ranks the same with the direct scorer as with minisearch search()', async () => {
    const dir = await freshDir();
    const direct = openSearch({ cacheDir: dir, persistDelayMs: 60_000 });
    const mini = openSearch({ cacheDir: dir, persistDelayMs: 60_000, scorer: 'minisearch' });
    for (let i = 0; i < 4; i++) {
      const rungs = syntheticRungs(i, 500) as IndexRung[];
      await direct.setRepo(`org/r${i}`, oid(i + 1), rungs);
      await mini.setRepo(`org/r${i}`, oid(i + 1), rungs);
    }
    const queries = [...syntheticQueries(80, 4), 'cart zebra', 'server events nuvonuka'];
    for (const q of queries) {
      for (const kind of [undefined, 'file' as const]) {
        const a = direct.search({ query: q, limit: 50, ...(kind ? { kind } : {}) }).hits;
        const b = mini.search({ query: q, limit: 50, ...(kind ? { kind } : {}) }).hits;
        expect(
          a.map((h) => h.score),
          q,
        ).toEqual(b.map((h) => h.score));
        // Exact ties may come out in either order; the sets of hits per score must agree.
        expect(new Set(paths(a)), q).toEqual(new Set(paths(b)));
      }
    }
  });
});

describe('writes of one repo', () => {
  it('run one at a time, in call order (a diff waits for the build it applies to)', async () => {
    const ls = openSearch({ cacheDir: await freshDir(), persistDelayMs: 0 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let building!: () => void;
    const started = new Promise<void>((r) => (building = r));
    const built = ls.setRepo('acme/api', oid(1), async () => {
      building();
      await gate;
      return API;
    });
    await started;
    // Called while the build is still waiting for its rungs: it must not see a missing shard.
    const diffed = ls.applyDiff('acme/api', oid(3), {
      base: oid(1),
      remove: ['docs/guide.md'],
    });
    release();
    expect((await built).source).toBe('built');
    expect(await diffed).toMatchObject({ ladder_oid: oid(3), removed: 1 });
    expect(ls.ladderOid('acme/api')).toBe(oid(3));
  });
});
