import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GitSyncLocal } from '../../src/core/sync/index.js';
import { openRepository, RefCasError, RefStore, type GitRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// Sync moves its local refs in one transaction (RefStore.casMany, in-process, under git's own
// lock files): every old value is checked before any ref moves, a lock git holds is honoured,
// and two transactions over the same refs in opposite orders do not deadlock.

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function repoWithCommits(): { dir: string; gitdir: string; c: string[] } {
  const { dir, cleanup } = makeRepo('zz-reftx-');
  cleanups.push(cleanup);
  const c: string[] = [];
  for (let i = 0; i < 3; i++) {
    writeFileSync(join(dir, 'f'), String(i));
    sh(dir, 'add', 'f');
    sh(dir, 'commit', '-q', '-m', `c${i}`);
    c.push(sh(dir, 'rev-parse', 'HEAD'));
  }
  return { dir, gitdir: join(dir, '.git'), c };
}

const refOf = (dir: string, ref: string) => {
  try {
    return sh(dir, 'rev-parse', '--verify', '--quiet', ref);
  } catch {
    return null;
  }
};

describe('RefStore.casMany', () => {
  it('moves every ref, or none when one holds another value than expected', async () => {
    const { dir, gitdir, c } = repoWithCommits();
    const refs = new RefStore(gitdir);
    await refs.casMany([
      { ref: 'refs/zz/lanes/a', expected: null, next: c[0]! },
      { ref: 'refs/zz/lanes/c', expected: null, next: c[0]! },
    ]);
    expect(refOf(dir, 'refs/zz/lanes/a')).toBe(c[0]);
    expect(refOf(dir, 'refs/zz/lanes/c')).toBe(c[0]);
    // Packed values count as current values too.
    sh(dir, 'pack-refs', '--all');
    // The stale one comes last in lock order: the others were locked and checked already.
    const err = await refs
      .casMany([
        { ref: 'refs/zz/lanes/c', expected: c[2]!, next: c[1]! },
        { ref: 'refs/zz/lanes/a', expected: c[0]!, next: c[1]! },
        { ref: 'refs/zz/lanes/b', expected: null, next: c[1]! },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefCasError);
    expect((err as RefCasError).ref).toBe('refs/zz/lanes/c');
    expect(refOf(dir, 'refs/zz/lanes/a')).toBe(c[0]);
    expect(refOf(dir, 'refs/zz/lanes/b')).toBeNull();
    expect(refOf(dir, 'refs/zz/lanes/c')).toBe(c[0]);
    // No lock is left behind, and git can move the refs at once.
    expect(lockFiles(gitdir)).toEqual([]);
    sh(dir, 'update-ref', 'refs/zz/lanes/a', c[2]!, c[0]!);
  });

  it('honours a lock git holds: nothing moves, every lock it took is released', async () => {
    const { dir, gitdir, c } = repoWithCommits();
    const refs = new RefStore(gitdir, { lockTimeoutMs: 200 });
    sh(dir, 'update-ref', 'refs/zz/lanes/b', c[0]!);
    // git's lock on one ref of the transaction (as `git update-ref` holds it while it works).
    writeFileSync(join(gitdir, 'refs/zz/lanes/b.lock'), '');
    const err = await refs
      .casMany([
        { ref: 'refs/zz/lanes/a', expected: null, next: c[1]! },
        { ref: 'refs/zz/lanes/b', expected: c[0]!, next: c[1]! },
      ])
      .catch((e: unknown) => e);
    expect((err as { code?: string }).code).toBe('ref_locked');
    expect(refOf(dir, 'refs/zz/lanes/a')).toBeNull();
    expect(refOf(dir, 'refs/zz/lanes/b')).toBe(c[0]);
    expect(lockFiles(gitdir)).toEqual(['refs/zz/lanes/b.lock']);
  });

  it('two transactions naming the same refs in opposite orders both finish', async () => {
    const { dir, gitdir, c } = repoWithCommits();
    // The default lock timeout (10 s): each holder keeps its locks across an fdatasync, which
    // a loaded CI disk can stretch past 2 s, a wait that is not a deadlock. A cycle of waits
    // (locks not taken in name order) still ends both in ref_locked, after 10 s.
    const one = new RefStore(gitdir);
    const two = new RefStore(gitdir);
    for (let round = 0; round < 20; round++) {
      const a = refOf(dir, 'refs/zz/lanes/a');
      const b = refOf(dir, 'refs/zz/lanes/b');
      const next = c[round % 3]!;
      const results = await Promise.allSettled([
        one.casMany([
          { ref: 'refs/zz/lanes/a', expected: a, next },
          { ref: 'refs/zz/lanes/b', expected: b, next },
        ]),
        two.casMany([
          { ref: 'refs/zz/lanes/b', expected: b, next },
          { ref: 'refs/zz/lanes/a', expected: a, next },
        ]),
      ]);
      // Exactly one wins each round (the other finds the values moved), never a lock timeout.
      const won = results.filter((r) => r.status === 'fulfilled').length;
      const lost = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      if (a === next && b === next) expect(won).toBe(2);
      else {
        expect(won).toBe(1);
        expect(lost[0]).toBeInstanceOf(RefCasError);
      }
      expect(refOf(dir, 'refs/zz/lanes/a')).toBe(next);
      expect(refOf(dir, 'refs/zz/lanes/b')).toBe(next);
    }
  });
});

describe('GitSyncLocal.update', () => {
  it('moves refs in-process and deletes through git, in one transaction either way', async () => {
    const { dir, gitdir, c } = repoWithCommits();
    const repo: GitRepository = await openRepository(dir);
    cleanups.push(() => repo.close());
    const local = new GitSyncLocal(repo, new GitStore(repo));
    await local.update([
      { ref: 'refs/zz/lanes/a', old: null, new: c[0]! },
      { ref: 'refs/zz-quarantine/origin/lanes/a', old: null, new: c[1]! },
    ]);
    sh(dir, 'pack-refs', '--all');
    // A quarantine cleared (a deletion, here of a packed ref) beside a move.
    await local.update([
      { ref: 'refs/zz/lanes/a', old: c[0]!, new: c[2]! },
      { ref: 'refs/zz-quarantine/origin/lanes/a', old: c[1]!, new: null },
    ]);
    expect(refOf(dir, 'refs/zz/lanes/a')).toBe(c[2]);
    expect(refOf(dir, 'refs/zz-quarantine/origin/lanes/a')).toBeNull();
    // A stale old value fails the whole transaction, deletion included.
    await local.update([{ ref: 'refs/zz-quarantine/origin/lanes/x', old: null, new: c[0]! }]);
    await expect(
      local.update([
        { ref: 'refs/zz/lanes/a', old: c[1]!, new: c[0]! },
        { ref: 'refs/zz-quarantine/origin/lanes/x', old: c[0]!, new: null },
      ]),
    ).rejects.toBeInstanceOf(RefCasError);
    expect(refOf(dir, 'refs/zz-quarantine/origin/lanes/x')).toBe(c[0]);
    expect(existsSync(join(gitdir, 'refs/zz/lanes/a.lock'))).toBe(false);
  });
});

function lockFiles(gitdir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const e of readdirSync(join(gitdir, rel), { withFileTypes: true })) {
      const p = `${rel}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.lock')) out.push(p);
    }
  };
  walk('refs');
  return out.sort();
}

describe('a transaction of many refs', () => {
  it('moves 3,000 refs under a limit of 256 open files (a lock held is not an open fd)', () => {
    const { gitdir, c } = repoWithCommits();
    // The built RefStore in a process whose fd limit is far below the refs moved: one fd a
    // ref held until the commit failed such a transaction with EMFILE (hostile review H4).
    const store = join(process.cwd(), 'dist/git/ref-store.js');
    const script = `
      const { RefStore } = await import(${JSON.stringify(store)});
      const s = new RefStore(${JSON.stringify(gitdir)});
      await s.casMany(Array.from({ length: 3000 }, (_, i) =>
        ({ ref: 'refs/zz/lanes/l' + i, expected: null, next: ${JSON.stringify(c[0])} })));
      console.log('ok');`;
    const r = spawnSync(
      'sh',
      ['-c', 'ulimit -n 256 && exec node --input-type=module -e "$0"', script],
      {
        encoding: 'utf8',
      },
    );
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('ok');
    const n = sh(join(gitdir, '..'), 'for-each-ref', '--count=5000', 'refs/zz/lanes/');
    expect(n.trim().split('\n')).toHaveLength(3000);
    expect(readdirSync(join(gitdir, 'refs/zz/lanes')).filter((f) => f.endsWith('.lock'))).toEqual(
      [],
    );
  }, 60_000);
});
