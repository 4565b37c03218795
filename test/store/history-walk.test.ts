import { describe, expect, it } from 'vitest';
import { openRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// GitStore.history reads a short line of commits back to its root through the shared cat-file,
// and anything else (a merge, a long history) through `git log --reverse --topo-order`
// (src/store/git-store.ts). Both must give git log's answer: the same commits, oldest first,
// with their ops.

const op = (n: number) => ({
  id: `op-${n}`,
  op: 'put',
  actor: 'a@x',
  lamport: n,
  time: new Date(0).toISOString(),
  args: { n },
});

async function chain(store: GitStore, ref: string, n: number, from: string | null = null) {
  let parent = from;
  for (let i = 1; i <= n; i++) {
    parent = await store.commit(ref, {
      parent,
      // The ref in the content: two sides of a fork made in one second must differ.
      changes: new Map([['f.json', JSON.stringify({ ref, i })]]),
      ops: [op(i)],
      summary: `put ${i}`,
    });
  }
  return parent!;
}

/** What git log says of `ref`: oldest first, topological. */
const gitLog = (dir: string, ref: string) =>
  sh(dir, 'log', '--reverse', '--topo-order', '--format=%H %P', ref)
    .split('\n')
    .map((l) => {
      const [oid, ...parents] = l.split(' ').filter(Boolean);
      return { revision: oid, parents };
    });

describe('GitStore.history', () => {
  it('gives git log’s commits, order and ops for a short line, a long one and a merge', async () => {
    const { dir } = makeRepo();
    const repo = await openRepository(dir, { fsync: false });
    const store = new GitStore(repo);
    try {
      for (const [ref, n] of [
        ['refs/zz/lanes/one', 1],
        ['refs/zz/lanes/short', 5],
        ['refs/zz/lanes/long', 45],
      ] as const) {
        await chain(store, ref, n);
        const h = await new GitStore(repo).history(ref);
        expect(h.map((c) => ({ revision: c.revision, parents: c.parents }))).toEqual(
          gitLog(dir, ref),
        );
        expect(h.flatMap((c) => c.ops.map((o) => o.id))).toEqual(
          Array.from({ length: n }, (_, i) => `op-${i + 1}`),
        );
      }
      // A merge of two lines: git log decides the order.
      const base = await chain(store, 'refs/zz/lanes/m', 2);
      const left = await chain(store, 'refs/zz/lanes/m', 1, base);
      sh(dir, 'update-ref', 'refs/zz/lanes/m-side', base);
      const right = await chain(store, 'refs/zz/lanes/m-side', 1, base);
      const merge = sh(
        dir,
        'commit-tree',
        `${left}^{tree}`,
        '-p',
        left,
        '-p',
        right,
        '-m',
        'merge',
      );
      sh(dir, 'update-ref', 'refs/zz/lanes/m', merge, left);
      const h = await new GitStore(repo).history('refs/zz/lanes/m');
      expect(h.map((c) => ({ revision: c.revision, parents: c.parents }))).toEqual(
        gitLog(dir, 'refs/zz/lanes/m'),
      );
      // From a revision that is not an ancestor (another side of a fork): git log's head ^since.
      sh(dir, 'update-ref', 'refs/zz/lanes/left', left);
      const fork = await new GitStore(repo).history('refs/zz/lanes/left', right);
      expect(fork.map((c) => c.revision)).toEqual([left]);
      // And from a revision held: only what came after it.
      const since = await new GitStore(repo).history('refs/zz/lanes/short', null);
      const tail = await new GitStore(repo).history('refs/zz/lanes/short', since[1]!.revision);
      expect(tail.map((c) => c.revision)).toEqual(since.slice(2).map((c) => c.revision));
    } finally {
      repo.close();
    }
  });
});
