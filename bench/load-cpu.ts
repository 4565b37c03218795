import { loadavg } from 'node:os';
import { importFromCheckout } from './checkout.js';
import { LANE, ok, readArgs, round } from './load-common.js';
import { benchDaemon, type BenchDaemon, type DaemonCode } from './util.js';

// bench/load.ts's ZZ_LOAD_PART=cpu (cpuPart below): CPU per request in one process, for A/B
// runs on a busy machine.

const round1 = (n: number) => round(n, 1);

/**
 * ZZ_LOAD_PART=cpu: CPU per request of the daemon and a client in this same process, on
 * loopback, 16 at a time: ask_post, lane_get (50 + 50), ask_query_claimable, lane_list and
 * ask_claim in turn on a Lane of 1,500+ Asks (more with more rounds: each round claims ~200);
 * rounds of ~1,000 requests (ZZ_LOAD_ROUNDS, 5 by default), best and median.
 * The client's share is the same for any two checkouts, so this compares daemons' CPU far
 * more steadily on a busy machine than the two-process parts' latency or requests/s do.
 * With ZZ_LOAD_BASELINE=<dir>, the daemon of another checkout of zz (e.g. `git worktree add
 * --detach /tmp/zz-base main`, node_modules copied in) is loaded into this process beside this
 * one's, each over its own repository, and the rounds alternate between the two: a busy
 * machine's load, which moves by the minute, then weighs on both alike, and the ratio of
 * their medians is the figure to compare (`cpu_ratio_vs_baseline`, below 1 is better).
 */
export async function cpuPart(): Promise<Record<string, unknown>> {
  const baseline = process.env.ZZ_LOAD_BASELINE;
  const rounds = Math.max(1, Number(process.env.ZZ_LOAD_ROUNDS ?? 5) || 5);
  const mid = Math.floor(rounds / 2);
  const sides: Array<{ name: string; code?: DaemonCode }> = [{ name: 'this checkout' }];
  if (baseline) sides.push({ name: `baseline ${baseline}`, code: await daemonCodeOf(baseline) });
  const runs: Array<{ name: string; bd: BenchDaemon; measure: (n: number) => Promise<number> }> =
    [];
  try {
    for (const side of sides) {
      const bd = await benchDaemon('zz-bench-load-cpu-', 16, side.code);
      runs.push({ name: side.name, bd, measure: await cpuWorkload(bd, rounds) });
    }
    const perRequest = runs.map(() => [] as number[]);
    for (let r = 0; r < rounds; r++) {
      for (const [i, run] of runs.entries()) {
        const c0 = process.cpuUsage();
        const n = await run.measure(1_000);
        const c = process.cpuUsage(c0);
        perRequest[i]!.push((c.user + c.system) / n);
      }
    }
    console.log(
      `\nCPU per request, daemon and client in one process (16 at a time, a Lane of 1,500+ Asks), load average ${round1(loadavg()[0]!)}`,
    );
    const out: Record<string, unknown> = {};
    const medians = perRequest.map((xs) => [...xs].sort((a, b) => a - b)[mid]!);
    for (const [i, run] of runs.entries()) {
      const sorted = [...perRequest[i]!].sort((a, b) => a - b);
      console.log(
        `  ${run.name}: µs per request: best ${round1(sorted[0]!)}, median ${round1(sorted[mid]!)} (rounds in order ${perRequest[i]!.map((x) => round1(x)).join(' · ')})`,
      );
      const key = i === 0 ? 'cpu_us_per_request' : 'baseline_cpu_us_per_request';
      out[`${key}_best`] = round1(sorted[0]!);
      out[`${key}_median`] = round1(sorted[mid]!);
    }
    if (runs.length > 1) {
      out.cpu_ratio_vs_baseline = round(medians[0]! / medians[1]!, 3);
      console.log(`  this / baseline, medians: ${out.cpu_ratio_vs_baseline}`);
    }
    return out;
  } finally {
    for (const run of runs) await run.bd.close();
  }
}

/** Another checkout's daemon, loaded from its sources (tsx) beside this one. */
async function daemonCodeOf(root: string): Promise<DaemonCode> {
  const daemon = await importFromCheckout<Pick<DaemonCode, 'startDaemon'>>(
    root,
    'src/daemon/index.ts',
  );
  const core = await importFromCheckout<Pick<DaemonCode, 'initRepo'>>(root, 'src/core/index.ts');
  return { startDaemon: daemon.startDaemon, initRepo: core.initRepo };
}

/**
 * Fills a Lane of the daemon with Asks to claim and warms it up; answers the measure: a number
 * of requests of the mix run 16 at a time (the count actually made).
 */
async function cpuWorkload(
  bd: BenchDaemon,
  rounds: number,
): Promise<(requests: number) => Promise<number>> {
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = await bd.owner.post(bd.tool(name), args);
    ok(name, r);
    return r.json.result;
  };
  await call('lane_propose', { lane_id: LANE, title: 'Load' });
  const open: string[] = [];
  let posted = 0;
  const workers = (f: () => Promise<boolean>) =>
    Promise.all(
      Array.from({ length: 16 }, async () => {
        while (await f());
      }),
    );
  await workers(async () => {
    if (posted++ >= Math.max(1_500, 200 * rounds + 200)) return false;
    open.push((await call('ask_post', { lane_id: LANE, kind: 'work', title: 'pre' })).ask.ask_id);
    return true;
  });
  const measure = async (requests: number) => {
    let done = 0;
    await workers(async () => {
      if (done >= requests) return false;
      await call('ask_post', { lane_id: LANE, kind: 'work', title: 'cpu' });
      await call('lane_get', readArgs('lane_get'));
      await call('ask_query_claimable', readArgs('ask_query_claimable'));
      await call('lane_list', {});
      const id = open.pop();
      if (id) await call('ask_claim', { lane_id: LANE, ask_id: id });
      done += id ? 5 : 4;
      return true;
    });
    return done;
  };
  await measure(500);
  return measure;
}
