import { execFileSync } from 'node:child_process';
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir, loadavg } from 'node:os';
import { openRepository } from '../src/git/index.js';
import { GitStore } from '../src/store/index.js';
const dir = mkdtempSync(join(tmpdir(), 'zz-prof-'));
execFileSync('git', ['init', '-q', dir]);
const repo = await openRepository(dir);
const store = new GitStore(repo);
let parent: string | null = null;
const changes = new Map<string, string>();
for (let i = 0; i < 1000; i++) changes.set(`asks/${(i % 256).toString(16).padStart(2, '0')}/a${i}.json`, JSON.stringify({ i, body: 'Do the thing described in the lane, then report back with a changeset.' }));
parent = await store.commit('refs/zz/lanes/x', { parent, changes, ops: [], summary: 's' });
execFileSync('sync');
let inSync = 0, calls = 0, outstanding = 0, waitStart = 0, waiting = 0;
for (const name of ['fsync', 'fdatasync'] as const) {
  const real = fs[name];
  (fs as any)[name] = (fd: number, cb: (e: any) => void) => {
    const t0 = performance.now(); calls++;
    if (outstanding++ === 0) waitStart = t0;
    real(fd, (e) => { const t1 = performance.now(); inSync += t1 - t0; if (--outstanding === 0) waiting += t1 - waitStart; cb(e); });
  };
}
const mode = process.argv[2] ?? 'packs';
repo.objects.smallPacks = mode === 'packs';
const N = 400;
const t0 = performance.now();
for (let n = 0; n < N; n++) {
  parent = await store.commit('refs/zz/lanes/x', { parent, changes: new Map([[`asks/${(n % 256).toString(16).padStart(2, '0')}/a${n % 1000}.json`, JSON.stringify({ n, body: 'claimed by agent' })]]), ops: [], summary: 's' });
}
const total = performance.now() - t0;
console.log(mode, 'load', loadavg()[0]!.toFixed(1), 'ms/write', (total / N).toFixed(3), 'fsync calls/write', (calls / N).toFixed(1), 'wall ms/write with >=1 fsync in flight', (waiting / N).toFixed(3), 'rest', ((total - waiting) / N).toFixed(3));
repo.close(); await repo.objects.close();
rmSync(dir, { recursive: true, force: true });
