import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { initRepo, LANES_PREFIX, readLanes, repoHealth, ZzRepo } from '../src/core/index.js';
import { trackingConfigs } from '../src/core/sync/run.js';
import type { RefStore } from '../src/git/index.js';
import { cursorCodec } from '../src/schema/cursor.js';
import { registry, runTool } from '../src/tools/index.js';
import { copyLanes } from '../test/helpers/lane-copies.js';
import { makeRepo } from '../test/helpers/temp-repo.js';
import { importFromCheckout } from './checkout.js';
import { median, printTable } from './util.js';

// Daemon costs that grew with the number of refs, in-process over a real git repository:
// a lane_list page (it once read every Lane: readLanes below is what each page cost then; then
// it listed every Lane ref with its value, opening each loose ref file: the "before" rows), and
// the health poll's read of the remotes' configs (it used to list every remote Lane ref:
// listRefs('refs/zz-remotes/') below).
//
// Before and after side by side, runs interleaved: the Lane ids by listRefs (what laneIds did)
// against refNames (what it does), and a lane_list page of 50 with each. With
// ZZ_BENCH_BASELINE=<another checkout of zz> the "before" listing is that checkout's RefStore
// (its own code for a loose ref's read), else this checkout's listRefs.
// Run: npx tsx bench/ref-costs.ts [lanes, 10000] [remote refs, 760]

const OWNER = 'owner@example.com';
const LANES = Number(process.argv[2] ?? 10_000);
const REMOTE_REFS = Number(process.argv[3] ?? 760);
const RUNS = 21;

const { dir, cleanup } = makeRepo('zz-bench-');
const repo = await ZzRepo.open(dir, { key: 'local/bench' });
await initRepo(repo, { owner: OWNER, default_branch: 'main' });
const call = (tool: string, args: Record<string, unknown>) =>
  runTool(registry.require(tool), args, { repo, caller: { actor: OWNER }, local: true });
await call('lane_propose', { lane_id: 'l-00000', title: 't' });
copyLanes(
  dir,
  'l-00000',
  Array.from({ length: LANES - 1 }, (_, i) => `l-${String(i + 1).padStart(5, '0')}`),
);
// Remote refs as `git fetch` leaves them: loose files, two remotes, each with its config.
const head = (await repo.store.head('refs/zz/config'))!;
for (const remote of ['origin', 'up']) {
  mkdirSync(join(dir, '.git/refs/zz-remotes', remote, 'lanes'), { recursive: true });
  writeFileSync(join(dir, '.git/refs/zz-remotes', remote, 'config'), head + '\n');
  for (let i = 0; i < REMOTE_REFS / 2; i++)
    writeFileSync(join(dir, '.git/refs/zz-remotes', remote, 'lanes', `r${i}`), head + '\n');
}

const baselineDir = process.env.ZZ_BENCH_BASELINE;
const gitdir = join(dir, '.git');
const baseRefs: Pick<RefStore, 'list'> = baselineDir
  ? new (
      await importFromCheckout<{ RefStore: new (gitdir: string) => RefStore }>(
        baselineDir,
        'src/git/ref-store.ts',
      )
    ).RefStore(gitdir)
  : { list: (prefix) => repo.store.listRefs(prefix) };
const laneIdsNow = repo.laneIds.bind(repo);
/** What laneIds() was: every Lane ref listed with its value, the names kept. */
const laneIdsBefore = async () =>
  [...(await baseRefs.list(LANES_PREFIX)).keys()].map((r) => r.slice(LANES_PREFIX.length)).sort();

async function time(label: string, runs: number, f: () => Promise<unknown>) {
  await f();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) await f();
  const wall = (performance.now() - t0) / runs;
  const c = process.cpuUsage(cpu0);
  const cpu = (c.user + c.system) / 1000 / runs;
  console.log(`${label.padEnd(52)} ${wall.toFixed(2)} ms wall  ${cpu.toFixed(2)} ms CPU`);
}

/** Medians of `before` and `after`, run alternately RUNS times each after one warm-up. */
async function sideBySide(
  what: string,
  before: () => Promise<unknown>,
  after: () => Promise<unknown>,
): Promise<Record<string, string | number>> {
  const b: number[] = [];
  const a: number[] = [];
  await before();
  await after();
  for (let i = 0; i < RUNS; i++) {
    for (const [f, into] of i % 2
      ? [[after, a] as const, [before, b] as const]
      : [[before, b] as const, [after, a] as const]) {
      const t = performance.now();
      await f();
      into.push(performance.now() - t);
    }
  }
  const mb = median(b);
  const ma = median(a);
  return { what, 'before ms': mb, 'after ms': ma, ratio: mb / ma };
}

/** A lane_list page with laneIds as it was (before) or is (after). */
const pageWith = (ids: () => Promise<string[]>, args: Record<string, unknown>) => async () => {
  repo.laneIds = ids;
  try {
    return await call('lane_list', args);
  } finally {
    repo.laneIds = laneIdsNow;
  }
};

const rows: Array<Record<string, string | number>> = [];
for (const layout of ['loose', 'packed, 1% loose again'] as const) {
  if (layout !== 'loose') {
    execFileSync('git', ['pack-refs', '--all'], { cwd: dir });
    // Lanes written since the pack: loose over their packed values, as zz writes them.
    for (let i = 0; i < LANES; i += 100) {
      await call('ask_post', {
        lane_id: `l-${String(i).padStart(5, '0')}`,
        kind: 'work',
        title: 'x',
      });
    }
  }
  const same = JSON.stringify(await laneIdsBefore()) === JSON.stringify(await laneIdsNow());
  if (!same) throw new Error('the two listings of Lane ids differ');
  rows.push({ layout, ...(await sideBySide('Lane ids', laneIdsBefore, laneIdsNow)) });
  // The cursor a page ending halfway would give (schema/cursor.ts).
  const mid = cursorCodec('lane_list', z.string()).encode(
    `l-${String(LANES >> 1).padStart(5, '0')}`,
  );
  for (const [what, args] of [
    ['lane_list limit 50, first page', { limit: 50 }],
    ['lane_list limit 50, middle page', { limit: 50, cursor: mid }],
  ] as const) {
    const x = JSON.stringify(await pageWith(laneIdsBefore, args)());
    if (x !== JSON.stringify(await pageWith(laneIdsNow, args)())) {
      throw new Error(`${what}: the two answers differ`);
    }
    rows.push({
      layout,
      ...(await sideBySide(what, pageWith(laneIdsBefore, args), pageWith(laneIdsNow, args))),
    });
  }
}
printTable(
  `${LANES} Lanes, medians of ${RUNS} interleaved runs; before: ${baselineDir ? `listRefs of ${baselineDir}` : 'listRefs'}`,
  rows,
);

console.log(`\n${LANES} Lanes, ${REMOTE_REFS} remote Lane refs`);
await time('readLanes (what every lane_list page cost at first)', 1, () => readLanes(repo));
await time("listRefs('refs/zz-remotes/') (health poll before)", 20, () =>
  repo.store.listRefs('refs/zz-remotes/'),
);
await time('trackingConfigs (health poll now)', 20, () => trackingConfigs(repo));
await time('repoHealth', 20, () => repoHealth(repo, true));
repo.close();
cleanup();
