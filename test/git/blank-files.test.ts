import fs, {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BlankFiles, blanksDir, ownedName, parseOwnedName } from '../../src/git/blank-files.js';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';
import { tempDir } from '../helpers/temp-dirs.js';

// Blanks (git/blank-files.ts): files made ahead so that a durable write creates none, and the
// two ways a durable write avoids freeing a file's data block on the event loop (the ref's
// old file held by a second name while the lock is renamed over it; a .keep that is a link to
// one owner file). What is tested here is the structure those rest on, not their speed
// (bench/store.ts measures that).

const REF = 'refs/zz/lanes/blanks';

/** Resolves once `f()` holds (polled; each test's own timeout bounds it). */
async function until(f: () => boolean): Promise<void> {
  while (!f()) await new Promise((r) => setTimeout(r, 2));
}

describe('blank files', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    vi.restoreAllMocks();
    for (const c of cleanups.splice(0)) c();
  });

  const dir = (): string => tempDir('zz-blanks-');

  it('hands out none until one is made, then open empty files it no longer holds', async () => {
    const d = join(dir(), 'blanks'); // made by the first refill
    const blanks = new BlankFiles(d, { spare: 2, mode: 0o444 });
    cleanups.push(() => blanks.close());
    expect(blanks.take()).toBeNull(); // and starts the refill
    await until(() => blanks.ready === 2);
    expect(readdirSync(d)).toHaveLength(2);
    const b = blanks.take()!;
    expect(b).not.toBeNull();
    expect(statSync(b.path).size).toBe(0);
    expect(statSync(b.path).mode & 0o777).toBe(0o444);
    fs.writeSync(b.fd, 'written through the fd'); // read-only mode, writable fd
    fs.closeSync(b.fd);
    expect(fs.readFileSync(b.path, 'utf8')).toBe('written through the fd');
    expect(parseOwnedName(b.path.slice(d.length + 1))).toEqual({
      host: hostname(),
      pid: process.pid,
      // The start time too: a later process given this pid is not the maker.
      start: readFileSync(`/proc/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19],
    });
    // Taken means gone from the spares: the next take is another file, and the refill
    // brings the spares back to two (plus the one taken, still there).
    const c = blanks.take()!;
    expect(c.path).not.toBe(b.path);
    fs.closeSync(c.fd);
    await until(() => blanks.ready === 2);
    expect(readdirSync(d)).toHaveLength(4);
  });

  it('hands out a blank whose name was removed meanwhile (unchecked), and close() removes the spares', async () => {
    const d = dir();
    const blanks = new BlankFiles(d, { spare: 2, mode: 0o644 });
    blanks.take();
    await until(() => blanks.ready === 2);
    const [first] = readdirSync(d).sort();
    fs.unlinkSync(join(d, first!)); // a person clearing .git/zz/
    // Both spares were made in name order: the removed one comes first, and its user's
    // rename of it fails (the writes in a repository then make their file: tested below).
    const b = blanks.take()!;
    expect(b.path).toBe(join(d, first!));
    expect(existsSync(b.path)).toBe(false);
    expect(() => fs.renameSync(b.path, join(d, 'taken'))).toThrow(/ENOENT/);
    fs.closeSync(b.fd);
    await until(() => blanks.ready === 2);
    blanks.close();
    expect(readdirSync(d)).toEqual([]);
    expect(blanks.take()).toBeNull(); // closed: no refill either
    await new Promise((r) => setTimeout(r, 20));
    expect(readdirSync(d)).toEqual([]);
  });

  it('makes none where the destination is on another device (renames across would fail)', async () => {
    const shm = '/dev/shm';
    if (!existsSync(shm) || statSync(shm).dev === statSync(dir()).dev) return; // nothing to test here
    const d = dir();
    const blanks = new BlankFiles(d, { spare: 2, mode: 0o644, sameDeviceAs: shm });
    blanks.take();
    // The first blank's device check closes the BlankFiles for good; wait for that fact (a
    // fixed wait could end before the creation and check nothing).
    await expect.poll(() => (blanks as unknown as { closed: boolean }).closed).toBe(true);
    expect(blanks.take()).toBeNull();
    expect(readdirSync(d)).toEqual([]);
  });

  describe('in a repository', () => {
    let repo: GitRepository | undefined;
    afterEach(async () => {
      repo?.close();
      await repo?.objects.close();
      repo = undefined;
    });

    async function open(): Promise<{ dir: string; repo: GitRepository; store: GitStore }> {
      const made = makeRepo('zz-blanks-repo-');
      cleanups.push(made.cleanup);
      repo = await openRepository(made.dir);
      return { dir: made.dir, repo, store: new GitStore(repo) };
    }

    async function write(store: GitStore, i: number): Promise<string> {
      const parent = await store.head(REF);
      return store.commit(REF, {
        parent,
        changes: new Map([[`asks/${i % 3}/a.json`, JSON.stringify({ i })]]),
        ops: [],
        summary: `w ${i}`,
      });
    }

    // The pack's first fdatasync on a file made in zz/blanks/ writes that directory out too
    // (ext4 without a journal), and a rename out of zz/blanks/ meanwhile waits for it: the
    // lock's owner token is renamed into zz/locks/ before the pack's data syncs start.
    it("takes the lock's owner token before the pack's data syncs start", async () => {
      const { repo, store } = await open();
      await write(store, 0);
      // Blanks ready for each write (else its files are created, not renamed from blanks).
      const ready = () =>
        until(() => repo.objects.small['blanks'].ready >= 2 && repo.refs['tokenBlanks'].ready >= 1);
      const events: string[] = [];
      const locks = join(repo.gitdir, 'zz', 'locks');
      const renameSync = fs.renameSync.bind(fs);
      vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
        if (String(to).startsWith(locks)) events.push('token');
        renameSync(from, to);
      });
      const fdatasync = fs.fdatasync.bind(fs);
      vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: fs.NoParamCallback) => {
        events.push('data sync');
        fdatasync(fd, cb);
      }) as typeof fs.fdatasync);
      for (let i = 1; i <= 3; i++) {
        await ready();
        await write(store, i);
      }
      // Per write: the token (renamed from a blank), then the .pack's, .idx's and lock's syncs.
      expect(events).toEqual(
        Array.from({ length: 3 }, () => ['token', ...Array(3).fill('data sync')]).flat(),
      );
      expect(readdirSync(locks)).toEqual([]);
    });

    // take() does not check a blank's name: a write whose blanks were all removed (a person
    // clearing .git/zz/blanks/) fails each rename from them and makes its files itself.
    it('a write lands when the names of every spare were removed', async () => {
      const { dir, repo, store } = await open();
      await write(store, 0);
      const blanks = blanksDir(repo.gitdir);
      await until(
        () => repo.objects.small['blanks'].ready >= 2 && repo.refs['tokenBlanks'].ready >= 1,
      );
      for (const n of readdirSync(blanks))
        if (!/\.(owner|old)$/.test(n)) fs.unlinkSync(join(blanks, n));
      const rev = await write(store, 1);
      expect(sh(dir, 'rev-parse', REF)).toBe(rev);
      expect(readdirSync(join(repo.gitdir, 'zz', 'locks'))).toEqual([]);
      const pack = readdirSync(join(repo.gitdir, 'objects', 'pack'));
      expect(pack.filter((n) => n.startsWith('tmp_') || n.endsWith('.keep'))).toEqual([]);
      expect(fsckProblems(dir)).toEqual([]);
      expect(await store.readAll(rev, 'asks/1')).toEqual(new Map([['asks/1/a.json', '{"i":1}']]));
    });

    it("renames the lock over the ref while the ref's old file has a second name, removed after", async () => {
      const { dir, repo, store } = await open();
      await write(store, 0);
      const refFile = join(repo.gitdir, ...REF.split('/'));
      const links: number[] = [];
      const renameSync = fs.renameSync.bind(fs);
      vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
        if (String(from).endsWith('.lock')) links.push(statSync(refFile).nlink);
        renameSync(from, to);
      });
      // The owner token, a second name of the ref's file once the lock is renamed, is removed
      // synchronously (it frees no block): never in the pool, and gone when the write resolves.
      const pooled: string[] = [];
      const unlink = fs.unlink.bind(fs);
      vi.spyOn(fs, 'unlink').mockImplementation(((p: fs.PathLike, cb: fs.NoParamCallback) => {
        pooled.push(String(p));
        unlink(p, cb);
      }) as typeof fs.unlink);
      const locks = join(repo.gitdir, 'zz', 'locks');
      for (let i = 1; i <= 5; i++) {
        await write(store, i);
        expect(readdirSync(locks)).toEqual([]);
      }
      // Renaming over the old file's last name frees its data block on the event loop (a
      // synchronous discard on the VMs' ext4): it must have had another name each time.
      expect(links).toEqual([2, 2, 2, 2, 2]);
      vi.restoreAllMocks();
      expect(pooled.filter((p) => p.startsWith(locks))).toEqual([]);
      // The second names (the last name of a ref's old file: a freed block) go in the pool.
      const blanks = blanksDir(repo.gitdir);
      expect(pooled.filter((p) => p.startsWith(blanks) && p.endsWith('.old'))).toHaveLength(5);
      await until(() => readdirSync(blanks).every((n) => !n.endsWith('.old')));
      expect(statSync(refFile).nlink).toBe(1);
      expect(sh(dir, 'rev-parse', REF)).toBe(await store.head(REF));
      expect(fsckProblems(dir)).toEqual([]);
    });

    it('makes each .keep a link to one owner file, and close() removes that file', async () => {
      const { repo, store } = await open();
      const packDir = join(repo.gitdir, 'objects', 'pack');
      const keeps: Array<{ ino: number; nlink: number; text: string }> = [];
      const seeKeep = (to: unknown) => {
        const t = String(to);
        if (t.startsWith(packDir) && t.endsWith('.pack')) {
          const keep = t.replace(/\.pack$/, '.keep');
          const st = statSync(keep);
          keeps.push({ ino: st.ino, nlink: st.nlink, text: fs.readFileSync(keep, 'utf8') });
        }
      };
      const renameSync = fs.renameSync.bind(fs);
      vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
        seeKeep(to);
        renameSync(from, to);
      });
      // A commit past 256 KiB (ObjectWriter.isLarge) is a pack left for gc, written by
      // pack-writer (async).
      const rename = fs.promises.rename.bind(fs.promises);
      vi.spyOn(fs.promises, 'rename').mockImplementation(async (from, to) => {
        seeKeep(to);
        await rename(from, to);
      });
      for (let i = 0; i < 3; i++) await write(store, i);
      const large = new Map(
        Array.from({ length: 40 }, (_, i) => [
          `big/${i}.json`,
          `{"i":${i},"pad":"${'x'.repeat(8000)}"}`,
        ]),
      );
      const left = repo.objects.packsWritten;
      await store.commit(REF, {
        parent: await store.head(REF),
        changes: large,
        ops: [],
        summary: 'l',
      });
      expect(repo.objects.packsWritten).toBe(left + 1);
      expect(keeps).toHaveLength(4);
      const owners = readdirSync(blanksDir(repo.gitdir)).filter((n) => n.endsWith('.owner'));
      expect(owners).toHaveLength(1);
      const owner = join(blanksDir(repo.gitdir), owners[0]!);
      for (const k of keeps) {
        expect(k.ino).toBe(statSync(owner).ino);
        expect(k.nlink).toBeGreaterThanOrEqual(2);
        expect(k.text).toMatch(new RegExp(`^zz ${hostname()} ${process.pid} `));
      }
      // Released: no .keep is left, the owner file stays for the next write.
      expect(readdirSync(packDir).filter((n) => n.endsWith('.keep'))).toEqual([]);
      expect(statSync(owner).nlink).toBe(1);
      repo.close();
      await repo.objects.close();
      expect(existsSync(owner)).toBe(false);
      // The last write's hold on the ref's old file goes in the pool, on its own time, and so
      // does a spare whose creation was in flight at close() (removed when it lands). Every
      // spare made before close() is gone at once:
      const after = readdirSync(blanksDir(repo.gitdir));
      expect(after.filter((n) => !n.endsWith('.old')).length).toBeLessThanOrEqual(1);
      await until(() => readdirSync(blanksDir(repo!.gitdir)).length === 0);
    });

    it("sweeps what a dead process left in zz/blanks/ on the next write, and nothing of a live one's", async () => {
      const { dir, repo, store } = await open();
      const blanks = blanksDir(repo.gitdir);
      mkdirSync(blanks, { recursive: true });
      // pid_max is at most 4,194,304: no process has this pid.
      const dead = ['', '.old', '.owner'].map((k) =>
        ownedName().replace(`.${process.pid}.`, '.4999999.').concat(k),
      );
      // The parent's pid with its own start time: a live process's (a name with our start
      // time and its pid would be a reused pid, and go).
      const ppidStart = readFileSync(`/proc/${process.ppid}/stat`, 'utf8')
        .split(') ')[1]!
        .split(' ')[19]!;
      const live = ownedName()
        .replace(`.${process.pid}.`, `.${process.ppid}.`)
        .replace(/\.s\d+\./, `.s${ppidStart}.`);
      const other = 'not-ours.txt';
      for (const n of [...dead, live, other]) writeFileSync(join(blanks, n), '');
      fs.linkSync(join(blanks, other), join(blanks, dead[1]!.replace('.4999999.', '.4999998.')));
      dead.push(dead[1]!.replace('.4999999.', '.4999998.'));
      // Dead processes' blanks, owner and hold files go whatever their links (none is a lock's
      // proof): this one's hold still names the ref's file.
      await write(store, 0);
      const left = readdirSync(blanks);
      for (const n of dead) expect(left).not.toContain(n);
      expect(left).toContain(live);
      expect(left).toContain(other);
      expect(sh(dir, 'rev-parse', REF)).toBe(await store.head(REF));
    });
  });
});
