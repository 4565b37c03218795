import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { initRepo, readLanes, repoHealth, ZzRepo } from '../src/core/index.js';
import { trackingConfigs } from '../src/core/sync/run.js';
import { registry, runTool } from '../src/tools/index.js';
import { makeRepo } from '../test/helpers/temp-repo.js';

// Two daemon costs that grew with the number of refs, in-process over a real git repository:
// a lane_list page (it used to read every Lane: readLanes below is what each page cost), and
// the health poll's read of the remotes' configs (it used to list every remote Lane ref:
// listRefs('refs/zz-remotes/') below).
// Run: npx tsx bench/ref-costs.ts [lanes] [remote refs]

const OWNER = 'owner@example.com';
const LANES = Number(process.argv[2] ?? 500);
const REMOTE_REFS = Number(process.argv[3] ?? 760);

const { dir, cleanup } = makeRepo('zz-bench-');
const repo = await ZzRepo.open(dir, { key: 'local/bench' });
await initRepo(repo, { owner: OWNER, default_branch: 'main' });
const call = (tool: string, args: Record<string, unknown>) =>
  runTool(registry.require(tool), args, { repo, caller: { actor: OWNER }, local: true });
for (let i = 0; i < LANES; i += 50) {
  await Promise.all(
    Array.from({ length: Math.min(50, LANES - i) }, (_, j) =>
      call('lane_propose', { lane_id: `l-${String(i + j).padStart(5, '0')}`, title: 't' }),
    ),
  );
}
// Remote refs as `git fetch` leaves them: loose files, two remotes, each with its config.
const head = (await repo.store.head('refs/zz/config'))!;
for (const remote of ['origin', 'up']) {
  mkdirSync(join(dir, '.git/refs/zz-remotes', remote, 'lanes'), { recursive: true });
  writeFileSync(join(dir, '.git/refs/zz-remotes', remote, 'config'), head + '\n');
  for (let i = 0; i < REMOTE_REFS / 2; i++)
    writeFileSync(join(dir, '.git/refs/zz-remotes', remote, 'lanes', `r${i}`), head + '\n');
}

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

console.log(`${LANES} Lanes, ${REMOTE_REFS} remote Lane refs`);
await time('readLanes (what every lane_list page cost before)', 5, () => readLanes(repo));
await time('lane_list limit 1, first page', 50, () => call('lane_list', { limit: 1 }));
await time('lane_list limit 100, first page', 20, () => call('lane_list', { limit: 100 }));
let pages = 0;
const t0 = performance.now();
let cursor: string | null = null;
do {
  const r = (await call('lane_list', { limit: 10, ...(cursor ? { cursor } : {}) })) as {
    next_cursor: string | null;
  };
  cursor = r.next_cursor;
  pages++;
} while (cursor);
console.log(`lane_list limit 10, all ${pages} pages: ${(performance.now() - t0).toFixed(0)} ms`);
await time("listRefs('refs/zz-remotes/') (health poll before)", 20, () =>
  repo.store.listRefs('refs/zz-remotes/'),
);
await time('trackingConfigs (health poll now)', 20, () => trackingConfigs(repo));
await time('repoHealth', 20, () => repoHealth(repo, true));
repo.close();
cleanup();
