import { execFileSync } from 'node:child_process';
import fs, { promises as fsp, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { encodePack, writeEncodedPack } from '../../src/git/pack-writer.js';
import { GitStore } from '../../src/store/index.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';

// Attacks on the small-pack write path (git/small-packs.ts) by native git running beside it.
// Loose objects are never deleted by `git repack -a -d` (only packs are), so before small packs
// a zz write was safe against it; a small pack is a pack, and `repack -a -d` (without -A) deletes
// every pack it listed, keeping only objects reachable when it read the refs. As git's own
// receive-pack does, a small pack is guarded by a .keep file until the ref has moved.

const REF = 'refs/zz/lanes/attack';

describe('small packs beside native git', () => {
  let repo: GitRepository | undefined;
  let cleanup = () => {};
  afterEach(async () => {
    vi.restoreAllMocks();
    repo?.close();
    await repo?.objects.close();
    repo = undefined;
    cleanup();
  });

  it('a `git repack -a -d` between a small pack appearing and the ref moving loses no object', async () => {
    const made = makeRepo('zz-small-repack-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const store = new GitStore(repo);
    const first = await store.commit(REF, {
      parent: await store.head(REF),
      changes: new Map([['asks/a.json', '"a"']]),
      ops: [],
      summary: 'first',
    });
    // The user's repack runs in the window: right after the small pack's .idx is renamed into
    // place (the pack is visible to git), before the ref is updated.
    const realRename = fs.renameSync;
    let repacked = false;
    vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      realRename(from, to);
      if (!repacked && /\/objects\/pack\/pack-[0-9a-f]{40}\.idx$/.test(String(to))) {
        repacked = true;
        execFileSync('git', ['repack', '-a', '-d', '-q'], { cwd: made.dir });
      }
    });
    const second = await store.commit(REF, {
      parent: first,
      changes: new Map([['asks/b.json', '"b"']]),
      ops: [],
      summary: 'second',
    });
    vi.restoreAllMocks();
    expect(repacked).toBe(true);
    expect(sh(made.dir, 'rev-parse', REF)).toBe(second);
    expect(fsckProblems(made.dir)).toEqual([]);
    // The .keep that guarded the window is gone once the ref has moved.
    expect(
      readdirSync(join(repo.gitdir, 'objects', 'pack')).filter((f) => f.endsWith('.keep')),
    ).toEqual([]);
  });

  it('a pack write that fails on a full disk leaves no tmp_ file, even one still opening then', async () => {
    const made = makeRepo('zz-small-enospc-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const packDir = join(repo.gitdir, 'objects', 'pack');
    fs.mkdirSync(packDir, { recursive: true });
    const body = Buffer.from('hello\n');
    const enc = encodePack([
      { oid: sh(made.dir, 'hash-object', '--stdin'), type: 'blob', body: Buffer.alloc(0) },
      { oid: 'ce013625030ba8dba906f756967f9e9ca394464a', type: 'blob', body },
    ]);
    // The .pack's write fails at once (disk full); the .idx's open is slower and succeeds.
    const realOpen = fsp.open;
    let idxOpened: Promise<unknown> = Promise.resolve();
    vi.spyOn(fsp, 'open').mockImplementation((path, ...rest) => {
      if (String(path).includes('tmp_pack_')) {
        return Promise.reject(
          Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' }),
        );
      }
      if (String(path).includes('tmp_idx_')) {
        const p = new Promise((r) => setTimeout(r, 20)).then(() => realOpen(path, ...rest));
        idxOpened = p.catch(() => {});
        return p;
      }
      return realOpen(path, ...rest);
    });
    await expect(writeEncodedPack(repo.gitdir, enc, { fsync: true })).rejects.toThrow(/ENOSPC/);
    await idxOpened; // whatever it was going to create exists by now
    vi.restoreAllMocks();
    expect(readdirSync(packDir).filter((f) => f.startsWith('tmp_'))).toEqual([]);
  });
});
