import fs, { promises as fsp } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { makeRepo } from '../helpers/temp-repo.js';

// Issue 17: durable means durable on any filesystem. Every object a ref points to must be on
// disk (its data fsynced, and the directory holding its name) before the ref moves. A power
// cut cannot be staged in a test, so this one watches the order of the system calls: every
// object file and fan-out directory of a commit is fsynced before the ref's lock is.

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
afterEach(() => vi.restoreAllMocks());

describe('durable writes', () => {
  it('fsyncs every object and its directory before the ref moves', async () => {
    const events: string[] = [];
    const probe = await fsp.open(dir, 'r');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const realSync = proto.sync;
    vi.spyOn(proto, 'sync').mockImplementation(async function (this: fsp.FileHandle) {
      const st = await this.stat();
      events.push(st.isDirectory() ? 'dir' : 'object');
      return realSync.call(this);
    });
    const realFsync = fs.fsync;
    vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, cb: (e: Error | null) => void) => {
      events.push('ref');
      realFsync(fd, cb);
    }) as typeof fs.fsync);

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
    const refAt = events.indexOf('ref');
    expect(refAt, events.join(' ')).toBeGreaterThan(0);
    expect(events.lastIndexOf('object')).toBeLessThan(refAt);
    expect(events.lastIndexOf('dir')).toBeLessThan(refAt);
    expect(events.slice(0, refAt).filter((e) => e === 'object')).toHaveLength(8);
    // Each object's fan-out directory (8 at most here) and objects/ for those just created.
    const dirs = events.slice(0, refAt).filter((e) => e === 'dir').length;
    expect(dirs).toBeGreaterThanOrEqual(1);
    expect(dirs).toBeLessThanOrEqual(16);
  });
});
