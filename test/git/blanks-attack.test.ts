import { spawnSync } from 'node:child_process';
import fs, { mkdirSync, readdirSync, renameSync, rmdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { BlankFiles, blanksDir, parseOwnedName } from '../../src/git/blank-files.js';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { canMountIn, runInMountNs } from '../helpers/mount-ns.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';

// Attacks on the blanks of the durable write path (git/blank-files.ts): a blank is made in
// zz/blanks/ and renamed into objects/pack/, so every place where that rename or the step
// before it can fail where the old in-place creation did not is a write that fails.

const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const WRITER = join(PROJECT, 'test', 'helpers', 'crash-writer.ts');

/** Resolves once `f()` holds (polled; each test's own timeout bounds it). */
async function until(f: () => boolean): Promise<void> {
  while (!f()) await new Promise((r) => setTimeout(r, 2));
}

/** Spare blanks (no `.old`/`.owner` kind) in a repository's zz/blanks/. */
function spares(gitdir: string): number {
  try {
    // Spares are named as ownedName() makes them; hold (.old) and owner files are not spares.
    return readdirSync(blanksDir(gitdir)).filter(
      (n) => parseOwnedName(n) !== null && !/\.(?:old|owner)$/.test(n),
    ).length;
  } catch {
    return 0;
  }
}

describe('blanks under attack', () => {
  let repo: GitRepository | undefined;
  afterEach(async () => {
    repo?.close();
    await repo?.objects.close();
    repo = undefined;
  });

  it('a writer whose objects/pack/ was removed (repository re-initialised) makes it again, as without blanks', async () => {
    const random = prng(testSeed('objects/pack removed'));
    const { dir } = makeRepo('zz-blanks-attack-');
    repo = await openRepository(dir);
    const store = new GitStore(repo);
    const packDir = join(repo.gitdir, 'objects', 'pack');
    const ref = (i: number): string => `refs/zz/lanes/re-init-${i}`;
    const write = (i: number): Promise<string> =>
      store.commit(ref(i), {
        parent: null,
        changes: new Map(
          Array.from({ length: 1 + Math.floor(random() * 4) }, (_, k) => [
            `asks/${k}/a.json`,
            JSON.stringify({ i, k, r: random() }),
          ]),
        ),
        ops: [],
        summary: `w ${i}`,
      });
    const heads = new Map<number, string>();
    let n = 0;
    for (let round = 0; round < 3; round++) {
      // Writes enough for the blanks to be there and objects/pack/ known to this process...
      for (let k = 1 + Math.floor(random() * 3); k > 0; k--) heads.set(n, await write(n++));
      // ...then the objects go loose (git unpack-objects) and objects/pack/ is gone.
      const moved = tempDir('zz-blanks-attack-packs-');
      for (const name of readdirSync(packDir)) renameSync(join(packDir, name), join(moved, name));
      for (const name of readdirSync(moved).filter((p) => p.endsWith('.pack'))) {
        const r = spawnSync('git', ['unpack-objects', '-q'], {
          cwd: dir,
          input: fs.readFileSync(join(moved, name)),
        });
        expect(r.status, String(r.stderr)).toBe(0);
      }
      rmdirSync(packDir);
      await until(() => spares(repo!.gitdir) >= 4); // taken by the next write, as in a daemon
      heads.set(n, await write(n++));
    }
    for (const [i, head] of heads) expect(sh(dir, 'rev-parse', ref(i))).toBe(head);
    expect(fsckProblems(dir)).toEqual([]);
    // One owner file for the .keep links, however many writes failed to link one.
    expect(readdirSync(blanksDir(repo.gitdir)).filter((f) => f.endsWith('.owner'))).toHaveLength(1);
  });

  it('every write lands while a person clears .git/zz/blanks/ at random moments', async () => {
    const random = prng(testSeed('zz/blanks cleared'));
    const { dir } = makeRepo('zz-blanks-attack-');
    repo = await openRepository(dir);
    const store = new GitStore(repo);
    const gitdir = repo.gitdir;
    let writing = true;
    let clears = 0;
    // Between the steps of writes in flight: a blank taken and written, its fdatasync pending,
    // is removed before its rename into objects/pack/ (or the token's into zz/locks/).
    const clearer = (async () => {
      while (writing) {
        await new Promise((r) => setTimeout(r, random() * 3));
        try {
          fs.rmSync(blanksDir(gitdir), { recursive: true, force: true });
        } catch (e) {
          // A blank made in the pool meanwhile: cleared next time.
          if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY') throw e;
        }
        clears++;
      }
    })();
    const heads = new Map<string, string>();
    const writer = async (w: number): Promise<void> => {
      const ref = `refs/zz/lanes/cleared-${w}`;
      let parent: string | null = null;
      for (let i = 0; i < 25; i++) {
        parent = await store.commit(ref, {
          parent,
          changes: new Map([[`asks/${i % 4}/${w}.json`, JSON.stringify({ w, i, r: random() })]]),
          ops: [],
          summary: `w ${w}.${i}`,
        });
      }
      heads.set(ref, parent!);
    };
    try {
      await Promise.all([0, 1, 2].map(writer));
    } finally {
      writing = false;
      await clearer;
    }
    expect(clears).toBeGreaterThan(0);
    for (const [ref, head] of heads) expect(sh(dir, 'rev-parse', ref)).toBe(head);
    expect(fsckProblems(dir)).toEqual([]);
  });

  it('leaves nothing in zz/blanks/ once closed, even with writes in flight at close()', async () => {
    const random = prng(testSeed('write racing close'));
    const { dir } = makeRepo('zz-blanks-attack-');
    repo = await openRepository(dir);
    const store = new GitStore(repo);
    const gitdir = repo.gitdir;
    // A daemon shutting down: close() while writes are between their steps.
    const writes = Array.from({ length: 1 + Math.floor(random() * 4) }, (_, i) =>
      store
        .commit(`refs/zz/lanes/closing-${i}`, {
          parent: null,
          changes: new Map([
            [`asks/${i}/a.json`, JSON.stringify({ i, r: random() })],
            [`asks/${i}/b.json`, '{}'],
          ]),
          ops: [],
          summary: `w ${i}`,
        })
        .catch((e: unknown) => e),
    );
    repo.close();
    const landed = (await Promise.all(writes)).filter((r) => typeof r === 'string');
    expect(landed.length).toBeGreaterThan(0);
    repo = undefined; // closed once, as a daemon does
    // Holds of the refs' old files and a blank made meanwhile go in the pool: until then.
    await until(
      () => !fs.existsSync(blanksDir(gitdir)) || readdirSync(blanksDir(gitdir)).length === 0,
    );
    expect(fsckProblems(dir)).toEqual([]);
  }, 10_000);

  // A bind mount has the st_dev of the filesystem it shows, so sameDeviceAs cannot see it, and
  // a rename across mount points fails (EXDEV) all the same: objects/ bind-mounted into a
  // container, or objects/pack/ over itself here, in a mount namespace of the child's own.
  const canBind = canMountIn('mount --bind "$1" "$1"', tempDir('zz-blanks-attack-probe-'));

  it.runIf(canBind)(
    'writes through objects/pack/ mounted apart (a bind mount: same st_dev, renames across fail)',
    async () => {
      const seed = testSeed('bind-mounted objects/pack');
      const count = 6 + (seed % 7);
      const { dir } = makeRepo('zz-blanks-attack-');
      const packDir = join(dir, '.git', 'objects', 'pack');
      mkdirSync(packDir, { recursive: true });
      const ref = 'refs/zz/lanes/bind';
      // One write at a time, so that blanks are ready for all but the first.
      const { code, out, err } = await runInMountNs(
        'mount --bind "$1" "$1"',
        packDir,
        [
          process.execPath,
          '--import',
          'tsx',
          WRITER,
          dir,
          ref,
          'k',
          '--count',
          String(count),
          '--concurrency',
          '1',
        ],
        PROJECT,
      );
      expect(code, err).toBe(0);
      const acks = out.split('\n').filter((l) => l.startsWith('ack '));
      expect(acks).toHaveLength(count);
      expect(sh(dir, 'rev-parse', ref)).toBe(acks.at(-1)!.split(' ')[2]);
      expect(fsckProblems(dir)).toEqual([]);
      // Nothing left behind by a writer that closed its repository: no spare, no owner file
      // (the one .keep files could not link to across the mount point).
      expect(readdirSync(blanksDir(join(dir, '.git')))).toEqual([]);
    },
    60_000,
  );

  it('stops making blanks while the destination is not there, and lets other directories have their turn', async () => {
    const d = tempDir('zz-blanks-attack-dir-');
    // The destination checked by sameDeviceAs does not exist (a repository removed while the
    // daemon runs): no blank can be used, so none is made over and over.
    const gone = new BlankFiles(join(d, 'a'), {
      spare: 2,
      mode: 0o644,
      sameDeviceAs: join(d, 'missing'),
    });
    const other = new BlankFiles(join(d, 'b'), { spare: 2, mode: 0o644 });
    try {
      expect(gone.take()).toBeNull();
      expect(other.take()).toBeNull(); // waits its turn: one creation at a time per process
      await until(() => other.ready === 2);
      expect(gone.ready).toBe(0);
      expect(readdirSync(join(d, 'a'))).toEqual([]);
    } finally {
      gone.close();
      other.close();
    }
  }, 10_000);
});
