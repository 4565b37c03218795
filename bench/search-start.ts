import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZzRepo } from '../src/core/index.js';
import { startServedSearch } from '../src/core/ladder/search-sync.js';
import { makeLadderRepo } from './rss.js';
import { median, printTable } from './util.js';

// What a daemon's search costs at start when every repository's shard is persisted already:
// REPOS `zz init`ed repositories, each with a Ladder of RUNGS rungs (one ladder_build), are
// indexed once (the shards written), then RESTARTS starts each open every repository afresh
// (cold ZzRepos: no fold cached) and wait until the search has every repository (`ready`).
// Before this round a start folded every Ladder before loading its shard; now the shard's key
// (ladder oid and the fold's role inputs, core/ladder/role-key.ts) is checked by ref reads.
// In one process: module loading and JIT are warm after the first start, alike for both codes.
// ZZ_BENCH_SEARCH_START_DIR keeps the repositories between runs (writing them takes minutes).

const REPOS = Number(process.env.ZZ_BENCH_REPOS ?? 50);
const RUNGS = Number(process.env.ZZ_BENCH_RUNGS ?? 2000);
const RESTARTS = Number(process.env.ZZ_BENCH_RESTARTS ?? 3);

async function openAll(dirs: string[]): Promise<Map<string, ZzRepo>> {
  const repos = new Map<string, ZzRepo>();
  for (const d of dirs) {
    const r = await ZzRepo.open(d);
    repos.set(r.key, r);
  }
  return repos;
}

/** One start: wall and CPU seconds until every repository is searchable. */
async function start(dirs: string[], cache: string): Promise<{ wall_s: number; cpu_s: number }> {
  const repos = await openAll(dirs);
  const cpu = process.cpuUsage();
  const t = performance.now();
  const served = await startServedSearch(repos, { cacheDir: cache, watch: false });
  await served.ready;
  const wall = (performance.now() - t) / 1000;
  const used = process.cpuUsage(cpu);
  if (served.search.stats().repos !== dirs.length) throw new Error('a repository was not indexed');
  await served.close();
  for (const r of repos.values()) r.close();
  return {
    wall_s: Math.round(wall * 1000) / 1000,
    cpu_s: Math.round((used.user + used.system) / 1000) / 1000,
  };
}

export async function benchSearchStart(): Promise<Record<string, unknown>> {
  const keep = process.env.ZZ_BENCH_SEARCH_START_DIR;
  const root = keep ?? mkdtempSync(join(tmpdir(), 'zz-bench-search-start-'));
  const dirs = Array.from({ length: REPOS }, (_, i) => join(root, `repo-${i}`));
  const cache = mkdtempSync(join(tmpdir(), 'zz-bench-search-start-cache-'));
  try {
    for (let i = 0; i < REPOS; i++) {
      try {
        mkdirSync(dirs[i]!);
      } catch {
        continue; // kept from an earlier run
      }
      await makeLadderRepo(dirs[i]!, i, { rungs: RUNGS, init: true });
    }
    const first = await start(dirs, cache);
    const restarts = [];
    for (let n = 0; n < RESTARTS; n++) restarts.push(await start(dirs, cache));
    const out = {
      repos: REPOS,
      rungs: RUNGS,
      first_start_s: first.wall_s,
      restart_wall_s: median(restarts.map((r) => r.wall_s)),
      restart_cpu_s: median(restarts.map((r) => r.cpu_s)),
      restarts,
    };
    printTable(`search start on persisted shards (${REPOS} repos × ${RUNGS} rungs)`, [
      {
        first_start_s: out.first_start_s,
        restart_wall_s: out.restart_wall_s,
        restart_cpu_s: out.restart_cpu_s,
      },
    ]);
    return out;
  } finally {
    rmSync(cache, { recursive: true, force: true });
    if (!keep) rmSync(root, { recursive: true, force: true });
  }
}
