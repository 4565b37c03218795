import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GitSyncLocal } from '../../src/core/sync/index.js';
import { openRepository, type GitRepository, type ObjectType } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';

// A sync merge's tree is the remote tip's with the local-only ops' files rewritten; most of
// those files are byte for byte what the local tip already holds, so only what differs from
// the local tip is written (a 1,000-op merge wrote 1,004 objects as a pack, now 4 loose ones).
// What is reused must be exactly what the local tip has at that path: the tree must still be
// complete and right.

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function setup(): Promise<{ dir: string; repo: GitRepository; store: GitStore }> {
  const { dir, cleanup } = makeRepo('zz-merge-reuse-');
  const repo = await openRepository(dir);
  cleanups.push(() => repo.close(), cleanup);
  return { dir, repo, store: new GitStore(repo) };
}

const commit = (store: GitStore, parents: string[], files: Record<string, string | null>) =>
  store.writeCommit({
    parents,
    changes: new Map(Object.entries(files)),
    author: 'a@example.com',
    message: 'test\n',
  });

describe('the merge commit reuses what the local tip holds', () => {
  it('writes only the objects that differ from the local tip, and the tree is complete', async () => {
    const { dir, repo, store } = await setup();
    const base = await commit(store, [], {
      'lane.json': '{"v":0}',
      'asks/00/a.json': 'a0',
      'asks/00/b.json': 'b0',
      'asks/01/c.json': 'c0',
    });
    // Local: b changed, d new, in their own subtree e new. Remote: c changed.
    const local = await commit(store, [base], {
      'asks/00/b.json': 'b-local',
      'asks/00/d.json': 'd-local',
      'asks/02/e.json': 'e-local',
    });
    const remote = await commit(store, [base], { 'asks/01/c.json': 'c-remote' });
    const written: Array<{ type: ObjectType; body: Buffer }> = [];
    const writeMany = repo.objects.writeMany.bind(repo.objects);
    repo.objects.writeMany = (objects, pending) => {
      written.push(...objects);
      return writeMany(objects, pending);
    };
    const merge = await new GitSyncLocal(repo, store).writeMerge({
      parents: [remote, local],
      // What the fold says the local-only ops leave: b and d as the local tip has them, e's
      // whole subtree as well, and lane.json with new content found on neither side.
      changes: new Map([
        ['asks/00/b.json', 'b-local'],
        ['asks/00/d.json', 'd-local'],
        ['asks/02/e.json', 'e-local'],
        ['lane.json', '{"v":2}'],
      ]),
      message: 'merge\n\nZz-Op: merge\nZz-Lamport: 3\n',
    });
    const files = sh(dir, 'ls-tree', '-r', '--format=%(path) %(objectname)', merge)
      .split('\n')
      .map((l) => {
        const [path, oid] = l.split(' ');
        return [path, sh(dir, 'cat-file', 'blob', oid!)];
      });
    expect(Object.fromEntries(files)).toEqual({
      'asks/00/a.json': 'a0',
      'asks/00/b.json': 'b-local',
      'asks/00/d.json': 'd-local',
      'asks/01/c.json': 'c-remote',
      'asks/02/e.json': 'e-local',
      'lane.json': '{"v":2}',
    });
    expect(fsckProblems(dir)).toEqual([]);
    // New: lane.json's blob, asks/ (local's 00 and 02 beside remote's 01), the root and the
    // commit. Not b, d, e, nor the asks/00 and asks/02 trees: the local tip has them.
    expect(written.map((o) => o.type).sort()).toEqual(['blob', 'commit', 'tree', 'tree']);
    expect(written.find((o) => o.type === 'blob')!.body.toString()).toBe('{"v":2}');
  });

  it("keeps the merge's small pack .kept until update() has moved the ref, so a git repack -a -d meanwhile drops nothing", async () => {
    const { dir, repo, store } = await setup();
    const base = await commit(store, [], { 'lane.json': '{"v":0}' });
    const local = await commit(store, [base], { 'asks/00/a.json': 'a-local' });
    const remote = await commit(store, [base], { 'asks/01/b.json': 'b-remote' });
    sh(dir, 'update-ref', 'refs/zz/lanes/k', local);
    sh(dir, 'update-ref', 'refs/zz-remotes/origin/lanes/k', remote); // as a fetch leaves it
    const keeps = () =>
      readdirSync(join(repo.gitdir, 'objects', 'pack')).filter((f) => f.endsWith('.keep'));
    const port = new GitSyncLocal(repo, store);
    const merge = await port.writeMerge({
      parents: [remote, local],
      changes: new Map([
        ['asks/00/a.json', 'a-local'],
        ['lane.json', '{"v":2}'],
      ]),
      message: 'merge\n\nZz-Op: merge\nZz-Lamport: 3\n',
    });
    expect(keeps().length).toBe(1);
    // The merge is unreachable until the ref moves: repack -a -d drops unkept unreachable objects.
    sh(dir, 'repack', '-a', '-d', '-q');
    await port.update([{ ref: 'refs/zz/lanes/k', old: local, new: merge }]);
    expect(keeps()).toEqual([]);
    expect(sh(dir, 'rev-parse', 'refs/zz/lanes/k')).toBe(merge);
    expect(fsckProblems(dir)).toEqual([]);
  });
});
