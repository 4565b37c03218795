import { pathToFileURL } from 'node:url';
import {
  configRefusalLog,
  foldConfig,
  foldLadder,
  foldLane,
  ladderRefusalLog,
  laneRefusalLog,
} from '../test/helpers/refusal-logs.js';

// A cold fold of logs in which nearly every op is refused (a hostile replica's, synced in):
// the Lane's (claims lost, answers not the holder's with a follow-up each), the config's
// (role_grants by a non-owner) and the Ladder's (rung writes by a non-coordinator). The folds
// list each refusal (`rejected`, a Lane's `suppressed`); the lists are shared by snapshots, and
// until 2026-12-03 each refusal copied its whole list (quadratic in refusals).
// Run: node --import tsx bench/fold-refusals.ts [n] (default 50,000 refusals per log).
// Measured 2026-12-03 on the shared 2-core machine (loaded by other work), log built and parsed
// included: before, 10,000 refusals took lane 5,060 ms, config 396 ms, Ladder 611 ms, and
// 50,000 took the config 293 s and the Lane over 500 s (stopped); after, 10,000 take 388 / 759
// / 158 ms (config: noise of the load) and 50,000 take 1,450 / 1,033 / 622 ms.

const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

export async function benchFoldRefusals(n = 50_000): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = { refusals: n };
  const cases: Array<[string, () => number]> = [
    ['lane', () => foldLane(laneRefusalLog(n)).rejected.length],
    ['config', () => foldConfig(configRefusalLog(n)).rejected.length],
    ['ladder', () => foldLadder(ladderRefusalLog(n)).rejected.length],
  ];
  for (const [name, run] of cases) {
    const t0 = process.hrtime.bigint();
    const refused = run();
    const took = ms(t0);
    if (refused !== n) throw new Error(`${name}: ${refused} refusals, expected ${n}`);
    out[`${name}_ms`] = Math.round(took);
    console.log(
      `${name}: cold fold of ${n} refused ops (log built and parsed too): ${took.toFixed(0)} ms`,
    );
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1]!).href) {
  await benchFoldRefusals(process.argv[2] ? Number(process.argv[2]) : undefined);
}
