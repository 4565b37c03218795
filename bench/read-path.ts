// Which reader for our own state and the user's objects: isomorphic-git with one long-lived
// cache, or a persistent `git cat-file --batch`? Measured side by side on the same objects:
// loose objects (fresh lane state) and packed ones (after `git gc`), plus native one-shot
// `git cat-file -p` as the spawn-per-read baseline.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { pathToFileURL } from 'node:url';
import git from 'isomorphic-git';
import { CatFile, openRepository } from '../src/git/index.js';
import { GitStore } from '../src/store/index.js';
import { makeRepo } from '../test/helpers/temp-repo.js';
import { median, printTable } from './util.js';

export async function benchReadPath(): Promise<Record<string, unknown>> {
  const { dir, cleanup } = makeRepo('zz-bench-read-');
  try {
    const repo = await openRepository(dir);
    const store = new GitStore(repo);
    let parent: string | null = null;
    for (let i = 0; i < 300; i++) {
      const ask = `ask-${i.toString(16).padStart(10, '0')}`;
      parent = await store.commit('refs/zz/lanes/bench', {
        parent,
        changes: new Map([
          [
            `asks/${ask.slice(4, 6)}/${ask}.json`,
            JSON.stringify({ ask_id: ask, n: i, body: 'x'.repeat(300) }),
          ],
        ]),
        ops: [
          {
            id: String(i),
            op: 'ask_post',
            actor: 'a@b.c',
            lamport: i + 1,
            time: new Date().toISOString(),
            args: {},
          },
        ],
        summary: 'bench',
      });
    }
    const oids = execFileSync('git', ['rev-list', '--objects', 'refs/zz/lanes/bench'], {
      cwd: dir,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean)
      .map((l) => l.slice(0, 40));
    const sample = oids.filter((_, i) => i % 7 === 0).slice(0, 200);
    const rows: Array<Record<string, string | number>> = [];
    const out: Record<string, unknown> = {};
    for (const layout of ['loose', 'packed'] as const) {
      if (layout === 'packed') execFileSync('git', ['gc', '--quiet'], { cwd: dir });
      const gitdir = repo.gitdir;
      const cache = {};
      const iso: number[] = [];
      const cat: number[] = [];
      const spawn: number[] = [];
      const cf = new CatFile(gitdir);
      for (const oid of sample) await cf.read(oid); // warm
      for (const oid of sample) await git.readObject({ fs, gitdir, oid, cache });
      for (let round = 0; round < 5; round++) {
        let t = performance.now();
        for (const oid of sample) await git.readObject({ fs, gitdir, oid, cache });
        iso.push((performance.now() - t) / sample.length);
        t = performance.now();
        for (const oid of sample) await cf.read(oid);
        cat.push((performance.now() - t) / sample.length);
        t = performance.now();
        await Promise.all(sample.map((oid) => cf.read(oid)));
        cat.push((performance.now() - t) / sample.length);
      }
      for (const oid of sample.slice(0, 15)) {
        const t = performance.now();
        execFileSync('git', ['cat-file', '-p', oid], { cwd: dir });
        spawn.push(performance.now() - t);
      }
      cf.close();
      const row = {
        layout,
        'isomorphic-git+cache ms/obj': median(iso),
        'cat-file --batch ms/obj': median(cat),
        'spawn cat-file ms/obj': median(spawn),
        'iso/cat-file': median(iso) / median(cat),
      };
      rows.push(row);
      out[layout] = row;
    }
    printTable('Read path: isomorphic-git (shared cache) vs persistent cat-file (medians)', rows);
    store.close();
    return out;
  } finally {
    cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await benchReadPath();
