import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { initRepo, ZzRepo } from '../src/core/index.js';
import { ladderEntity } from '../src/core/ladder/ladder.js';
import type { RungRecord } from '../src/schema/ladder-ops.js';
import { callHttp, ensureBuilt, killAll, privateEnv, serve, zz } from '../test/e2e/zz-process.js';
import { syntheticRungs } from './search-corpus.js';
import { printTable } from './util.js';

// Daemon memory as the operating system sees it: a real `zz serve` (dist/cli/main.js) in its
// own process serving 50 repositories whose Ladders hold 2,000 rungs each (bench/search-corpus
// rungs, written as one ladder_build commit per repo) and a Lane of 5,000 Asks posted over HTTP
// and read back with lane_get. VmRSS / VmHWM are read from /proc/<pid>/status by this process,
// never from inside the daemon. The first daemon indexes every Ladder from scratch and takes
// the Asks; then RESTARTS daemons, one after another, start on the persisted search shards as
// after a restart, and the median of their final RSS is the figure.
// A diagnostic report (--report-on-signal) gives the V8 heap spaces at the end of each phase.
// Goal (issue 17): RSS < 150 MiB. ZZ_BENCH_REPOS / ZZ_BENCH_RUNGS / ZZ_BENCH_ASKS scale it;
// ZZ_BENCH_RSS_DIR keeps the 49 extra repositories there between runs (writing 100k rungs
// takes minutes on a busy machine); the served checkout and every cache are always fresh.

const REPOS = Number(process.env.ZZ_BENCH_REPOS ?? 50);
const RUNGS = Number(process.env.ZZ_BENCH_RUNGS ?? 2000);
const ASKS = Number(process.env.ZZ_BENCH_ASKS ?? 5000);
// Restarted daemons measured one after another; the README's figure is their median.
const RESTARTS = Number(process.env.ZZ_BENCH_RSS_RESTARTS ?? 3);
// Seconds each restarted daemon is then left idle, sampled every second (0: not at all).
const SETTLE_S = Number(process.env.ZZ_BENCH_RSS_SETTLE_S ?? 60);
const CLIENTS = 16;
const OWNER = 'owner@example.com';
const MIB = 1024 * 1024;

const repoKey = (i: number) => `org${i % 7}/repo-${i}`;

function git(cwd: string, ...args: string[]): void {
  execFileSync('git', args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
}

/**
 * One checkout with a commit on main and a Ladder of `rungs` synthetic rungs; `zz init`ed when
 * it is the first (`i` 0) or `init` asks (the Ladder's fold then judges by its roles).
 */
export async function makeLadderRepo(
  dir: string,
  i: number,
  opts: { rungs?: number; init?: boolean } = {},
): Promise<void> {
  mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', OWNER);
  git(dir, 'config', 'user.name', 'Owner');
  git(dir, 'config', 'commit.gpgsign', 'false');
  git(dir, 'config', 'zz.repo', repoKey(i));
  await writeFile(join(dir, 'README.md'), `# repo ${i}\n`);
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'initial');
  const repo = await ZzRepo.open(dir);
  try {
    if (i === 0 || opts.init) await initRepo(repo, { owner: OWNER, default_branch: 'main' });
    const upsert: RungRecord[] = syntheticRungs(i, opts.rungs ?? RUNGS).map((r, n) => ({
      ...r,
      inputs_hash: n.toString(16).padStart(40, '0'),
    }));
    await ladderEntity(repo).mutate({
      actor: OWNER,
      decide: () => ({
        op: 'ladder_build',
        summary: `ladder_build: ${upsert.length} written`,
        args: {
          branch: 'main',
          head: '0'.repeat(40),
          generator: { method: 'extractive', version: '1' },
          upsert,
          remove: [],
        },
      }),
      result: () => null,
    });
  } finally {
    repo.close();
  }
}

interface Mem {
  rss_mib: number;
  hwm_mib: number;
}

/** VmRSS and VmHWM of another process, from /proc (Linux). */
function memOf(pid: number): Mem {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  const mib = (x: number) => Math.round((x * 1024 * 10) / MIB) / 10;
  return { rss_mib: mib(kb('VmRSS')), hwm_mib: mib(kb('VmHWM')) };
}

interface HeapBreakdown {
  heap_total_mib: number;
  heap_used_mib: number;
  external_mib: number;
  array_buffers_mib: number;
  spaces: Record<string, number>;
}

/** SIGUSR2 → the daemon writes a diagnostic report (node --report-on-signal); read it. */
async function reportOf(pid: number, dir: string): Promise<HeapBreakdown | null> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const f = readdirSync(dir).find((n) => !before.has(n) && n.endsWith('.json'));
    if (f) {
      try {
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        const r = JSON.parse(readFileSync(join(dir, f), 'utf8')) as any;
        const m = (x: number) => Math.round((x / MIB) * 10) / 10;
        const spaces: Record<string, number> = {};
        for (const [name, s] of Object.entries(r.javascriptHeap.heapSpaces as object)) {
          spaces[name] = m((s as { used: number }).used);
        }
        return {
          heap_total_mib: m(r.javascriptHeap.totalMemory),
          heap_used_mib: m(r.javascriptHeap.usedMemory),
          external_mib: m(r.javascriptHeap.externalMemory ?? 0),
          array_buffers_mib: m(r.javascriptHeap.arrayBuffersMemory ?? 0),
          spaces,
        };
      } catch {
        /* still being written */
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return null;
}

/** The run whose final RSS is the median (the lower middle one of an even count). */
function median(runs: Mem[]): Mem {
  const sorted = [...runs].sort((a, b) => a.rss_mib - b.rss_mib);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

async function waitFor(what: string, ms: number, ok: () => boolean | Promise<boolean>) {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function benchRss(): Promise<Record<string, unknown>> {
  ensureBuilt();
  const keep = process.env.ZZ_BENCH_RSS_DIR;
  const root = keep ?? mkdtempSync(join(tmpdir(), 'zz-bench-rss-'));
  // ZZ_BENCH_RSS_REUSE=1 (with ZZ_BENCH_RSS_DIR): keep the served checkout, its token and the
  // persisted shards too, and skip the first daemon once they exist: for measuring a change
  // to the restarted daemon quickly. Figures for the README come from a fresh run.
  const reuse = keep !== undefined && process.env.ZZ_BENCH_RSS_REUSE === '1';
  const reports = join(root, 'reports');
  rmSync(reports, { recursive: true, force: true });
  const tokenFile = join(root, 'token');
  if (!(reuse && existsSync(tokenFile))) {
    rmSync(join(root, 'repos', 'repo-0'), { recursive: true, force: true });
    rmSync(join(root, 'home'), { recursive: true, force: true });
  }
  mkdirSync(reports, { recursive: true });
  const env = privateEnv();
  if (reuse) {
    const home = join(root, 'home');
    Object.assign(env, {
      HOME: home,
      XDG_CONFIG_HOME: join(home, 'config'),
      XDG_CACHE_HOME: join(home, 'cache'),
    });
  }
  // ZZ_BENCH_RSS_NODE_OPTIONS: V8 flags to try on the daemon (e.g. --max-semi-space-size=2).
  // ZZ_BENCH_RSS_SNAPSHOT=1: a heap snapshot of each restarted daemon at its end (reports/).
  const extra = process.env.ZZ_BENCH_RSS_NODE_OPTIONS ?? '';
  const snapshot = process.env.ZZ_BENCH_RSS_SNAPSHOT === '1';
  env.NODE_OPTIONS = [
    '--report-on-signal --report-signal=SIGUSR2',
    `--report-directory=${reports} --diagnostic-dir=${reports}`,
    snapshot ? '--heapsnapshot-signal=SIGUSR1' : '',
    extra,
  ].join(' ');
  const out: Record<string, unknown> = {
    repos: REPOS,
    rungs_per_repo: RUNGS,
    asks: ASKS,
    restarts: RESTARTS,
    node_options: extra,
  };
  try {
    let t = performance.now();
    const dirs = Array.from({ length: REPOS }, (_, i) => join(root, 'repos', `repo-${i}`));
    for (let i = 0; i < REPOS; i++) {
      if (!existsSync(join(dirs[i]!, '.git', 'refs', 'zz', 'ladder'))) {
        rmSync(dirs[i]!, { recursive: true, force: true });
        await makeLadderRepo(dirs[i]!, i);
      }
    }
    out.setup_s = Math.round((performance.now() - t) / 100) / 10;
    const zzConfig = join(env.XDG_CONFIG_HOME!, 'zz');
    mkdirSync(zzConfig, { recursive: true });
    await writeFile(
      join(zzConfig, 'repos.json'),
      JSON.stringify({ repos: dirs.slice(1).map((path) => ({ path })) }),
    );
    const shardDir = join(env.XDG_CACHE_HOME!, 'zz', 'search');
    const shards = () => (existsSync(shardDir) ? readdirSync(shardDir) : []).length;
    const primary = dirs[0]!;
    const key = repoKey(0);
    const phases: Array<Record<string, string | number>> = [];
    const breakdowns: Record<string, HeapBreakdown | null> = {};
    const measure = async (daemon: number, phase: string, pid: number) => {
      const m = memOf(pid);
      phases.push({ daemon, phase, rss_mib: m.rss_mib, hwm_mib: m.hwm_mib });
      breakdowns[`${daemon}: ${phase}`] = await reportOf(pid, reports);
      return m;
    };
    let url = '';
    let token = '';
    const call = async (tool: string, args: Record<string, unknown>) => {
      const r = await callHttp(url, key, tool, args, token);
      if (r.status !== 200) throw new Error(`${tool}: ${r.status} ${JSON.stringify(r.body)}`);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      return r.body.result as any;
    };
    const readLane = async () => {
      let cursor: string | undefined;
      let n = 0;
      do {
        const r = await call('lane_get', {
          lane_id: 'big',
          include_history: false,
          asks_limit: 200,
          ...(cursor ? { asks_cursor: cursor } : {}),
        });
        n += (r.asks as unknown[]).length;
        cursor = r.next_asks_cursor ?? undefined;
      } while (cursor);
      return n;
    };
    const search = async () => {
      for (const q of ['parse config', 'http request handler', 'token cache', 'render page'])
        await call('ladder_search', { query: q });
    };

    // --- daemon 1: indexes every Ladder, takes 5,000 Asks ------------------------------------
    if (!(reuse && existsSync(tokenFile))) {
      t = performance.now();
      const d = await serve(primary, env, [], 120_000);
      const pid = d.child.pid!;
      url = d.url;
      if (d.repoKeys.length !== REPOS) {
        throw new Error(`the daemon serves ${d.repoKeys.length} repos, not ${REPOS}`);
      }
      await waitFor('every shard persisted', 600_000, () => shards() >= REPOS);
      out.index_all_s = Math.round((performance.now() - t) / 100) / 10;
      await measure(1, `${REPOS} repos indexed`, pid);

      const login = await zz(primary, env, ['login', '--json']);
      token = login.json().token as string;
      await call('lane_propose', { lane_id: 'big', title: 'A big Lane' });
      t = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CLIENTS }, async () => {
          while (next < ASKS) {
            const i = next++;
            await call('ask_post', {
              lane_id: 'big',
              kind: 'work',
              title: `Ask number ${i}: do the thing in module ${i % 97}`,
              body: `Do task number ${i} of ${ASKS}. ${'Context for the task. '.repeat(8)}`,
              priority: i % 5,
            });
          }
        }),
      );
      out.post_asks_s = Math.round((performance.now() - t) / 100) / 10;
      await measure(1, `${ASKS} Asks posted`, pid);
      out.lane_asks_read = await readLane();
      await search();
      await measure(1, 'lane_get (all pages) + 4 searches', pid);
      d.child.kill('SIGTERM');
      await d.exited;
      if (reuse) await writeFile(tokenFile, token);
    } else {
      token = readFileSync(tokenFile, 'utf8');
    }

    // --- daemons 2…: restarts on the persisted shards, each measured the same way -------------
    const finals: Mem[] = [];
    const settled: Mem[] = [];
    for (let n = 2; n < 2 + RESTARTS; n++) {
      t = performance.now();
      const d = await serve(primary, env, [], 120_000);
      const pid = d.child.pid!;
      url = d.url;
      out[`restart_listening_s_${n}`] = Math.round((performance.now() - t) / 100) / 10;
      await measure(n, 'started (shards persisted)', pid);
      await search();
      await measure(n, '4 searches', pid);
      out.lane_asks_read_after_restart = await readLane();
      await search();
      finals.push(await measure(n, 'lane_get (all pages) + searches', pid));
      // Then idle: V8's memory reducer runs memory-reducing collections some tens of seconds
      // after allocation stops (young generation shrunk, old space compacted) and the RSS
      // settles. The first second at which it is back within 1 MiB of the settled value.
      if (SETTLE_S > 0) {
        const samples: number[] = [];
        for (let s = 0; s < SETTLE_S; s++) {
          await new Promise((r) => setTimeout(r, 1000));
          samples.push(memOf(pid).rss_mib);
        }
        const last = samples[samples.length - 1]!;
        const at = samples.findIndex((x) => x <= last + 1) + 1;
        settled.push(await measure(n, `idle ${SETTLE_S} s (settled after ${at} s)`, pid));
      }
      if (snapshot) {
        const before = new Set(readdirSync(reports));
        process.kill(pid, 'SIGUSR1');
        await waitFor('a heap snapshot', 120_000, () =>
          readdirSync(reports).some((f) => !before.has(f) && f.endsWith('.heapsnapshot')),
        );
        // Written in place: wait until its size stops changing.
        let size = -1;
        await waitFor('the heap snapshot written', 120_000, () => {
          const f = readdirSync(reports).find(
            (x) => !before.has(x) && x.endsWith('.heapsnapshot'),
          )!;
          const now = statSync(join(reports, f)).size;
          const same = now === size;
          size = now;
          return same;
        });
      }
      d.child.kill('SIGTERM');
      await d.exited;
    }
    const final = median(finals);

    out.phases = phases;
    out.heap = breakdowns;
    out.rss_mib = final.rss_mib;
    out.rss_mib_runs = finals.map((f) => f.rss_mib);
    out.rss_idle_mib = settled.length > 0 ? median(settled).rss_mib : null;
    out.rss_idle_mib_runs = settled.map((f) => f.rss_mib);
    out.hwm_mib = final.hwm_mib;
    out.goal_rss_under_150_mib = final.rss_mib < 150;
    out.goal_rss_idle_under_150_mib = settled.length > 0 && median(settled).rss_mib < 150;
    out.load_average = loadavg()[0];
    printTable(
      `zz serve RSS, read from /proc by another process (${REPOS} repos × ${RUNGS} rungs, ${ASKS} Asks)`,
      phases,
    );
    printTable(
      'V8 heap at each phase (MiB, from the daemon diagnostic report)',
      Object.entries(breakdowns).map(([phase, b]) => ({
        phase,
        heap_used: b?.heap_used_mib ?? '',
        heap_total: b?.heap_total_mib ?? '',
        external: b?.external_mib ?? '',
        old_space: b?.spaces.old_space ?? '',
        new_space: b?.spaces.new_space ?? '',
        code_space: b?.spaces.code_space ?? '',
        large_object: b?.spaces.large_object_space ?? '',
      })),
    );
    console.log(
      `\nsetup ${String(out.setup_s)} s, index ${String(out.index_all_s)} s, post ${String(out.post_asks_s)} s; load average ${loadavg()[0]}`,
    );
    return out;
  } finally {
    await killAll();
    if (!keep) rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const r = await benchRss();
  console.log(JSON.stringify(r, null, 2));
}
