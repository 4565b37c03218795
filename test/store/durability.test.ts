import fs from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// Issue 17: durable means durable on any filesystem. Every object a ref points to must be on
// disk (its data fsynced, and the directory holding its name) before the ref moves. A power
// cut cannot be staged in a test, so these watch the order of the system calls: every object
// file's data sync (loose objects, or the small pack and its index a durable commit of a few
// objects is written as) completes before that file is renamed into place, and every fsync of
// a directory that received a name completes before the ref's lock is renamed over the ref
// (whose own data sync runs beside the objects').

let dir: string;
let cleanup: () => void;
let repo: GitRepository;

beforeAll(async () => {
  ({ dir, cleanup } = makeRepo('zz-durable-'));
  repo = await openRepository(dir);
});
afterAll(() => {
  repo?.close();
  cleanup();
});
afterEach(() => {
  vi.restoreAllMocks();
  repo.objects.smallPacks = true;
});
const linux = process.platform === 'linux';
// The ref's lock is the one file synced with two names (the owner token and `<ref>.lock`).
const isRefLock = (fd: number) => fs.fstatSync(fd).nlink === 2;

describe('durable writes', () => {
  it('fsyncs every object and its directory before the ref moves (loose objects)', async () => {
    repo.objects.smallPacks = false;
    const events: string[] = [];
    // Directories are fsynced (as the ref's lock is); object files are fdatasynced. A slow
    // disk for directories: their fsyncs answer late, so a ref that moved without waiting for
    // them shows up as 'ref' before 'dir'.
    const realFsync = fs.fsync;
    vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, cb: (e: Error | null) => void) => {
      const isDir = fs.fstatSync(fd).isDirectory();
      realFsync(fd, (e) => {
        if (!isDir) return cb(e);
        setTimeout(() => {
          events.push('dir');
          cb(e);
        }, 30);
      });
    }) as typeof fs.fsync);
    // Each object's temp file is synced before it is renamed into place (on Linux, where
    // /proc tells an fd's path).
    const synced = new Set<string>();
    const unsyncedRenames: string[] = [];
    const realDatasync = fs.fdatasync;
    vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (e: Error | null) => void) => {
      const path = linux ? fs.readlinkSync(`/proc/self/fd/${fd}`) : '';
      const lock = isRefLock(fd);
      realDatasync(fd, (e) => {
        events.push(lock ? 'lock' : 'object');
        synced.add(path);
        cb(e);
      });
    }) as typeof fs.fdatasync);
    const realRename = fs.renameSync;
    vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      if (String(from).endsWith('.lock')) events.push('ref');
      else if (linux && !synced.has(String(from))) unsyncedRenames.push(String(from));
      realRename(from, to);
    });

    const store = new GitStore(repo);
    const ref = 'refs/zz/lanes/durable';
    // A commit of 3 blobs in 3 directories: 3 blobs + 4 trees + 1 commit, all new.
    const rev = await store.commit(ref, {
      parent: null,
      changes: new Map([
        ['a/x.json', '{"x":1}'],
        ['b/y.json', '{"y":2}'],
        ['c/z.json', '{"z":3}'],
      ]),
      ops: [],
      summary: 'three files',
    });
    await expect(repo.refs.read(ref)).resolves.toBe(rev);
    expect(unsyncedRenames).toEqual([]);
    const refAt = events.indexOf('ref');
    expect(refAt, events.join(' ')).toBeGreaterThan(0);
    expect(events.lastIndexOf('object')).toBeLessThan(refAt);
    expect(events.lastIndexOf('dir')).toBeLessThan(refAt);
    expect(events.slice(0, refAt).filter((e) => e === 'lock')).toHaveLength(1);
    expect(events.slice(0, refAt).filter((e) => e === 'object')).toHaveLength(8);
    // Each object's fan-out directory (8 at most here) and objects/ for those just created.
    const dirs = events.slice(0, refAt).filter((e) => e === 'dir').length;
    expect(dirs).toBeGreaterThanOrEqual(1);
    expect(dirs).toBeLessThanOrEqual(16);
  });
  it('fsyncs a small pack and its index, then objects/pack/, before the ref moves', async () => {
    expect(repo.objects.smallPacks).toBe(true);
    const events: string[] = [];
    const synced = new Set<string>();
    const unsyncedRenames: string[] = [];
    // objects/pack/'s fsync answers late: a ref that moved without waiting shows up first.
    const realFsync = fs.fsync;
    vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, cb: (e: Error | null) => void) => {
      const path = linux ? fs.readlinkSync(`/proc/self/fd/${fd}`) : '';
      const isDir = fs.fstatSync(fd).isDirectory();
      realFsync(fd, (e) => {
        if (!isDir) return cb(e);
        setTimeout(() => {
          events.push(path.endsWith('/objects/pack') || !linux ? 'pack dir' : 'dir');
          cb(e);
        }, 30);
      });
    }) as typeof fs.fsync);
    const realDatasync = fs.fdatasync;
    vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: (e: Error | null) => void) => {
      const path = linux ? fs.readlinkSync(`/proc/self/fd/${fd}`) : '';
      const lock = isRefLock(fd);
      realDatasync(fd, (e) => {
        events.push(lock ? 'lock' : 'file');
        synced.add(path);
        cb(e);
      });
    }) as typeof fs.fdatasync);
    const realRename = fs.renameSync;
    vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      const f = String(from);
      // A blank named a lock token (git/blank-files.ts): no object, nothing to sync.
      if (String(to).includes('/zz/locks/')) return realRename(from, to);
      if (f.endsWith('.lock')) events.push('ref');
      else {
        events.push(`rename ${String(to).replace(/^.*\./, '')}`);
        if (linux && !synced.has(f)) unsyncedRenames.push(f);
      }
      realRename(from, to);
    });

    const store = new GitStore(repo);
    const ref = 'refs/zz/lanes/durable-small';
    const packsBefore = fs.readdirSync(join(repo.gitdir, 'objects', 'pack')).length;
    const rev = await store.commit(ref, {
      parent: null,
      changes: new Map([
        ['a/x.json', '{"x":4}'],
        ['b/y.json', '{"y":5}'],
      ]),
      ops: [],
      summary: 'two files',
    });
    await expect(repo.refs.read(ref)).resolves.toBe(rev);
    // One small pack (.pack + .idx) holds the commit's 6 objects: no loose object was written.
    expect(fs.readdirSync(join(repo.gitdir, 'objects', 'pack')).length).toBe(packsBefore + 2);
    expect(unsyncedRenames).toEqual([]);
    const refAt = events.indexOf('ref');
    // The ref's lock is synced beside the pack and its index, before the ref moves (the
    // objects' renames do not wait for it).
    const beforeRef = events.slice(0, refAt);
    expect(
      beforeRef.filter((e) => e === 'lock'),
      events.join(' '),
    ).toHaveLength(1);
    expect(
      beforeRef.filter((e) => e !== 'lock'),
      events.join(' '),
    ).toEqual([
      'file', // the pack and its index, side by side
      'file',
      'rename pack',
      'rename idx', // the .idx last: it makes the pack visible
      'pack dir',
    ]);
    expect(sh(dir, 'cat-file', '-t', rev)).toBe('commit');
  });
});

describe('after the ref moved', () => {
  it("a small pack's .keep that cannot be removed (EIO) does not fail the write that landed", async () => {
    // The .keep goes in GitStore.commit's finally (release), after the CAS: its unlink threw
    // any error but ENOENT out of a commit whose ref had moved (the caller retried ops already
    // in the ref), and the packs after it in the same release were neither unkept nor tracked.
    const realUnlink = fs.unlinkSync;
    const failed: string[] = [];
    vi.spyOn(fs, 'unlinkSync').mockImplementation((p) => {
      if (String(p).endsWith('.keep')) {
        failed.push(String(p));
        const e = new Error(`EIO: i/o error, unlink '${String(p)}'`) as NodeJS.ErrnoException;
        e.code = 'EIO';
        throw e;
      }
      realUnlink(p);
    });
    const store = new GitStore(repo);
    const ref = 'refs/zz/lanes/keep-eio';
    const rev = await store.commit(ref, {
      parent: null,
      changes: new Map([['a/x.json', '{"x":1}']]),
      ops: [],
      summary: 'one file',
    });
    expect(failed.length).toBeGreaterThan(0); // a small pack's .keep was there to remove
    await expect(repo.refs.read(ref)).resolves.toBe(rev);
    vi.restoreAllMocks();
    for (const keep of failed) fs.rmSync(keep, { force: true });
  });
});
