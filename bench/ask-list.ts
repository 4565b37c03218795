import { initRepo, ZzRepo } from '../src/core/index.js';
import { registry, runTool } from '../src/tools/index.js';
import { median, printTable } from './util.js';

// ask_list across Lanes, paged by cursor, in-process over a memory store: 8,000 Asks in 4
// Lanes, walked 100 at a time (80 pages), with and without filters. What a page costs once the
// Lanes are read (their fold is cached): the sort, the filter and the cursor's place.
// Run: npx tsx bench/ask-list.ts

const OWNER = 'owner@example.com';
const LANES = 4;
const ASKS = 8000;
const LIMIT = 100;

async function call(repo: ZzRepo, tool: string, args: Record<string, unknown>) {
  return runTool(registry.require(tool), args, { repo, caller: { actor: OWNER }, local: true });
}

const repo = ZzRepo.memory('local/bench');
await initRepo(repo, { owner: OWNER, default_branch: 'main' });
for (let l = 0; l < LANES; l++)
  await call(repo, 'lane_propose', { lane_id: `l${l}`, title: `L${l}` });
// Posted side by side (group commit), priorities mixed so that the order is not posting order.
for (let i = 0; i < ASKS; i += 200) {
  await Promise.all(
    Array.from({ length: 200 }, (_, j) =>
      call(repo, 'ask_post', {
        lane_id: `l${(i + j) % LANES}`,
        kind: 'work',
        title: `ask ${i + j}`,
        priority: (i + j) % 5,
      }),
    ),
  );
}

async function walk(filters: Record<string, unknown>) {
  const times: number[] = [];
  let cursor: string | null = null;
  let seen = 0;
  const t0 = performance.now();
  do {
    const t = performance.now();
    const r: Record<string, unknown> = await call(repo, 'ask_list', {
      ...filters,
      limit: LIMIT,
      ...(cursor ? { cursor } : {}),
    });
    times.push(performance.now() - t);
    seen += (r.asks as unknown[]).length;
    cursor = r.next_cursor as string | null;
  } while (cursor);
  return {
    pages: times.length,
    seen,
    page_ms: median(times),
    max_ms: Math.max(...times),
    walk_ms: performance.now() - t0,
  };
}

await walk({}); // warm: the Lanes' folds are read and cached
const rows = [];
for (const [name, filters] of [
  ['all Lanes', {}],
  ['state open', { state: ['open'] }],
  ['one Lane', { lane_id: 'l1' }],
] as const) {
  rows.push({ listing: name, ...(await walk(filters)) });
}
printTable(
  `ask_list, ${ASKS} Asks in ${LANES} Lanes, ${LIMIT} a page (median page, whole walk)`,
  rows,
);
repo.close();
