import fs, { promises as fsp, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { encodePack, writeEncodedPack } from '../../src/git/pack-writer.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// A pack write that fails part way (a full disk) must leave nothing behind: the two tmp_
// files are written side by side, so the cleanup has to wait for both, even one still opening.

describe('pack write on a full disk', () => {
  let repo: GitRepository | undefined;
  let cleanup = () => {};
  afterEach(async () => {
    vi.restoreAllMocks();
    repo?.close();
    await repo?.objects.close();
    repo = undefined;
    cleanup();
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
