import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import { startMaintenance } from '../../src/daemon/maintenance.js';
import { hashedObject } from '../../src/git/object-format.js';
import { writePack } from '../../src/git/pack-writer.js';
import { fsckProblems, makeRepo } from '../helpers/temp-repo.js';

// The daemon's maintenance policy (src/daemon/maintenance.ts) against real git: what its runs
// do to a repository whose own history is one large pack, with packs arriving as zz's writes
// leave them (test/daemon/maintenance.test.ts has the policy with git replaced by counters).

function git(dir: string, args: string[], input?: string): string {
  return execFileSync('git', args, { cwd: dir, input, encoding: 'utf8' }).trim();
}

const packDir = (dir: string) => join(dir, '.git', 'objects', 'pack');
const packs = (dir: string) => readdirSync(packDir(dir)).filter((f) => f.endsWith('.pack'));

/** A repository reduced to what maintenance reads: key, gitdir, packs written, commits. */
function servedRepo(dir: string) {
  const listeners = new Set<() => void>();
  const objects = { packsWritten: 0 };
  const repo = {
    key: 'test/maint-git',
    git: { gitdir: join(dir, '.git'), objects },
    onCommit(l: () => void) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
  let n = 0;
  const oids: string[] = [];
  /** A commit that left `count` packs of two new blobs each (a group commit's, say). */
  const commit = async (count: number) => {
    for (let i = 0; i < count; i++, n++) {
      const entries = [`a ${n}\n`, `b ${n}\n`].map((t) => hashedObject('blob', Buffer.from(t)));
      await writePack(join(dir, '.git'), entries);
      oids.push(...entries.map((e) => e.oid));
    }
    objects.packsWritten += count;
    for (const l of listeners) l();
  };
  return { repo: repo as unknown as ZzRepo, commit, oids };
}

describe('daemon maintenance against real git', () => {
  let cleanup = () => {};
  afterEach(() => cleanup());

  it('a gc --auto due before everyPacks new packs does not rewrite the history: the packs are rolled up first', async () => {
    const made = makeRepo('zz-maint-git-');
    cleanup = made.cleanup;
    const dir = made.dir;
    // The history: 1,200 files in one pack, large enough that the roll-ups below leave it.
    for (let i = 0; i < 1200; i++) writeFileSync(join(dir, `f${i}.txt`), `file ${i}\n`);
    git(dir, ['add', '.']);
    git(dir, ['commit', '-q', '-m', 'history']);
    git(dir, ['repack', '-a', '-d', '-q']);
    const [history] = packs(dir);
    const ino = statSync(join(packDir(dir), history!)).ino;

    const { repo, commit, oids } = servedRepo(dir);
    const log: string[] = [];
    const m = startMaintenance(new Map([[repo.key, repo]]), {
      log: (l) => log.push(l),
      everyCommits: 2,
    });
    try {
      await commit(51); // past everyPacks: a roll-up
      await m.idle();
      expect(packs(dir)).toHaveLength(2);
      // 49 more, and gc --auto is due (the 2nd commit): git counts 51 packs, past its
      // gc.autoPackLimit (50), and would answer with repack -A -d, every object written again.
      await commit(49);
      await m.idle();
    } finally {
      await m.close();
    }
    expect(log).toEqual([]);
    expect(packs(dir)).toContain(history);
    expect(statSync(join(packDir(dir), history!)).ino).toBe(ino);
    expect(packs(dir).length).toBeLessThanOrEqual(3);
    const check = git(dir, ['cat-file', '--batch-check'], oids.join('\n') + '\n');
    expect(check.split('\n').filter((l) => l.endsWith(' missing'))).toEqual([]);
    expect(fsckProblems(dir)).toEqual([]);
  });
});
