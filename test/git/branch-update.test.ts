import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import {
  diffTreeRaw,
  isAncestor,
  mergeTrees,
  TreeReader,
  updateBranch,
} from '../../src/git/branch-update.js';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// Direct tests of git/branch-update.ts (issue 10): each answer is checked against what native
// git says about the same repository.

let dir: string;
let cleanup: () => void;
let repo: GitRepository;
let base: string;
let ours: string;
let theirs: string;
let clash: string;

const write = (p: string, s: string) => {
  mkdirSync(join(dir, p, '..'), { recursive: true });
  writeFileSync(join(dir, p), s);
};
const commitAll = (msg: string) => {
  sh(dir, 'add', '-A');
  sh(dir, 'commit', '-q', '-m', msg);
  return sh(dir, 'rev-parse', 'HEAD');
};

beforeAll(async () => {
  ({ dir, cleanup } = makeRepo('zz-branch-update-'));
  write('a.txt', 'one\ntwo\nthree\n');
  write('dir/b.txt', 'b\n');
  write('gone.txt', 'bye\n');
  base = commitAll('base');
  // ours: edits the top of a.txt, deletes gone.txt, adds a symlink and an odd name.
  write('a.txt', 'ONE\ntwo\nthree\n');
  sh(dir, 'rm', '-q', 'gone.txt');
  symlinkSync('dir', join(dir, 'link'));
  write('dir/with space\tand tab.txt', 'odd\n');
  ours = commitAll('ours');
  // theirs: edits the bottom of a.txt (merges cleanly with ours).
  sh(dir, 'checkout', '-q', '-b', 'side', base);
  write('a.txt', 'one\ntwo\nTHREE\n');
  theirs = commitAll('theirs');
  // clash: edits the top of a.txt differently.
  sh(dir, 'checkout', '-q', '-b', 'clash', base);
  write('a.txt', 'uno\ntwo\nthree\n');
  clash = commitAll('clash');
  sh(dir, 'checkout', '-q', 'main');
  repo = await openRepository(dir);
});
afterAll(() => {
  repo?.close();
  cleanup();
});

describe('diffTreeRaw', () => {
  it('lists what git diff-tree lists, with modes and new oids', async () => {
    const ours_ = await diffTreeRaw(repo, base, ours);
    const native = sh(dir, 'diff-tree', '-r', '--no-renames', '--name-status', base, ours)
      .split('\n')
      .map((l) => l.split('\t'));
    expect(ours_.map((c) => [c.status, c.path])).toEqual(
      native.map(([s, ...p]) => [
        s,
        p
          .join('\t')
          .replace(/^"(.*)"$/, '$1')
          .replace('\\t', '\t'),
      ]),
    );
    const link = ours_.find((c) => c.path === 'link')!;
    expect(link).toMatchObject({ status: 'A', oldMode: null, newMode: '120000' });
    expect(link.newOid).toBe(sh(dir, 'rev-parse', `${ours}:link`));
    expect(ours_.find((c) => c.path === 'gone.txt')).toMatchObject({
      status: 'D',
      newMode: null,
      newOid: null,
    });
    expect(await diffTreeRaw(repo, ours, ours)).toEqual([]);
  });
});

describe('isAncestor', () => {
  it('answers as git merge-base --is-ancestor', async () => {
    expect(await isAncestor(repo, base, ours)).toBe(true);
    expect(await isAncestor(repo, ours, base)).toBe(false);
    expect(await isAncestor(repo, theirs, ours)).toBe(false);
    expect(await isAncestor(repo, ours, ours)).toBe(true);
  });
});

describe('mergeTrees', () => {
  it('merges cleanly to the tree git merge-tree writes', async () => {
    const m = await mergeTrees(repo, ours, theirs);
    expect(m.conflicts).toEqual([]);
    expect(m.tree).toBe(sh(dir, 'merge-tree', '--write-tree', ours, theirs));
    expect(sh(dir, 'cat-file', 'blob', `${m.tree}:a.txt`)).toBe('ONE\ntwo\nTHREE');
  });

  it('names the conflicted paths and git messages', async () => {
    const m = await mergeTrees(repo, ours, clash);
    expect(m.conflicts).toEqual(['a.txt']);
    expect(m.messages.join('\n')).toMatch(/CONFLICT \(content\).*a\.txt/);
    await expect(mergeTrees(repo, ours, 'f'.repeat(40))).rejects.toBeInstanceOf(ZzError);
  });
});

describe('TreeReader', () => {
  it('walks paths without following symlinks and says where a path is blocked', async () => {
    const trees = new TreeReader(repo);
    const tree = await trees.treeOfCommit(ours);
    expect(tree).toBe(sh(dir, 'rev-parse', `${ours}^{tree}`));
    expect((await trees.walk(tree, 'dir/b.txt')).entry?.oid).toBe(
      sh(dir, 'rev-parse', `${ours}:dir/b.txt`),
    );
    expect((await trees.walk(tree, 'dir')).entry?.mode).toBe('040000');
    expect(await trees.walk(tree, 'dir/nope')).toEqual({ entry: null });
    expect(await trees.walk(tree, 'nope/x')).toEqual({ entry: null });
    const viaLink = await trees.walk(tree, 'link/b.txt');
    expect(viaLink.entry).toBeNull();
    expect(viaLink.blockedAt).toMatchObject({ path: 'link', entry: { mode: '120000' } });
    const viaFile = await trees.walk(tree, 'a.txt/x/y');
    expect(viaFile.blockedAt).toMatchObject({ path: 'a.txt', entry: { mode: '100644' } });
    await expect(trees.treeOfCommit(tree)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('updateBranch', () => {
  it('moves the branch and the checkout together, and writes the reflog', async () => {
    sh(dir, 'checkout', '-q', '-B', 'work', ours);
    const to = sh(dir, 'commit-tree', `${theirs}^{tree}`, '-p', ours, '-m', 'to theirs');
    const r = await updateBranch(repo, {
      branch: 'work',
      from: ours,
      to,
      reflogMessage: 'zz test',
    });
    expect(r.worktree_updated).toBe(true);
    expect(sh(dir, 'rev-parse', 'work')).toBe(to);
    expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('one\ntwo\nTHREE\n');
    expect(existsSync(join(dir, 'link'))).toBe(false);
    expect(sh(dir, 'status', '--porcelain')).toBe('');
    expect(sh(dir, 'reflog', '-1', '--format=%gs', 'work')).toBe('zz test');
    sh(dir, 'checkout', '-q', 'main');
  });

  it('refuses a dirty checkout in the way and moves nothing', async () => {
    sh(dir, 'checkout', '-q', '-B', 'dirty', base);
    write('a.txt', 'local edit\n');
    try {
      const e = await updateBranch(repo, {
        branch: 'dirty',
        from: base,
        to: ours,
        reflogMessage: 'x',
      }).then(
        () => null,
        (x: unknown) => x as ZzError,
      );
      expect(e?.code).toBe('dirty_worktree');
      expect((e?.details as { paths: string[] }).paths).toEqual(['a.txt']);
      expect(sh(dir, 'rev-parse', 'dirty')).toBe(base);
      expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('local edit\n');
    } finally {
      sh(dir, 'checkout', '-q', '--', 'a.txt');
      sh(dir, 'checkout', '-q', 'main');
    }
  });

  it('rolls the checkout back when the branch moves under it (CAS lost)', async () => {
    sh(dir, 'checkout', '-q', '-B', 'race', base);
    // Another writer moves the branch between the check and the CAS.
    const racing: GitRepository = {
      ...repo,
      refs: Object.assign(Object.create(repo.refs) as GitRepository['refs'], {
        cas: async (ref: string, from: string | null, to: string) => {
          sh(dir, 'update-ref', ref, theirs, base);
          return repo.refs.cas(ref, from, to);
        },
      }),
    };
    try {
      const e = await updateBranch(racing, {
        branch: 'race',
        from: base,
        to: ours,
        reflogMessage: 'x',
      }).then(
        () => null,
        (x: unknown) => x as ZzError,
      );
      expect(e?.code).toBe('conflict');
      expect(sh(dir, 'rev-parse', 'race')).toBe(theirs);
      // The checkout holds the base's files again, not the attempted commit's.
      expect(readFileSync(join(dir, 'a.txt'), 'utf8')).toBe('one\ntwo\nthree\n');
      expect(existsSync(join(dir, 'gone.txt'))).toBe(true);
    } finally {
      sh(dir, 'reset', '-q', '--hard');
      sh(dir, 'checkout', '-q', 'main');
    }
  });
});
