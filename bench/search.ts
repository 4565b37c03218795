import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import MiniSearch, { type Options } from 'minisearch';
import { LadderSearch, type IndexRung } from '../src/search/index.js';
import { syntheticQueries, syntheticRungs, type BenchRung } from './search-corpus.js';
import { median, percentile, printTable } from './util.js';

// ladder_search at scale: 50 repos × 2,000 realistic rungs (bench/search-corpus.ts), searched
// through LadderSearch (per-repo shards, compact persistence, cross-shard term router), side by
// side with the obvious alternative: one minisearch index over all 100k rungs with default
// options, persisted with JSON.stringify and loaded with loadJSON.
// Goals: search p50 < 5 ms and p95 < 25 ms; a fresh process answers its first query < 1 s.
// Searches are timed as a daemon runs them: on shards served from their files (heads loaded
// at start, index sections on first use), before materialize() builds minisearch's maps.
// ZZ_BENCH_REPOS / ZZ_BENCH_RUNGS scale it down for a quick look; ZZ_BENCH_SEARCH_BUDGETS
// (MiB, comma-separated) picks the memory budgets compared; ZZ_BENCH_SEARCH_NAIVE=0 skips
// the naive baseline.

const REPOS = Number(process.env.ZZ_BENCH_REPOS ?? 50);
const PER_REPO = Number(process.env.ZZ_BENCH_RUNGS ?? 2000);
const QUERIES = 400;
const oid = (n: number): string => n.toString(16).padStart(40, '0');
const round = (x: number, d = 2): number => Math.round(x * 10 ** d) / 10 ** d;

function stats(ts: number[]): { p50: number; p95: number; p99: number; max: number } {
  return {
    p50: round(median(ts)),
    p95: round(percentile(ts, 95)),
    p99: round(percentile(ts, 99)),
    max: round(Math.max(...ts)),
  };
}

/**
 * Wall and CPU time of fn. On a shared machine the run queue inflates wall time; process CPU
 * time (all threads, GC included) is what the code itself costs.
 */
function clock<T>(fn: () => T): { value: T; wall: number; cpu: number } {
  const c = process.cpuUsage();
  const t = performance.now();
  const value = fn();
  const wall = performance.now() - t;
  const d = process.cpuUsage(c);
  return { value, wall, cpu: (d.user + d.system) / 1000 };
}

async function clockAsync<T>(
  fn: () => Promise<T>,
): Promise<{ value: T; wall: number; cpu: number }> {
  const c = process.cpuUsage();
  const t = performance.now();
  const value = await fn();
  const wall = performance.now() - t;
  const d = process.cpuUsage(c);
  return { value, wall, cpu: (d.user + d.system) / 1000 };
}

interface Timed {
  wall: { p50: number; p95: number; p99: number; max: number };
  cpu: { p50: number; p95: number; p99: number; max: number };
}

function timedQueries(queries: readonly string[], run: (q: string, i: number) => unknown): Timed {
  const wall: number[] = [];
  const cpu: number[] = [];
  queries.forEach((q, i) => {
    const r = clock(() => run(q, i));
    wall.push(r.wall);
    cpu.push(r.cpu);
  });
  return { wall: stats(wall), cpu: stats(cpu) };
}

async function dirBytes(dir: string): Promise<number> {
  let n = 0;
  for (const f of await readdir(dir)) n += (await stat(join(dir, f))).size;
  return n;
}

const heapMb = (): number => Math.round(process.memoryUsage().heapUsed / 1e6);

interface NaiveDoc extends BenchRung {
  id: string;
  repo: string;
}

export async function benchSearch(): Promise<Record<string, unknown>> {
  const dir = await mkdtemp(join(tmpdir(), 'zz-bench-search-'));
  const out: Record<string, unknown> = {
    repos: REPOS,
    rungs_per_repo: PER_REPO,
    rungs: REPOS * PER_REPO,
  };
  try {
    let t = performance.now();
    const corpus: BenchRung[][] = [];
    for (let i = 0; i < REPOS; i++) corpus.push(syntheticRungs(i, PER_REPO));
    const queries = syntheticQueries(QUERIES, REPOS);
    out.generate_ms = Math.round(performance.now() - t);
    const repoKey = (i: number) => `org${i % 7}/repo-${i}`;

    // --- sharded (ours) --------------------------------------------------------------------
    let building: LadderSearch | null = new LadderSearch({ cacheDir: dir, persistDelayMs: 60_000 });
    t = performance.now();
    for (let i = 0; i < REPOS; i++)
      await building.setRepo(repoKey(i), oid(i + 1), corpus[i] as IndexRung[]);
    const buildMs = performance.now() - t;
    t = performance.now();
    await building.close();
    const persistMs = performance.now() - t;
    // Dropped before the cold load, so its heap does not slow the collector during the load.
    building = null;
    const bytes = await dirBytes(join(dir, 'search'));

    // Cold start as a daemon sees it: a fresh process loads every persisted shard and answers
    // a first query (median of 3). The in-process figures below carry this process's heap.
    const fresh = [0, 1, 2].map(() => coldChild(dir));
    fresh.sort((a, b) => a.ready_wall - b.ready_wall);
    const freshCold = fresh[1]!;

    // Cold: a fresh instance reads every shard back (the rungs provider must never be called),
    // then answers its first query (which builds the cross-shard router).
    const cold = new LadderSearch({ cacheDir: dir });
    const load = await clockAsync(async () => {
      for (let i = 0; i < REPOS; i++) {
        const r = await cold.setRepo(repoKey(i), oid(i + 1), () => {
          throw new Error('cold load fell back to a rebuild');
        });
        if (r.source !== 'cache') throw new Error(`shard ${i} not loaded from cache`);
      }
    });
    // A word no shard holds: this times building the router alone.
    const router = clock(() => cold.search({ query: 'qqzzxxjj' }));
    for (const q of queries.slice(0, 20)) cold.search({ query: q });
    let hits = 0;
    let empty = 0;
    const main = timedQueries(queries, (q) => {
      const page = cold.search({ query: q, limit: 10 });
      hits += page.hits.length;
      if (page.hits.length === 0) empty++;
    });
    const kindQ = timedQueries(queries, (q) => cold.search({ query: q, kind: 'directory' }));
    const repoQ = timedQueries(queries, (q, i) =>
      cold.search({ query: q, repo: repoKey(i % REPOS) }),
    );
    // As the daemon asks for a caller: within the repositories it may read, whose vocabulary
    // alone the query's words expand over (every served one, or its own and two public ones).
    const everyRepo = Array.from({ length: REPOS }, (_, i) => repoKey(i));
    const withinAllQ = timedQueries(queries, (q) =>
      cold.search({ query: q, limit: 10, within: everyRepo }),
    );
    const withinFewQ = timedQueries(queries, (q, i) =>
      cold.search({ query: q, limit: 10, within: [repoKey(i % REPOS), repoKey(0), repoKey(1)] }),
    );
    // Paging: the next page of a query just asked (results are kept per query and generation).
    const pageWall: number[] = [];
    const pageCpu: number[] = [];
    for (const q of queries.slice(0, 100)) {
      const first = cold.search({ query: q, limit: 10 });
      if (!first.next_cursor) continue;
      const r = clock(() => cold.search({ query: q, limit: 10, cursor: first.next_cursor! }));
      pageWall.push(r.wall);
      pageCpu.push(r.cpu);
    }
    const pageQ: Timed = { wall: stats(pageWall), cpu: stats(pageCpu) };
    // What the queries above left in memory: the index sections within the budget.
    const resident = cold.stats();
    const loadedShards = resident.shards.filter((x) => x.loaded).length;
    // minisearch's maps for every shard (only a diff or the minisearch scorer needs them).
    const mat = await clockAsync(() => cold.materialize());
    // The same queries through minisearch's own search() (boostDocument filters, no top-k).
    const viaMini = new LadderSearch({ cacheDir: dir, scorer: 'minisearch' });
    for (let i = 0; i < REPOS; i++) await viaMini.setRepo(repoKey(i), oid(i + 1), () => []);
    viaMini.search({ query: 'warm up' });
    for (const q of queries.slice(0, 20)) viaMini.search({ query: q });
    const miniQ = timedQueries(queries, (q) => viaMini.search({ query: q, limit: 10 }));
    const miniKindQ = timedQueries(queries, (q) => viaMini.search({ query: q, kind: 'directory' }));
    await viaMini.close();

    // An incremental update: 20 rungs of one repo change, as after a small `zz ladder build`.
    const changed = (corpus[3] as IndexRung[])
      .slice(500, 520)
      .map((r) => ({ ...r, summary: `${r.summary} Updated.` }));
    const diff = await clockAsync(() =>
      cold.applyDiff(repoKey(3), oid(999), { upsert: changed, remove: [corpus[3]![600]!.path] }),
    );
    const reRoute = clock(() => cold.search({ query: 'after the diff' }));

    const ours = {
      build_ms: Math.round(buildMs),
      persist_ms: Math.round(persistMs),
      disk_mb: round(bytes / 1e6, 1),
      cold_process: freshCold,
      cold_load_ms: { wall: Math.round(load.wall), cpu: Math.round(load.cpu) },
      first_query_ms: { wall: Math.round(router.wall), cpu: Math.round(router.cpu) },
      cold_ready_ms: {
        wall: Math.round(load.wall + router.wall),
        cpu: Math.round(load.cpu + router.cpu),
      },
      materialize_all_ms: { wall: Math.round(mat.wall), cpu: Math.round(mat.cpu) },
      shards_loaded_after_queries: loadedShards,
      evictions: resident.evictions,
      router_terms: cold.stats().router_terms,
      search: main,
      search_kind_filter: kindQ,
      search_one_repo: repoQ,
      next_page: pageQ,
      minisearch_scorer: miniQ,
      minisearch_scorer_kind_filter: miniKindQ,
      apply_diff_20_ms: round(diff.wall),
      first_query_after_diff_ms: round(reRoute.wall),
      mean_hits: round(hits / queries.length, 1),
      queries_without_hits: empty,
    };
    out.sharded = ours;
    const pq = (t: Timed, k: 'wall' | 'cpu') => `${t[k].p50} / ${t[k].p95}`;
    printTable(`sharded LadderSearch: ${REPOS} repos × ${PER_REPO} rungs (ms; p50 / p95)`, [
      { measure: 'build (index all)', wall: ours.build_ms, cpu: '' },
      { measure: 'persist (write all shards)', wall: ours.persist_ms, cpu: '' },
      {
        measure: `fresh process: load ${REPOS} shards (${ours.disk_mb} MB)`,
        wall: freshCold.load_wall,
        cpu: freshCold.load_cpu,
      },
      {
        measure: 'fresh process: + first query (router)',
        wall: freshCold.ready_wall,
        cpu: freshCold.ready_cpu,
      },
      {
        measure: 'in this process: load',
        wall: ours.cold_load_ms.wall,
        cpu: ours.cold_load_ms.cpu,
      },
      {
        measure: 'in this process: first query (router)',
        wall: ours.first_query_ms.wall,
        cpu: ours.first_query_ms.cpu,
      },
      {
        measure: `index sections loaded after the queries / evicted`,
        wall: `${loadedShards} / ${resident.evictions}`,
        cpu: '',
      },
      {
        measure: 'in this process: materialize() (not needed to search)',
        wall: ours.materialize_all_ms.wall,
        cpu: ours.materialize_all_ms.cpu,
      },
      { measure: 'search', wall: pq(main, 'wall'), cpu: pq(main, 'cpu') },
      { measure: 'search kind=directory', wall: pq(kindQ, 'wall'), cpu: pq(kindQ, 'cpu') },
      { measure: 'search repo=…', wall: pq(repoQ, 'wall'), cpu: pq(repoQ, 'cpu') },
      {
        measure: 'search within every repo',
        wall: pq(withinAllQ, 'wall'),
        cpu: pq(withinAllQ, 'cpu'),
      },
      {
        measure: 'search within 3 repos',
        wall: pq(withinFewQ, 'wall'),
        cpu: pq(withinFewQ, 'cpu'),
      },
      { measure: 'next page', wall: pq(pageQ, 'wall'), cpu: pq(pageQ, 'cpu') },
      { measure: 'search via minisearch search()', wall: pq(miniQ, 'wall'), cpu: pq(miniQ, 'cpu') },
      {
        measure: 'same, kind via boostDocument',
        wall: pq(miniKindQ, 'wall'),
        cpu: pq(miniKindQ, 'cpu'),
      },
      { measure: 'applyDiff (20 rungs)', wall: ours.apply_diff_20_ms, cpu: '' },
    ]);
    await cold.close();

    // --- the memory budget: what a smaller cap on loaded index sections costs ---------------
    // A fresh instance per budget on the same files, the same 400 queries (after 20 to warm
    // up); past the budget, the least recently searched sections are dropped and read again.
    const budgets = (process.env.ZZ_BENCH_SEARCH_BUDGETS ?? '64,32,16,8,4')
      .split(',')
      .filter((x) => x.trim() !== '')
      .map(Number);
    const budgetRows: Array<Record<string, string | number>> = [];
    for (const mib of budgets) {
      const b = new LadderSearch({ cacheDir: dir, memoryBudget: mib * 1024 * 1024 });
      for (let i = 0; i < REPOS; i++) await b.setRepo(repoKey(i), oid(i + 1), () => []);
      for (const q of queries.slice(0, 20)) b.search({ query: q, limit: 10 });
      const before = b.stats().evictions;
      const q = timedQueries(queries, (x) => b.search({ query: x, limit: 10 }));
      const st = b.stats();
      budgetRows.push({
        budget_mib: mib,
        wall: pq(q, 'wall'),
        cpu: pq(q, 'cpu'),
        loaded_after: st.shards.filter((x) => x.loaded).length,
        evictions: st.evictions - before,
      });
      await b.close();
    }
    out.memory_budgets = budgetRows;
    printTable('search by memory budget for index sections (ms; p50 / p95)', budgetRows);
    if (process.env.ZZ_BENCH_SEARCH_NAIVE === '0') return out;

    // --- naive: one index, default options -------------------------------------------------
    const docs: NaiveDoc[] = [];
    corpus.forEach((rungs, i) => {
      for (const r of rungs) docs.push({ ...r, id: `${repoKey(i)}:${r.path}`, repo: repoKey(i) });
    });
    corpus.length = 0;
    const naiveOptions: Options<NaiveDoc> = {
      fields: ['title', 'path', 'symbols', 'summary'],
      storeFields: ['repo', 'path', 'kind'],
      extractField: (d, f) =>
        f === 'symbols' ? (d.symbols ?? []).join(' ') : (d[f as keyof NaiveDoc] as string),
    };
    const heap1 = heapMb();
    t = performance.now();
    let naive: MiniSearch<NaiveDoc> | null = new MiniSearch<NaiveDoc>(naiveOptions);
    naive.addAll(docs);
    const nBuild = performance.now() - t;
    const nHeap = heapMb() - heap1;
    t = performance.now();
    const json = JSON.stringify(naive);
    await writeFile(join(dir, 'naive.json'), json);
    const nPersist = performance.now() - t;
    naive = null;
    t = performance.now();
    const loaded = MiniSearch.loadJSON<NaiveDoc>(
      await readFile(join(dir, 'naive.json'), 'utf8'),
      naiveOptions,
    );
    const nLoad = performance.now() - t;
    const naiveQuery = (opts: Parameters<MiniSearch['search']>[1]): Timed => {
      for (const q of queries.slice(0, 20)) loaded.search(q, opts);
      return timedQueries(queries, (q) => loaded.search(q, opts).slice(0, 10));
    };
    const nDefault = naiveQuery({});
    const nFuzzy = naiveQuery({ prefix: true, fuzzy: 0.2 });
    const nKindFilter = naiveQuery({
      prefix: true,
      fuzzy: 0.2,
      filter: (r) => r.kind === 'directory',
    });
    const nKindBoost = naiveQuery({
      prefix: true,
      fuzzy: 0.2,
      boostDocument: (_id, _t, sf) => (sf?.kind === 'directory' ? 1 : 0),
    });
    const naive_ = {
      build_ms: Math.round(nBuild),
      persist_ms: Math.round(nPersist),
      disk_mb: round(json.length / 1e6, 1),
      load_ms: Math.round(nLoad),
      heap_mb: nHeap,
      search_default_options: nDefault,
      search_prefix_fuzzy: nFuzzy,
      kind_via_filter: nKindFilter,
      kind_via_boost_document: nKindBoost,
    };
    out.naive = naive_;
    const ratio = (a: number, b: number) => round(b / Math.max(a, 0.001), 1);
    out.ratios = {
      build: ratio(ours.build_ms, naive_.build_ms),
      persist: ratio(ours.persist_ms, naive_.persist_ms),
      cold_load: ratio(freshCold.ready_wall, naive_.load_ms),
      p50_vs_default: ratio(main.wall.p50, nDefault.wall.p50),
      p95_vs_default: ratio(main.wall.p95, nDefault.wall.p95),
      p50_vs_prefix_fuzzy: ratio(main.wall.p50, nFuzzy.wall.p50),
      p95_vs_prefix_fuzzy: ratio(main.wall.p95, nFuzzy.wall.p95),
      cpu_p50_vs_prefix_fuzzy: ratio(main.cpu.p50, nFuzzy.cpu.p50),
      cpu_p95_vs_prefix_fuzzy: ratio(main.cpu.p95, nFuzzy.cpu.p95),
      direct_over_minisearch_scorer_p95: ratio(main.cpu.p95, miniQ.cpu.p95),
      naive_kind_filter_over_boost_p50: ratio(nKindBoost.wall.p50, nKindFilter.wall.p50),
    };
    out.goals = {
      p50_under_5ms: { wall: main.wall.p50 < 5, cpu: main.cpu.p50 < 5 },
      p95_under_25ms: { wall: main.wall.p95 < 25, cpu: main.cpu.p95 < 25 },
      cold_load_under_1s: { wall: freshCold.ready_wall < 1000, cpu: freshCold.ready_cpu < 1000 },
      load_average: loadavg()[0],
    };
    printTable('naive single minisearch index, default options (ms; p50 / p95)', [
      { measure: 'build (addAll)', wall: naive_.build_ms, cpu: '' },
      {
        measure: `persist (JSON.stringify + write, ${naive_.disk_mb} MB)`,
        wall: naive_.persist_ms,
        cpu: '',
      },
      { measure: 'load (loadJSON)', wall: naive_.load_ms, cpu: '' },
      { measure: 'search, default options', wall: pq(nDefault, 'wall'), cpu: pq(nDefault, 'cpu') },
      { measure: 'search, prefix + fuzzy 0.2', wall: pq(nFuzzy, 'wall'), cpu: pq(nFuzzy, 'cpu') },
      { measure: 'kind via filter', wall: pq(nKindFilter, 'wall'), cpu: pq(nKindFilter, 'cpu') },
      {
        measure: 'kind via boostDocument',
        wall: pq(nKindBoost, 'wall'),
        cpu: pq(nKindBoost, 'cpu'),
      },
    ]);
    printTable('ratios (naive ÷ sharded; > 1 means sharded is faster)', [
      out.ratios as Record<string, number>,
    ]);
    console.log(`\ngoals: ${JSON.stringify(out.goals)}`);
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface ColdTimes {
  load_wall: number;
  load_cpu: number;
  ready_wall: number;
  ready_cpu: number;
  heap_mb: number;
}

function coldChild(dir: string): ColdTimes {
  const out = execFileSync(
    process.execPath,
    [...process.execArgv, fileURLToPath(import.meta.url), '--cold-child', dir, String(REPOS)],
    { encoding: 'utf8' },
  );
  return JSON.parse(out.trim().split('\n').pop()!) as ColdTimes;
}

async function coldChildMain(dir: string, repos: number): Promise<void> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const ls = new LadderSearch({ cacheDir: dir });
  for (let i = 0; i < repos; i++) {
    const r = await ls.setRepo(`org${i % 7}/repo-${i}`, oid(i + 1), () => {
      throw new Error('cold load fell back to a rebuild');
    });
    if (r.source !== 'cache') throw new Error(`shard ${i} not loaded from cache`);
  }
  const load = process.cpuUsage(c0);
  const t1 = performance.now();
  ls.search({ query: 'parse config' });
  const ready = process.cpuUsage(c0);
  const t2 = performance.now();
  const ms = (u: NodeJS.CpuUsage) => Math.round((u.user + u.system) / 1000);
  const times: ColdTimes = {
    load_wall: Math.round(t1 - t0),
    load_cpu: ms(load),
    ready_wall: Math.round(t2 - t0),
    ready_cpu: ms(ready),
    heap_mb: heapMb(),
  };
  console.log(JSON.stringify(times));
}

if (process.argv[2] === '--cold-child') {
  await coldChildMain(process.argv[3]!, Number(process.argv[4]));
} else if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchSearch();
  console.log(JSON.stringify(r, null, 2));
}
