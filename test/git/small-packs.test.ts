import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import {
  promises as fsp,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { extname, join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openRepository, RefCasError, type GitRepository } from '../../src/git/index.js';
import { PACK_MIN_OBJECTS } from '../../src/git/objects.js';
import { FAN_IN, SYNC_WRITE_MAX } from '../../src/git/small-packs.js';
import { processStartTime } from '../../src/local/file-lock.js';
import { GitStore } from '../../src/store/index.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';

// Small packs (git/small-packs.ts): a durable commit of a few objects is one small pack, and
// the small packs a process wrote are merged in the background so that their number stays
// bounded. A merge must never lose an object: the merged pack is durable before the packs it
// replaces are deleted, a reader that was running throughout still finds every object, and a
// `git gc` in progress keeps them.

const REF = 'refs/zz/lanes/small';

/**
 * File `i` of a commit of `files`: past PACK_MIN_OBJECTS files, padded so that the commit is a
 * pack left for gc by count and by size alike (ObjectWriter.isLarge: either makes it large).
 */
function body(i: number, files: number): string {
  const pad = files > PACK_MIN_OBJECTS ? '.'.repeat(Math.ceil((2 * SYNC_WRITE_MAX) / files)) : '';
  return JSON.stringify({ w: String(i), pad });
}

function packs(gitdir: string): string[] {
  return readdirSync(join(gitdir, 'objects', 'pack'));
}

/** `n` commits of two changed files each (7 objects: 2 blobs, 2 subtrees, root, commit). */
async function commits(store: GitStore, n: number, tag: string): Promise<string[]> {
  const revs: string[] = [];
  for (let i = 0; i < n; i++) {
    const parent = await store.head(REF);
    const changes = new Map([
      [`asks/${i % 4}/a.json`, JSON.stringify({ tag, i })],
      [`asks/${(i + 1) % 4}/b.json`, JSON.stringify({ tag, i, b: true })],
    ]);
    revs.push(await store.commit(REF, { parent, changes, ops: [], summary: `${tag} ${i}` }));
  }
  return revs;
}

/** Every object reachable from `rev`, through a fresh `git cat-file --batch-check`. */
function missingObjects(dir: string, rev: string): string[] {
  const oids = sh(dir, 'rev-list', '--objects', rev)
    .split('\n')
    .map((l) => l.slice(0, 40));
  const out = execFileSync('git', ['cat-file', '--batch-check'], {
    cwd: dir,
    input: oids.join('\n') + '\n',
    encoding: 'utf8',
  });
  return out.split('\n').filter((l) => l.endsWith(' missing'));
}

describe('small packs', () => {
  let repo: GitRepository | undefined;
  let cleanup = () => {};
  afterEach(async () => {
    vi.restoreAllMocks();
    repo?.close();
    await repo?.objects.close();
    repo = undefined;
    cleanup();
  });

  it('merge every FAN_IN small packs into one, and FAN_IN of those into one left for gc; a reader running throughout finds every object', async () => {
    const seed = testSeed('small packs merge');
    const rnd = prng(seed);
    const made = makeRepo('zz-small-merge-');
    cleanup = made.cleanup;
    const dir = made.dir;
    repo = await openRepository(dir);
    const gitdir = repo.gitdir;
    const store = new GitStore(repo);
    const base = packs(gitdir).length;
    const n = FAN_IN * FAN_IN + 5;
    // A reader beside the writer, through the repository's own long-lived cat-file and with no
    // tree cache: it reads revisions already written while merges delete the packs they were in.
    const written: string[] = [];
    let reads = 0;
    let writing = true;
    let readerFailed: unknown = null;
    const reader = (async () => {
      while (writing) {
        if (written.length > 0) {
          const rev = written[Math.floor(rnd() * written.length)]!;
          const files = await new GitStore(repo!).readAll(rev, 'asks');
          expect(files.size).toBeGreaterThan(0);
          reads++;
        }
        await new Promise((r) => setImmediate(r));
      }
    })().catch((e: unknown) => {
      readerFailed = e; // stop the writer too, and fail below with the reader's error
      writing = false;
    });
    try {
      for (let i = 0; i < n && !readerFailed; i++) {
        written.push(...(await commits(store, 1, `m${i}`)));
      }
    } finally {
      writing = false;
    }
    await reader;
    if (readerFailed) throw readerFailed;
    await repo.objects.small.idle();
    expect(reads).toBeGreaterThan(0);
    // n small packs: FAN_IN×FAN_IN of them became one pack left for gc, 5 remain.
    expect(repo.objects.packsWritten).toBe(1);
    expect(repo.objects.small.mergeFailures).toBe(0);
    const left = packs(gitdir);
    expect(left.filter((f) => f.startsWith('tmp_'))).toEqual([]);
    expect(left.filter((f) => f.endsWith('.idx')).length).toBe(base / 2 + 1 + 5);
    expect(left.length - base).toBe(2 * (1 + 5));
    // Every revision, read by git itself and by a fresh store (the old cat-file included).
    for (const rev of [written[0]!, written[FAN_IN]!, written[n - 1]!]) {
      expect(missingObjects(dir, rev)).toEqual([]);
    }
    const third = await new GitStore(repo).readAll(written[3]!, 'asks');
    expect(third.get('asks/0/a.json')).toBe(JSON.stringify({ tag: 'm3', i: 0 }));
    expect(fsckProblems(dir)).toEqual([]);
    expect(sh(dir, 'rev-list', '--count', REF)).toBe(String(n));
  }, 120_000);

  it('a merged pack is durable (both files, then objects/pack/) before a pack it replaces is deleted', async () => {
    const made = makeRepo('zz-small-order-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const store = new GitStore(repo);
    await commits(store, FAN_IN - 1, 'before');
    // What happens once the FAN_IN-th commit's ref has moved is the merge's: its syncs (on
    // `fs`, where blanks are ready, else a FileHandle's), its renames and the deletions.
    const events: string[] = [];
    let refMoved = false;
    const on = (e: string) => {
      if (refMoved) events.push(e);
    };
    const renameSync = fs.renameSync.bind(fs);
    vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      renameSync(from, to);
      if (String(from).endsWith('.lock')) refMoved = true;
      else if (/\.(pack|idx)$/.test(String(to))) on(`rename ${extname(String(to))}`);
    });
    const rename = fsp.rename.bind(fsp);
    vi.spyOn(fsp, 'rename').mockImplementation(async (from, to) => {
      await rename(from, to);
      on(`rename ${extname(String(to))}`);
    });
    const synced = (isDir: boolean, cb: (e: NodeJS.ErrnoException | null) => void) => {
      return (e: NodeJS.ErrnoException | null) => {
        on(isDir ? 'sync dir' : 'sync file');
        cb(e);
      };
    };
    const fdatasync = fs.fdatasync.bind(fs);
    vi.spyOn(fs, 'fdatasync').mockImplementation(((fd: number, cb: fs.NoParamCallback) =>
      fdatasync(fd, synced(false, cb))) as typeof fs.fdatasync);
    const fsync = fs.fsync.bind(fs);
    vi.spyOn(fs, 'fsync').mockImplementation(((fd: number, cb: fs.NoParamCallback) =>
      fsync(fd, synced(fs.fstatSync(fd).isDirectory(), cb))) as typeof fs.fsync);
    const probe = await fsp.open(made.dir, 'r');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const realSync = proto.sync;
    vi.spyOn(proto, 'sync').mockImplementation(async function (this: fsp.FileHandle) {
      const st = await this.stat();
      const r = await realSync.call(this);
      on(st.isDirectory() ? 'sync dir' : 'sync file');
      return r;
    });
    const realUnlink = fsp.unlink;
    vi.spyOn(fsp, 'unlink').mockImplementation((p) => {
      if (/\/objects\/pack\/pack-/.test(String(p))) on('delete');
      return realUnlink(p);
    });
    await commits(store, 1, 'the FAN_IN-th');
    await repo.objects.small.idle();
    expect(events.indexOf('delete'), events.join(', ')).toBeGreaterThan(0);
    expect(events.slice(0, events.indexOf('delete'))).toEqual([
      'sync file', // the merged pack and its index, synced
      'sync file',
      'rename .pack', // then renamed into place, the .idx last
      'rename .idx',
      'sync dir', // then objects/pack/
    ]);
    // FAN_IN packs, each an .idx and a .pack.
    expect(events.filter((e) => e === 'delete')).toHaveLength(2 * FAN_IN);
    expect(fsckProblems(made.dir)).toEqual([]);
  });

  it('while a git gc runs (gc.pid) the small packs are kept and left to it', async () => {
    const made = makeRepo('zz-small-gc-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const gitdir = repo.gitdir;
    const store = new GitStore(repo);
    const base = packs(gitdir).length;
    writeFileSync(join(gitdir, 'gc.pid'), `${process.pid} test-host\n`);
    try {
      await commits(store, FAN_IN, 'during gc');
      await repo.objects.small.idle();
    } finally {
      rmSync(join(gitdir, 'gc.pid'));
    }
    // The FAN_IN small packs stay (counted for gc) beside the merged one.
    expect(packs(gitdir).length - base).toBe(2 * (FAN_IN + 1));
    expect(repo.objects.packsWritten).toBe(FAN_IN);
    execFileSync('git', ['gc', '-q'], { cwd: made.dir });
    expect(missingObjects(made.dir, REF)).toEqual([]);
    expect(fsckProblems(made.dir)).toEqual([]);
  });

  it('a gc that starts while a merge deletes the packs it replaced stops the deletions (gc.pid asked before each pack)', async () => {
    const made = makeRepo('zz-small-gcmid-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const gitdir = repo.gitdir;
    const store = new GitStore(repo);
    await commits(store, FAN_IN - 1, 'before');
    const deleted: string[] = [];
    const realUnlink = fsp.unlink;
    vi.spyOn(fsp, 'unlink').mockImplementation(async (p) => {
      if (/\/objects\/pack\/pack-/.test(String(p))) {
        deleted.push(String(p));
        // git gc starts right after the merge's first deletion has begun.
        if (deleted.length === 1)
          writeFileSync(join(gitdir, 'gc.pid'), `${process.pid} test-host\n`);
      }
      return realUnlink(p);
    });
    const before = repo.objects.small.leftForGc;
    await commits(store, 1, 'the FAN_IN-th');
    await repo.objects.small.idle();
    // The pack being deleted goes whole (.idx, then .pack); the other FAN_IN - 1 stay for gc.
    expect(deleted.map((p) => p.slice(p.lastIndexOf('.')))).toEqual(['.idx', '.pack']);
    expect(repo.objects.small.leftForGc - before).toBe(FAN_IN - 1);
    rmSync(join(gitdir, 'gc.pid'));
    execFileSync('git', ['gc', '-q'], { cwd: made.dir });
    expect(missingObjects(made.dir, REF)).toEqual([]);
    expect(fsckProblems(made.dir)).toEqual([]);
  });

  it("this process's own gc (holdDeletes) waits for the deletion in flight, and no other starts until released", async () => {
    const made = makeRepo('zz-small-hold-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const small = repo.objects.small;
    const store = new GitStore(repo);
    await commits(store, FAN_IN - 1, 'before');
    let stalled!: () => void;
    const stall = new Promise<void>((r) => (stalled = r));
    let unstall!: () => void;
    const gate = new Promise<void>((r) => (unstall = r));
    const deleted: string[] = [];
    const realUnlink = fsp.unlink;
    vi.spyOn(fsp, 'unlink').mockImplementation(async (p) => {
      if (/\/objects\/pack\/pack-/.test(String(p))) {
        deleted.push(String(p));
        if (deleted.length === 1) {
          stalled();
          await gate; // the first deletion is slow: a busy disk
        }
      }
      return realUnlink(p);
    });
    const before = small.leftForGc;
    await commits(store, 1, 'the FAN_IN-th');
    await stall; // the merge is inside its first deletion
    const held = small.holdDeletes().then((release) => {
      deleted.push('held.'); // resolved only once the pack in flight is gone, both files
      return release;
    });
    unstall();
    const release = await held;
    await small.idle();
    // Only the pack whose deletion was in flight went (.idx then .pack); the rest stay.
    expect(deleted.map((p) => p.slice(p.lastIndexOf('.')))).toEqual(['.idx', '.pack', '.']);
    expect(small.leftForGc - before).toBe(FAN_IN - 1);
    release();
    release(); // twice is once
    // Released: the next merge deletes its batch again.
    await commits(store, FAN_IN, 'after');
    await small.idle();
    expect(deleted.length).toBe(3 + 2 * FAN_IN);
    expect(missingObjects(made.dir, REF)).toEqual([]);
    expect(fsckProblems(made.dir)).toEqual([]);
  });

  // Small (a Lane op) and large (a Ladder build, a big Lane commit: pack-writer's path).
  it.each([
    ['a small pack', 2],
    ['a large pack', 3 * PACK_MIN_OBJECTS],
  ])(
    'a git repack -a -d between %s landing and its ref moving drops nothing (the pack is .kept until then)',
    async (_what, files) => {
      const made = makeRepo('zz-small-keep-');
      cleanup = made.cleanup;
      repo = await openRepository(made.dir);
      const gitdir = repo.gitdir;
      const store = new GitStore(repo);
      await commits(store, 2, 'before');
      // The window: the pack is in place and durable (cas's `durable` step is done), the ref
      // has not moved. A native `git repack -a -d` (what `git gc --prune=now` runs too) drops
      // unreachable packed objects of the packs it replaces, which is what this write's
      // objects are until the ref moves.
      let keptDuringRepack: string[] = [];
      let packedInWindow = 0;
      const cas = repo.refs.cas.bind(repo.refs);
      vi.spyOn(repo.refs, 'cas').mockImplementation(async (ref, expected, next, durable) =>
        cas(ref, expected, next, async () => {
          await durable?.();
          keptDuringRepack = packs(gitdir).filter((f) => f.endsWith('.keep'));
          const kept = keptDuringRepack[0]?.replace(/\.keep$/, '.idx');
          if (kept) {
            packedInWindow = execFileSync('git', ['show-index'], {
              cwd: made.dir,
              input: readFileSync(join(gitdir, 'objects', 'pack', kept)),
              encoding: 'utf8',
            })
              .split('\n')
              .filter(Boolean).length;
          }
          execFileSync('git', ['repack', '-a', '-d', '-q'], { cwd: made.dir });
        }),
      );
      const parent = await store.head(REF);
      const changes = new Map(
        Array.from({ length: files }, (_, i) => [`asks/${i % 7}/f${i}.json`, body(i, files)]),
      );
      const leftBefore = repo.objects.packsWritten;
      const rev = await store.commit(REF, { parent, changes, ops: [], summary: 'in-window' });
      // The path this case is about: a pack left for gc (pack-writer's), or a small pack.
      expect(repo.objects.packsWritten - leftBefore).toBe(files > PACK_MIN_OBJECTS ? 1 : 0);
      expect(sh(made.dir, 'rev-parse', REF)).toBe(rev);
      expect(missingObjects(made.dir, REF)).toEqual([]);
      expect(fsckProblems(made.dir)).toEqual([]);
      expect(keptDuringRepack.length).toBe(1);
      // The .kept pack is this write's: every blob of it (a large one: a pack left for gc).
      expect(packedInWindow).toBeGreaterThan(files);
      // Released once the ref moved: no .keep is left behind.
      expect(packs(gitdir).filter((f) => f.endsWith('.keep'))).toEqual([]);
    },
  );

  // GitStore.commit reads the ref only under the lock (the CAS): a small commit on a stale
  // parent is written, then refused. Its pack is named by no ref, released like any other
  // (no .keep, lock or token left) and merged with the rest; a large one is not written.
  it.each([
    ['a small pack', 2],
    ['a large pack', 3 * PACK_MIN_OBJECTS],
  ])(
    'a commit on a stale parent as %s: refused, nothing left held, the ref unmoved',
    async (_what, files) => {
      const made = makeRepo('zz-small-stale-');
      cleanup = made.cleanup;
      repo = await openRepository(made.dir);
      const gitdir = repo.gitdir;
      const store = new GitStore(repo);
      const [first, second] = await commits(store, 2, 'before');
      const before = packs(gitdir);
      const leftBefore = repo.objects.packsWritten;
      const changes = new Map(
        Array.from({ length: files }, (_, i) => [`asks/${i % 7}/f${i}.json`, body(i, files)]),
      );
      const err = await store
        .commit(REF, { parent: first!, changes, ops: [], summary: 'stale' })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RefCasError);
      expect((err as RefCasError).actual).toBe(second);
      expect(sh(made.dir, 'rev-parse', REF)).toBe(second);
      const after = packs(gitdir);
      expect(after.filter((f) => f.endsWith('.keep') || f.startsWith('tmp_'))).toEqual([]);
      expect(readdirSync(join(gitdir, 'refs', 'zz', 'lanes'))).toEqual(['small']);
      expect(readdirSync(join(gitdir, 'zz', 'locks'))).toEqual([]);
      // Small: one pack more, tracked for merging (not left for gc). Large: nothing written.
      const added = after.filter((f) => !before.includes(f));
      expect(added.length).toBe(files > PACK_MIN_OBJECTS ? 0 : 2);
      expect(repo.objects.packsWritten).toBe(leftBefore);
      await commits(store, FAN_IN, 'after');
      await repo.objects.small.idle();
      expect(packs(gitdir).filter((f) => added.includes(f))).toEqual([]); // merged away
      expect(missingObjects(made.dir, REF)).toEqual([]);
      expect(fsckProblems(made.dir)).toEqual([]);
    },
  );

  // git repack lists packs by their .pack files: one listed before its .keep existed is
  // deleted when repack ends (pack-writer.ts, "Concurrent `git gc`"), so the .keep must come
  // before the .pack, in both write paths.
  it.each([
    ['a small pack', 2],
    ['a large pack', 3 * PACK_MIN_OBJECTS],
  ])(
    'a git repack -a -d the moment %s appears (no .idx yet) drops nothing: its .keep came first',
    async (_what, files) => {
      const made = makeRepo('zz-small-pack-window-');
      cleanup = made.cleanup;
      repo = await openRepository(made.dir);
      const store = new GitStore(repo);
      await commits(store, 2, 'before');
      const seen: boolean[] = [];
      const inWindow = (from: unknown, to: unknown) => {
        // A tmp .pack (tmp_pack_*, or a blank from zz/blanks/) taking its final name.
        if (!String(to).endsWith('.pack') || String(from).endsWith('.pack')) return;
        seen.push(fs.existsSync(String(to).replace(/\.pack$/, '.keep')));
        execFileSync('git', ['repack', '-a', '-d', '-q'], { cwd: made.dir });
      };
      const renameSync = fs.renameSync.bind(fs);
      vi.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
        renameSync(from, to);
        inWindow(from, to);
      });
      const rename = fs.promises.rename.bind(fs.promises);
      vi.spyOn(fs.promises, 'rename').mockImplementation(async (from, to) => {
        await rename(from, to);
        inWindow(from, to);
      });
      const parent = await store.head(REF);
      const changes = new Map(
        Array.from({ length: files }, (_, i) => [`asks/${i % 7}/f${i}.json`, body(i, files)]),
      );
      const leftBefore = repo.objects.packsWritten;
      await store.commit(REF, { parent, changes, ops: [], summary: 'pack window' });
      expect(repo.objects.packsWritten - leftBefore).toBe(files > PACK_MIN_OBJECTS ? 1 : 0);
      expect(missingObjects(made.dir, REF)).toEqual([]);
      expect(fsckProblems(made.dir)).toEqual([]);
      expect(seen).toEqual([true]);
    },
  );

  it("removes a dead zz process's .keep on the next write, and leaves git's and a live process's alone", async () => {
    const made = makeRepo('zz-small-stale-keep-');
    cleanup = made.cleanup;
    repo = await openRepository(made.dir);
    const dir = join(repo.gitdir, 'objects', 'pack');
    mkdirSync(dir, { recursive: true });
    const stale = join(dir, 'pack-0000000000000000000000000000000000000001.keep');
    const gits = join(dir, 'pack-0000000000000000000000000000000000000002.keep');
    const live = join(dir, 'pack-0000000000000000000000000000000000000003.keep');
    // pid_max is at most 4,194,304: no process has this pid.
    writeFileSync(stale, `zz ${hostname()} 4999999 123\n`);
    writeFileSync(gits, 'receive-pack 4999999 on somewhere\n');
    writeFileSync(live, `zz ${hostname()} ${process.ppid} ${processStartTime(process.ppid)}\n`);
    await commits(new GitStore(repo), 1, 'sweep');
    const left = packs(repo.gitdir).filter((f) => f.endsWith('.keep'));
    expect(left.sort()).toEqual([gits, live].map((f) => f.slice(dir.length + 1)).sort());
  });
});
