import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  openRepository,
  readTree,
  walkTreePath,
  type GitRepository,
  type TreeEntries,
} from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// The one walk of a tree by path, against what git itself says is at each path.

const { dir, cleanup } = makeRepo('zz-tree-walk-');
let repo: GitRepository;
let tree: string;
let entries: TreeEntries;
const reads: string[] = [];

beforeAll(async () => {
  mkdirSync(join(dir, 'a/b'), { recursive: true });
  writeFileSync(join(dir, 'a/b/c.txt'), 'c\n');
  writeFileSync(join(dir, 'a/file'), 'f\n');
  writeFileSync(join(dir, 'a/with space\tand tab'), 'odd\n');
  symlinkSync('b', join(dir, 'a/link'));
  sh(dir, 'add', '-A');
  sh(dir, 'commit', '-q', '-m', 'tree');
  tree = sh(dir, 'rev-parse', 'HEAD^{tree}');
  repo = await openRepository(dir);
  entries = (t) => {
    reads.push(t);
    return readTree(repo.catFile, t);
  };
});
afterAll(() => {
  repo?.close();
  cleanup();
});

/** What `git rev-parse HEAD:<path>` names, or null. */
const gitOid = (path: string): string | null => {
  try {
    return sh(dir, 'rev-parse', '-q', '--verify', `HEAD:${path}`);
  } catch {
    return null;
  }
};

describe('walkTreePath', () => {
  it('finds files, trees, symlinks and odd names where git does', async () => {
    for (const [path, mode] of [
      ['README.md', '100644'],
      ['a', '040000'],
      ['a/b', '040000'],
      ['a/b/c.txt', '100644'],
      ['a/link', '120000'],
      ['a/with space\tand tab', '100644'],
    ] as const) {
      const w = await walkTreePath(entries, tree, path);
      expect(w.entry, path).toMatchObject({ mode, oid: gitOid(path) });
      expect(w.blockedAt).toBeUndefined();
    }
  });

  it('answers null for what is not there, reading only the trees on the way', async () => {
    for (const path of ['missing', 'a/missing', 'a/b/c.txt/x', '', 'a/', 'A/b']) {
      reads.length = 0;
      expect((await walkTreePath(entries, tree, path)).entry, path).toBeNull();
      expect(reads.length).toBeLessThanOrEqual(path.split('/').length);
    }
  });

  it('stops at a leading component that is not a tree, and never follows a symlink', async () => {
    const through = await walkTreePath(entries, tree, 'a/file/x');
    expect(through.entry).toBeNull();
    expect(through.blockedAt).toMatchObject({ path: 'a/file', entry: { mode: '100644' } });
    // a/link points at b, where c.txt is; the walk does not go there.
    const link = await walkTreePath(entries, tree, 'a/link/c.txt');
    expect(link.entry).toBeNull();
    expect(link.blockedAt).toMatchObject({ path: 'a/link', entry: { mode: '120000' } });
  });

  it('answers null when the start is not a tree', async () => {
    const blob = gitOid('README.md')!;
    expect((await walkTreePath(entries, blob, 'x')).entry).toBeNull();
  });
});
