import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { initRepo, type ZzRepo } from '../src/core/index.js';
import { startDaemon, type Daemon } from '../src/daemon/index.js';
import { jsonClient, type JsonClient } from '../test/helpers/http-client.js';
import { makeRepo } from '../test/helpers/temp-repo.js';
// Small helpers shared by the benchmarks: timing, medians, percentiles, tables.
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

export async function timeIt(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return performance.now() - t;
}

export function printTable(title: string, rows: Array<Record<string, string | number>>): void {
  console.log(`\n## ${title}`);
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]!);
  const fmt = (v: string | number) =>
    typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) : v;
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => fmt(r[c] ?? '').length)));
  console.log(cols.map((c, i) => c.padEnd(widths[i]!)).join('  '));
  for (const r of rows)
    console.log(cols.map((c, i) => fmt(r[c] ?? '').padEnd(widths[i]!)).join('  '));
}

export interface BenchDaemon {
  daemon: Daemon;
  repo: ZzRepo;
  /** The owner's token, and a keep-alive client that carries it. */
  token: string;
  owner: JsonClient;
  /** Clients to close at the end (the owner's included); add any you open. */
  clients: JsonClient[];
  /** The URL path of a tool on the served repo. */
  tool(name: string): string;
  close(): Promise<void>;
}

/** The daemon's code: this checkout's, or another's loaded beside it (baselines). */
export interface DaemonCode {
  startDaemon: typeof startDaemon;
  initRepo: typeof initRepo;
}

/** A daemon on a real socket over a fresh temp repository that the owner has initialised. */
export async function benchDaemon(
  prefix: string,
  maxSockets: number,
  code: DaemonCode = { startDaemon, initRepo },
): Promise<BenchDaemon> {
  const fixture = makeRepo(prefix);
  // ZZ_BENCH_HISTORY=<repository>: its branches fetched into the bench repository and packed,
  // so that what git's maintenance costs there is what it costs in a real project's checkout
  // (the bench's own repository is a few files: a full repack of it is nearly free).
  const named = process.env.ZZ_BENCH_HISTORY;
  if (named) {
    // A path is taken from where the bench was started (git runs in the fixture: `../x` would
    // name a directory beside the fixture there); anything else (a URL) goes to git as given.
    const history = existsSync(named) ? resolve(named) : named;
    execFileSync('git', ['fetch', '-q', '--', history, '+refs/heads/*:refs/remotes/history/*'], {
      cwd: fixture.dir,
    });
    execFileSync('git', ['repack', '-a', '-d', '-q'], { cwd: fixture.dir });
  }
  const daemon = await code.startDaemon({
    cwd: fixture.dir,
    port: 0,
    reposFile: join(fixture.dir, 'none.json'),
  });
  const clients: JsonClient[] = [];
  const close = async () => {
    for (const c of clients) c.close();
    await daemon.close();
    fixture.cleanup();
  };
  try {
    const repo = [...daemon.repos.values()][0]!;
    await code.initRepo(repo, { owner: 'owner@example.com', default_branch: 'main' });
    const { token } = await daemon.tokens.create('owner@example.com', 'login');
    const owner = jsonClient(daemon.url, { token, maxSockets });
    clients.push(owner);
    const tool = (name: string) => `/api/repos/${repo.key}/tools/${name}`;
    return { daemon, repo, token, owner, clients, tool, close };
  } catch (e) {
    await close();
    throw e;
  }
}
