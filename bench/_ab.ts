import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir, loadavg } from 'node:os';
import { openRepository } from '../src/git/index.js';
import { GitStore } from '../src/store/index.js';
const dir = mkdtempSync(join(tmpdir(), 'zz-ab-'));
execFileSync('git', ['init', '-q', dir]);
const repo = await openRepository(dir);
const store = new GitStore(repo);
let parent: string | null = null;
const changes = new Map<string, string>();
for (let i = 0; i < 1000; i++) changes.set(`asks/${(i % 256).toString(16).padStart(2, '0')}/a${i}.json`, JSON.stringify({ i, body: 'Do the thing described in the lane, then report back with a changeset.' }));
parent = await store.commit('refs/zz/lanes/x', { parent, changes, ops: [], summary: 's' });
execFileSync('sync');
const res: Record<string, number[]> = { packs: [], loose: [] };
let n = 0;
for (let round = 0; round < 8; round++) {
  for (const mode of round % 2 ? ['loose', 'packs'] : ['packs', 'loose']) {
    repo.objects.smallPacks = mode === 'packs';
    const t0 = performance.now();
    for (let k = 0; k < 60; k++, n++) {
      parent = await store.commit('refs/zz/lanes/x', { parent, changes: new Map([[`asks/${(n % 256).toString(16).padStart(2, '0')}/a${n % 1000}.json`, JSON.stringify({ n, body: 'claimed by agent' })]]), ops: [], summary: 's' });
    }
    res[mode]!.push(60000 / (performance.now() - t0));
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
console.log(loadavg()[0]!.toFixed(1), 'ops/s packs', med(res.packs!).toFixed(0), 'loose', med(res.loose!).toFixed(0), JSON.stringify(Object.fromEntries(Object.entries(res).map(([k, v]) => [k, v.map(Math.round)]))));
repo.close();
await repo.objects.close();
rmSync(dir, { recursive: true, force: true });
