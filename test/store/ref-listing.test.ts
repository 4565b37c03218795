import { execFileSync } from 'node:child_process';
import fs, { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// refNames(prefix) lists what listRefs(prefix) lists, names only: a ref is a name packed-refs
// holds or a loose file (not a lock) holding an object id. Checked on the layouts a real
// repository meets: refs packed by native `git pack-refs --all`, some written loose again over
// their packed value, a stray directory, a lock, and files that are not refs.

describe('refNames: the names listRefs gives, from the store', () => {
  let done: (() => void) | null = null;
  afterEach(() => {
    vi.restoreAllMocks();
    done?.();
  });

  it('agrees with listRefs on packed, loose, shadowed, stray, locked and garbage entries', async () => {
    const { dir, cleanup } = makeRepo();
    done = cleanup;
    const head = sh(dir, 'rev-parse', 'HEAD');
    const tree = sh(dir, 'rev-parse', 'HEAD^{tree}');
    const lanes = join(dir, '.git/refs/zz/lanes');
    const stdin = (names: string[], oid: string) =>
      names.map((n) => `create refs/zz/lanes/${n} ${oid}\n`).join('');
    const batch = (input: string) =>
      execFileSync('git', ['update-ref', '--stdin'], { cwd: dir, input });
    batch(stdin(['a', 'b', 'c', 'nested/x', 'nested/y'], head));
    sh(dir, 'pack-refs', '--all');
    expect(fs.existsSync(join(lanes, 'a'))).toBe(false); // packed and pruned
    // Loose again over a packed value (b), and loose only (d, nested/z).
    batch(`update refs/zz/lanes/b ${tree}\n` + stdin(['d', 'nested/z'], head));
    // A stray empty directory, a lock (git's own, mid-write), a file that is not an object id,
    // one that is 41 bytes of not one, one that shadows a packed ref (c: listRefs keeps its
    // packed value), a symbolic ref, and an empty file.
    mkdirSync(join(lanes, 'stray/deeper'), { recursive: true });
    writeFileSync(join(lanes, 'e.lock'), head + '\n');
    writeFileSync(join(lanes, 'garbage'), 'not an object id\n');
    writeFileSync(join(lanes, 'almost'), 'g'.repeat(40) + '\n');
    writeFileSync(join(lanes, 'c'), 'damaged\n');
    writeFileSync(join(lanes, 'sym'), 'ref: refs/heads/main\n');
    writeFileSync(join(lanes, 'empty'), '');
    // Whitespace around an id is trimmed, as listRefs trims it.
    writeFileSync(join(lanes, 'spaced'), `  ${head}\n\n`);
    // Long enough to be read past the first buffer.
    writeFileSync(join(lanes, 'long'), `${head}${' '.repeat(300)}\n`);

    const store = new GitStore(await openRepository(dir));
    const listed = [...(await store.listRefs('refs/zz/lanes/')).keys()].sort();
    const expected = ['a', 'b', 'c', 'd', 'long', 'nested/x', 'nested/y', 'nested/z', 'spaced'];
    expect(listed).toEqual(expected.map((n) => `refs/zz/lanes/${n}`));
    expect(await store.refNames('refs/zz/lanes/')).toEqual(listed);
    // Another prefix's refs are not listed; a prefix with no refs lists none.
    expect(await store.refNames('refs/zz/lanes/nested/')).toEqual(
      ['x', 'y', 'z'].map((n) => `refs/zz/lanes/nested/${n}`),
    );
    expect(await store.refNames('refs/zz/nothing/')).toEqual([]);

    // Names only: a loose file whose name packed-refs holds (b, c) is not opened; the loose-
    // only ones are, as they must be to tell a ref from a stray file.
    const opened: string[] = [];
    const open = fs.openSync;
    vi.spyOn(fs, 'openSync').mockImplementation((...args: Parameters<typeof fs.openSync>) => {
      const p = String(args[0]);
      if (p.startsWith(lanes)) opened.push(p.slice(lanes.length + 1));
      return open(...args);
    });
    await store.refNames('refs/zz/lanes/');
    expect(opened.sort()).toEqual(
      ['almost', 'd', 'empty', 'garbage', 'long', 'nested/z', 'spaced', 'sym'].sort(),
    );
  });
});
