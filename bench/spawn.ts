import { loadavg, tmpdir } from 'node:os';
import { runGit } from '../src/git/index.js';
import { percentile } from './util.js';

// How long starting a git child holds the thread that starts it (issue 17): runGit returns
// once the child is started, so the time of the call is what the daemon's event loop waits.
// On the loop (spawn(): libuv forks, then waits until the child has exec'd) against off it
// (`offLoop`: started from a worker thread, git/spawn-thread.ts), alternating, as the daemon's
// maintenance runs it (niced), in a process holding a heap of a daemon's size (~120 MiB RSS:
// a fork copies the page tables of all of it). ZZ_SPAWN_ROUNDS: calls each way (40).

export async function benchSpawn(): Promise<Record<string, unknown>> {
  const rounds = Math.max(1, Number(process.env.ZZ_SPAWN_ROUNDS ?? 40) || 40);
  const heap: object[] = [];
  for (let i = 0; i < 600_000; i++) heap.push({ i, s: `x${i}` });
  const held = { onLoop: [] as number[], offLoop: [] as number[] };
  // This process's CPU (every thread: the worker's too) from the call to the child's end.
  const cpu = { onLoop: [] as number[], offLoop: [] as number[] };
  const load0 = loadavg()[0]!;
  for (let i = 0; i < rounds; i++) {
    for (const side of ['onLoop', 'offLoop'] as const) {
      const c0 = process.cpuUsage();
      const t = performance.now();
      const run = runGit(['--version'], { cwd: tmpdir(), nice: 10, offLoop: side === 'offLoop' });
      held[side].push(performance.now() - t);
      await run;
      const c = process.cpuUsage(c0);
      cpu[side].push((c.user + c.system) / 1000);
    }
  }
  const rss = Math.round(process.memoryUsage().rss / 2 ** 20);
  const out: Record<string, unknown> = { rounds, rss_mib: rss, heap_objects: heap.length };
  console.log(
    `\nStarting git (niced): how long the call holds the calling thread, ${rounds} calls each way, RSS ${rss} MiB, load average ${load0.toFixed(1)}`,
  );
  for (const side of ['onLoop', 'offLoop'] as const) {
    const xs = held[side];
    const [p50, p90, max] = [50, 90, 100].map((p) => Math.round(percentile(xs, p) * 100) / 100);
    const cpuP50 = Math.round(percentile(cpu[side], 50) * 100) / 100;
    console.log(
      `  ${side === 'onLoop' ? 'on the loop ' : 'off the loop'}  p50 / p90 / max ms  ${p50} / ${p90} / ${max}   process CPU a run p50 ${cpuP50} ms`,
    );
    out[`${side}_held_ms`] = { p50, p90, max };
    out[`${side}_cpu_ms_p50`] = cpuP50;
  }
  return out;
}
