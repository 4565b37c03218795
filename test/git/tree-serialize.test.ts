import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import {
  hashedObject,
  hashObject,
  serializeTree,
  sortTreeEntries,
  type TreeEntry,
} from '../../src/git/objects.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { makeRepo } from '../helpers/temp-repo.js';

// serializeTree keeps each entry's bytes beside a large tree's entries (a Lane's `asks/` tree
// is re-serialised on every write with all but one entry unchanged). The bytes must always be
// the entry's current ones: the tree's id must be the one git computes for the same entries.

const { dir, cleanup } = makeRepo('zz-tree-serialize-');
afterAll(() => cleanup());

/** The tree id git's own `mktree` gives these entries (objects need not exist: --missing). */
function gitTreeId(entries: readonly TreeEntry[]): string {
  const input = entries
    .map((e) => `${e.mode} ${e.mode === '040000' ? 'tree' : 'blob'} ${e.oid}\t${e.name}\n`)
    .join('');
  return execFileSync('git', ['mktree', '--missing'], { cwd: dir, input, encoding: 'utf8' }).trim();
}

const oid = (s: string) => createHash('sha1').update(s).digest('hex');

describe('serializeTree', () => {
  it.each([10, 256])('matches git for a tree of %i entries across rewrites', (n) => {
    const entries: TreeEntry[] = Array.from({ length: n }, (_, i) => ({
      mode: i % 3 === 0 ? '040000' : '100644',
      name: `n${i.toString(16).padStart(3, '0')}${i % 5 === 0 ? '-é' : ''}`,
      oid: oid(`v0 ${i}`),
    }));
    const check = () =>
      expect(hashObject('tree', serializeTree(entries)).oid).toBe(gitTreeId(entries));
    check();
    // A write replaces one entry by a new object, as GitStore does.
    entries[7] = { ...entries[7]!, oid: oid('v1 7') };
    check();
    // An entry object changed in place must not be served from what was kept for it.
    entries[8]!.oid = oid('v1 8');
    check();
    entries[9]!.mode = entries[9]!.mode === '040000' ? '100755' : '040000';
    entries.sort((a, b) => {
      const ka = a.mode === '040000' ? a.name + '/' : a.name;
      const kb = b.mode === '040000' ? b.name + '/' : b.name;
      return ka < kb ? -1 : ka > kb ? 1 : 0;
    });
    check();
  });

  // git's order compares a directory as if its name ended in '/': `a-b` (file) < `a` (dir,
  // `a/`) < `a0`, while `a` (file) < `a-b`. Names that are prefixes of one another, with
  // characters on both sides of '/', in shuffled order: serializeTree must sort them as git.
  it('sorts names that are prefixes of one another as git does, directories as name + /', () => {
    const seed = testSeed('tree order');
    const rnd = prng(seed);
    const alphabet = ['a', 'b', '-', '.', '0', 'Z', '_', '~'];
    for (let round = 0; round < 20; round++) {
      const names = new Set<string>();
      while (names.size < 40) {
        const len = 1 + Math.floor(rnd() * 4);
        let name = '';
        for (let i = 0; i < len; i++) name += alphabet[Math.floor(rnd() * alphabet.length)];
        if (name !== '.' && name !== '..') names.add(name);
      }
      const entries: TreeEntry[] = [...names].map((name, i) => ({
        mode: rnd() < 0.5 ? '040000' : '100644',
        name,
        oid: oid(`${round} ${i}`),
      }));
      expect(hashObject('tree', serializeTree(entries)).oid, `seed ${seed} round ${round}`).toBe(
        gitTreeId(entries),
      );
    }
  });

  // GitStore keeps the entries it serialised as the tree's cached list: sorted in place, so
  // that the next write to that tree starts from git's order.
  it('sortTreeEntries puts a list in git order in place, and hashedObject names it as git does', () => {
    const entries: TreeEntry[] = ['b', 'a-b', 'a', 'a0'].map((name, i) => ({
      mode: name === 'a' ? '040000' : '100644',
      name,
      oid: oid(`e ${i}`),
    }));
    const same = sortTreeEntries(entries);
    expect(same).toBe(entries);
    expect(entries.map((e) => e.name)).toEqual(['a-b', 'a', 'a0', 'b']);
    const body = serializeTree(entries);
    expect(hashedObject('tree', body).oid).toBe(gitTreeId(entries));
    expect(hashedObject('tree', body).oid).toBe(hashObject('tree', body).oid);
  });
});
