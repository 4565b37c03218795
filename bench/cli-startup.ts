// CLI start-up, spawned: what every `zz` invocation costs before it does anything, beside the
// floor (a bare `node -e ''`) in the same run. Moved here from the e2e tests: timings are
// measured, not asserted.
import { spawnSync } from 'node:child_process';
import { makeRepo } from '../test/helpers/temp-repo.js';
import { ensureBuilt, killAll, median, privateEnv, serve, zz } from '../test/e2e/zz-process.js';

const RUNS = 7;

async function wallTimes(cwd: string, env: NodeJS.ProcessEnv, args: string[]): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = await zz(cwd, env, args);
    if (r.code !== 0) throw new Error(`zz ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    out.push(r.ms);
  }
  return out;
}

export async function benchCliStartup(): Promise<Record<string, number>> {
  ensureBuilt();
  const r = makeRepo('zz-bench-startup-');
  const env = privateEnv();
  try {
    await zz(r.dir, env, ['init']);
    const nodeTimes: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      spawnSync(process.execPath, ['-e', ''], { env });
      nodeTimes.push(performance.now() - t0);
    }
    const times: Record<string, number[]> = {
      'bare node -e ""': nodeTimes,
      'zz --help, no daemon': await wallTimes(r.dir, env, ['--help']),
      'zz lane list, in-process': await wallTimes(r.dir, env, ['lane', 'list']),
    };
    await serve(r.dir, env);
    await zz(r.dir, env, ['login']);
    times['zz --help, daemon running'] = await wallTimes(r.dir, env, ['--help']);
    times['zz lane list, through the daemon'] = await wallTimes(r.dir, env, ['lane', 'list']);
    const floor = median(nodeTimes);
    const out: Record<string, number> = {};
    console.log(`| command | median ms | × bare node |\n| --- | ---: | ---: |`);
    for (const [what, ms] of Object.entries(times)) {
      const m = median(ms);
      out[what] = Math.round(m);
      console.log(`| ${what} | ${m.toFixed(0)} | ${(m / floor).toFixed(1)} |`);
    }
    return out;
  } finally {
    await killAll();
    r.cleanup();
  }
}
