// CLI start-up, spawned: what each `zz` invocation costs, beside the floors in the same run
// (`node -e 0`: Node itself; `git --version`: the tool agents call as often). Runs are
// interleaved round by round (every command once, then again), so a load that comes and goes
// hits all rows alike. Wall time is median and p95 (nearest rank: with
// 11 runs, the slowest); CPU is the child's user + system time from /proc (Linux; clock ticks, 10 ms).
// Timings are measured here, never asserted in tests.
//
// Git processes: each zz row is also run once more, untimed, with a `git` on PATH that counts
// its calls before it execs the real one (what the row spawns itself; a daemon's own are not
// counted).
//
// ZZ_BENCH_STARTUP_RUNS: runs per command (default 11). ZZ_BENCH_STARTUP_BASELINE: another
// built checkout (e.g. a worktree of main) whose dist/cli/main.js runs the same zz rows in the
// same rounds, for before → after on the same machine in one run.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeRepo } from '../test/helpers/temp-repo.js';
import { ZZ_MAIN, ensureBuilt, killAll, privateEnv, serve, zz } from '../test/e2e/zz-process.js';

const RUNS = Number(process.env.ZZ_BENCH_STARTUP_RUNS ?? 11);

const POST = ['ask', 'post', '--lane-id', '_repo', '--kind', 'work', '--title', 'bench'];

/**
 * The zz command lines measured; `daemon` rows run while `zz serve` serves the checkout.
 * `exit`: the status the command answers here (`zz sync` has no remote to sync with).
 */
const ZZ_ROWS: Array<{ args: string[]; daemon?: boolean; note?: string; exit?: number }> = [
  { args: ['--version'] },
  { args: ['--help'] },
  { args: ['help'] },
  { args: ['lane', '--help'] },
  { args: ['work', '--help'] },
  { args: ['init', '--no-fetch'], note: 'already initialised' },
  { args: ['repo', 'state'], note: 'in-process' },
  { args: ['lane', 'list'], note: 'in-process' },
  { args: ['ask', 'list'], note: 'in-process' },
  { args: POST, note: 'in-process' },
  { args: ['whoami'], note: 'in-process' },
  { args: ['sync'], note: 'no remote', exit: 4 },
  // stdin is empty: the MCP server starts, reads end of input and stops.
  { args: ['mcp'], note: 'start and stop' },
  { args: ['repo', 'state'], daemon: true, note: 'fast path to the daemon' },
  { args: ['lane', 'list'], daemon: true, note: 'fast path to the daemon' },
  { args: POST, daemon: true, note: 'fast path to the daemon' },
];

/** CPU seconds of this process's waited-for children so far (user + system), or null. */
function childCpuMs(): number | null {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of stat(5) (cutime, cstime); f[0] is field 3.
    return ((Number(f[13]) + Number(f[14])) * 1000) / ticks;
  } catch {
    return null;
  }
}
let ticks = 100;

interface Row {
  name: string;
  cmd: string[];
  cwd: string;
  daemon: boolean;
  exit: number;
  wall: number[];
  cpu: number[];
  gits?: number;
}

/** A directory holding a `git` that appends a line to `log` per call, then runs the real git. */
function countingGit(): { dir: string; log: string } {
  const dir = mkdtempSync(join(tmpdir(), 'zz-bench-git-'));
  const real = execFileSync('sh', ['-c', 'command -v git'], { encoding: 'utf8' }).trim();
  const log = join(dir, 'calls');
  writeFileSync(join(dir, 'git'), `#!/bin/sh\necho >> '${log}'\nexec '${real}' "$@"\n`);
  chmodSync(join(dir, 'git'), 0o755);
  return { dir, log };
}

function countGits(row: Row, env: NodeJS.ProcessEnv, shim: { dir: string; log: string }): void {
  writeFileSync(shim.log, '');
  const r = spawnSync(row.cmd[0]!, row.cmd.slice(1), {
    cwd: row.cwd,
    env: { ...env, PATH: `${shim.dir}:${env.PATH ?? ''}` },
    stdio: 'pipe',
  });
  if (r.status !== row.exit)
    throw new Error(`${row.name} exited ${r.status}: ${r.stderr.toString()}`);
  row.gits = readFileSync(shim.log, 'utf8').length;
}

function runOnce(row: Row, env: NodeJS.ProcessEnv): void {
  const c0 = childCpuMs();
  const t0 = performance.now();
  const r = spawnSync(row.cmd[0]!, row.cmd.slice(1), { cwd: row.cwd, env, stdio: 'pipe' });
  const ms = performance.now() - t0;
  const c1 = childCpuMs();
  if (r.status !== row.exit)
    throw new Error(`${row.name} exited ${r.status}: ${r.stderr.toString()}`);
  row.wall.push(ms);
  if (c0 !== null && c1 !== null) row.cpu.push(c1 - c0);
}

const pct = (xs: number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? NaN;
};

export async function benchCliStartup(): Promise<Record<string, unknown>> {
  ensureBuilt();
  try {
    ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    /* 100, Linux's usual */
  }
  const baseline = process.env.ZZ_BENCH_STARTUP_BASELINE;
  const baseMain = baseline ? join(baseline, 'dist', 'cli', 'main.js') : null;
  if (baseMain && !existsSync(baseMain)) throw new Error(`no ${baseMain}: build it first`);
  const r = makeRepo('zz-bench-startup-');
  const env = privateEnv();
  const rows: Row[] = [];
  const add = (name: string, cmd: string[], daemon = false, exit = 0) =>
    rows.push({ name, cmd, cwd: r.dir, daemon, exit, wall: [], cpu: [] });
  add('node -e 0', [process.execPath, '-e', '0']);
  add('git --version', ['git', '--version']);
  for (const z of ZZ_ROWS) {
    const what = `zz ${z.args.join(' ')}${z.note ? ` (${z.note})` : ''}`;
    if (baseMain)
      add(`${what}, baseline`, [process.execPath, baseMain, ...z.args], !!z.daemon, z.exit);
    add(what, [process.execPath, ZZ_MAIN, ...z.args], !!z.daemon, z.exit);
  }
  const started = performance.now();
  const shim = countingGit();
  try {
    if ((await zz(r.dir, env, ['init', '--no-fetch'])).code !== 0) throw new Error('zz init');
    for (const phase of [false, true]) {
      if (phase) {
        await serve(r.dir, env);
        if ((await zz(r.dir, env, ['login'])).code !== 0) throw new Error('zz login');
      }
      const these = rows.filter((x) => x.daemon === phase);
      for (let i = 0; i < RUNS; i++) for (const row of these) runOnce(row, env);
      for (const row of these) if (row.name.startsWith('zz ')) countGits(row, env, shim);
    }
  } finally {
    await killAll();
    r.cleanup();
    rmSync(shim.dir, { recursive: true, force: true });
  }
  const floor = pct(rows[0]!.wall, 50);
  const out: Record<string, unknown> = {};
  console.log(
    `${RUNS} runs a row, interleaved, ${((performance.now() - started) / 1000).toFixed(0)} s in all\n` +
      '| command | wall median ms | wall p95 ms | CPU median ms | × node -e 0 | git processes |\n' +
      '| --- | ---: | ---: | ---: | ---: | ---: |',
  );
  for (const row of rows) {
    const m = pct(row.wall, 50);
    const p95 = pct(row.wall, 95);
    const cpu = row.cpu.length ? pct(row.cpu, 50) : NaN;
    out[row.name] = {
      median_ms: Math.round(m),
      p95_ms: Math.round(p95),
      cpu_ms: cpu,
      ...(row.gits === undefined ? {} : { git_processes: row.gits }),
    };
    console.log(
      `| ${row.name} | ${m.toFixed(0)} | ${p95.toFixed(0)} | ${Number.isNaN(cpu) ? '–' : cpu.toFixed(0)} | ${(m / floor).toFixed(1)} | ${row.gits ?? '–'} |`,
    );
  }
  return out;
}
