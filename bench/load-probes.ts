import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Server, type IncomingMessage, type ServerResponse } from 'node:http';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import {
  PerformanceObserver,
  constants as perfConstants,
  type PerformanceEntry,
} from 'node:perf_hooks';
import type { Store } from '../src/store/index.js';
import { percentile } from './util.js';

// What bench/load.ts watches in the daemon (this process) while a part runs, besides the
// clients' own timings: its group commits, the git maintenance it spawned, its loop's CPU per
// tick, and an optional CPU profile of the window. Each starts when called and answers a
// function that stops it and gives what it saw.

const round = (n: number, d = 1) => Math.round(n * 10 ** d) / 10 ** d;

export interface GroupCommits {
  groups: number;
  ops_p50: number;
  /** store.commit: the group's trees, objects, their I/O and the ref's CAS. */
  commit_ms: { p50: number; p90: number; p99: number };
  /** From one group's commit to the next's: what a write waits for its group, twice at worst. */
  cycle_ms: { p50: number; p90: number; p99: number };
}

/**
 * Group commits of the Lane while the window runs (until the returned function is called):
 * how many ops each carried, how long its store.commit took and how far apart they started.
 * A write waits for the group in flight and then its own, so the cycle is what the writes'
 * latency (and the mixed load's p99) is made of. The store's commit is wrapped on the
 * instance, from outside: nothing of the daemon changes for it but one timer read a group.
 */
export function groupCommits(store: Store): () => GroupCommits {
  const seen: Array<{ ops: number; start: number; ms: number }> = [];
  const commit = store.commit;
  store.commit = async (ref, req) => {
    const start = performance.now();
    try {
      return await commit.call(store, ref, req);
    } finally {
      seen.push({ ops: req.ops.length, start, ms: performance.now() - start });
    }
  };
  const q = (xs: number[]) => ({
    p50: round(percentile(xs, 50), 1),
    p90: round(percentile(xs, 90), 1),
    p99: round(percentile(xs, 99), 1),
  });
  return () => {
    store.commit = commit;
    const starts = seen.map((g) => g.start).sort((a, b) => a - b);
    return {
      groups: seen.length,
      ops_p50: percentile(
        seen.map((g) => g.ops),
        50,
      ),
      commit_ms: q(seen.map((g) => g.ms)),
      cycle_ms: q(starts.slice(1).map((t, i) => t - starts[i]!)),
    };
  };
}

export interface GcPauses {
  /** Scavenges (young generation): count, wall ms p50 / p99 / max, and their sum. */
  minor: { n: number; p50: number; p99: number; max: number; sum: number };
  /** Mark-sweep-compact and incremental steps on the loop. */
  major: { n: number; p50: number; p99: number; max: number; sum: number };
}

/**
 * The daemon's (this process's) garbage-collection pauses while the window runs, as wall time
 * on its thread: a read that arrives during one waits for it. On a loaded 2-core machine a
 * scavenge's wall time includes waiting for a core (the main thread's and its helpers'): in
 * the storm at load average 14-19, p50 10-25 ms, where `--trace-gc-nvp` gave 6-7 ms at load
 * 5-12 (docs/performance.md, issue 17). PerformanceObserver's 'gc' entries, read in batches.
 */
export function gcPauses(): () => GcPauses {
  const minor: number[] = [];
  const major: number[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR ? minor : major).push(e.duration);
    }
  });
  obs.observe({ entryTypes: ['gc'] });
  const sum = (xs: number[]) => {
    if (xs.length === 0) return { n: 0, p50: 0, p99: 0, max: 0, sum: 0 };
    const total = xs.reduce((a, b) => a + b, 0);
    return {
      n: xs.length,
      p50: round(percentile(xs, 50), 2),
      p99: round(percentile(xs, 99), 2),
      max: round(Math.max(...xs), 2),
      sum: round(total, 0),
    };
  };
  return () => {
    obs.disconnect();
    return { minor: sum(minor), major: sum(major) };
  };
}

export const gcLine = (g: GcPauses): string =>
  `  daemon GC pauses (wall) p50 / p99 / max ms: scavenges ${g.minor.n}, ${g.minor.p50} / ${g.minor.p99} / ${g.minor.max}, ${g.minor.sum} ms in all; major ${g.major.n}, ${g.major.sum} ms in all`;

/**
 * CPU ms of this process's children that ended so far (Linux: /proc/self/stat's cutime and
 * cstime): the git maintenance the daemon spawned (gc --auto, the roll-up of packs), which
 * competes for the machine's cores but is not in process.cpuUsage(). 0 elsewhere.
 */
export function childrenCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields 16 and 17 of proc(5), counted from 1 with pid and comm: here 13 and 14; in
    // clock ticks, which /proc gives at USER_HZ, 100 a second on Linux.
    return ((Number(f[13]) + Number(f[14])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/**
 * The machine's busy CPU time in ms (every CPU: user, nice, system, irq, softirq, steal; not
 * idle or iowait), from /proc/stat's first line in clock ticks (USER_HZ, 100 a second); 0 where
 * there is no /proc.
 */
export function machineBusyMs(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
    // cpu user nice system idle iowait irq softirq steal ...
    const busy = [1, 2, 3, 6, 7, 8].reduce((n, i) => n + Number(f[i] ?? 0), 0);
    return (busy * 1000) / 100;
  } catch {
    return 0;
  }
}

export const groupLine = (g: GroupCommits): string =>
  `  group commits ${g.groups}, ${g.ops_p50} ops each (median); store.commit p50 / p90 / p99 ms ${g.commit_ms.p50} / ${g.commit_ms.p90} / ${g.commit_ms.p99}; one to the next ${g.cycle_ms.p50} / ${g.cycle_ms.p90} / ${g.cycle_ms.p99}`;

/**
 * With ZZ_LOAD_PROF set, a CPU profile of this process (the daemon) from now until the
 * returned function is called, written there as <name>.cpuprofile; otherwise nothing.
 */
export async function profileWindow(name: string): Promise<() => Promise<void>> {
  const dir = process.env.ZZ_LOAD_PROF;
  if (!dir) return async () => {};
  const heap = process.env.ZZ_LOAD_HEAP === '1';
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  // Where the garbage comes from (GC was 5-8% of these profiles): allocations sampled every
  // 32 KiB on average, kept or collected alike, as <name>.heapprofile.
  if (heap) {
    await session.post('HeapProfiler.enable');
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 32 * 1024,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  }
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    const sampled = heap ? (await session.post('HeapProfiler.stopSampling')).profile : null;
    session.disconnect();
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `${name}.cpuprofile`), JSON.stringify(profile));
    if (sampled) writeFileSync(join(dir, `${name}.heapprofile`), JSON.stringify(sampled));
  };
}

/** A stretch of at least this long between two 1 ms ticks is a stall, and is taken apart. */
export const STALL_MS = 10;

export interface LoopCpu {
  /** Process CPU ms between consecutive ticks. */
  ticks: number[];
  wallMs: number;
  /** Stalls (ticks ≥ STALL_MS apart): their wall time, split where Linux tells. */
  stalls: { n: number; ms: number; cpuMs: number; waitMs: number } | null;
}

/**
 * The daemon's CPU time (this process) between firings of a 1 ms timer, until the returned
 * function is called. Unlike the loop delay, it leaves out time the process spent waiting for
 * a core on a busy machine: a long synchronous stretch on the loop shows as a tick with that
 * much CPU. (Process CPU: the thread pool's and GC threads' CPU counts too.) On Linux, each
 * stall is also split by the main thread's schedstat into time on a CPU, time waiting for one
 * (runnable), and the rest: blocked in the kernel (a synchronous call waiting for the disk).
 */
export function loopCpu(): () => LoopCpu {
  const ticks: number[] = [];
  const t0 = performance.now();
  const statFile = `/proc/${process.pid}/task/${process.pid}/schedstat`;
  const sched = (): [number, number] | null => {
    try {
      const [cpu, wait] = readFileSync(statFile, 'utf8').split(' ').map(Number);
      return [cpu! / 1e6, wait! / 1e6];
    } catch {
      return null;
    }
  };
  const stalls: LoopCpu['stalls'] = sched() ? { n: 0, ms: 0, cpuMs: 0, waitMs: 0 } : null;
  let last = process.cpuUsage();
  let lastAt = performance.now();
  let lastSched = sched();
  const timer = setInterval(() => {
    const now = process.cpuUsage();
    const at = performance.now();
    const nowSched = stalls ? sched() : null;
    ticks.push((now.user - last.user + now.system - last.system) / 1000);
    if (stalls && nowSched && lastSched && at - lastAt >= STALL_MS) {
      stalls.n++;
      stalls.ms += at - lastAt;
      stalls.cpuMs += nowSched[0] - lastSched[0];
      stalls.waitMs += nowSched[1] - lastSched[1];
    }
    last = now;
    lastAt = at;
    lastSched = nowSched;
  }, 1);
  return () => {
    clearInterval(timer);
    return { ticks, wallMs: performance.now() - t0, stalls };
  };
}

export interface ServerTimes {
  /** Per tool: ms from the request's arrival at the daemon's HTTP server to its response end. */
  tools: Record<string, { n: number; p50: number; p99: number }>;
  /** Share of the window the daemon's event loop was busy (performance.eventLoopUtilization). */
  loop_utilization: number;
}

/**
 * How long the daemon itself held each request: from the HTTP server's 'request' event to the
 * response's 'finish', per tool (the URL's last part). Beside the clients' own timings this
 * tells the daemon's share of a latency from the rest (the kernel's socket queues, and the
 * client process's own loop, which on a 2-core machine shares the cores with the daemon).
 * Wraps http.Server's emit in this process from outside; nothing of the daemon changes.
 */
export function serverTimes(): () => ServerTimes {
  const lat: Record<string, number[]> = {};
  const emit = Server.prototype.emit;
  const elu0 = performance.eventLoopUtilization();
  Server.prototype.emit = function (this: Server, event: string, ...args: unknown[]) {
    if (event === 'request') {
      const [req, res] = args as [IncomingMessage, ServerResponse];
      const start = performance.now();
      const tool = (req.url ?? '').split('?')[0]!.split('/').at(-1) ?? '';
      res.once('finish', () => (lat[tool] ??= []).push(performance.now() - start));
    }
    return (emit as (e: string, ...a: unknown[]) => boolean).call(this, event, ...args);
  } as typeof emit;
  return () => {
    Server.prototype.emit = emit;
    const tools: ServerTimes['tools'] = {};
    for (const [t, xs] of Object.entries(lat)) {
      tools[t] = {
        n: xs.length,
        p50: round(percentile(xs, 50), 1),
        p99: round(percentile(xs, 99), 1),
      };
    }
    const loop = performance.eventLoopUtilization(elu0).utilization;
    return { tools, loop_utilization: round(loop, 2) };
  };
}

/**
 * ZZ_LOAD_PIN=1: this process (the daemon, every thread) on CPU 0 and each client process on
 * CPU 1 (taskset, Linux), so that the clients' own CPU cannot delay the daemon's loop: what
 * remains is the daemon's own tail. Other processes of the machine still run on both.
 */
export function pinTo(pid: number, cpu: number): void {
  if (process.env.ZZ_LOAD_PIN !== '1') return;
  execFileSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}
