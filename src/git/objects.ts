import { randomBytes } from 'node:crypto';
import fs, {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  promises as fsp,
  rmSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { deflateSync } from 'node:zlib';
import { closeQuietly, fdatasyncFd } from './fs-calls.js';
import {
  hashedObject,
  hashObject,
  isHashed,
  serializeCommit,
  serializeTree,
  type CommitData,
  type HashedObject,
  type ObjectType,
  type TreeEntry,
} from './object-format.js';
import { encodePack } from './pack-writer.js';
import { SmallPacks, SYNC_WRITE_MAX as SMALL_PACK_MAX_BYTES } from './small-packs.js';

// Our own loose-object writer. isomorphic-git's writeBlob/writeTree/writeCommit write in place
// and a crash leaves a truncated object that is never repaired (a later write of the same oid
// is skipped because the file exists). Here every object goes to a temp file in its fan-out
// directory and is renamed into place, so an object file is either absent or complete.

export * from './object-format.js';

export interface ObjectWriterOptions {
  /**
   * Power-loss durability: each object's data is fsynced before it is renamed into place and
   * its fan-out directory after (a small pack: its two files, then objects/pack/; see
   * git/small-packs.ts for why each step is needed), so an object is on disk before write()
   * resolves (and so before any ref can point at it). The fsyncs of a commit's objects run side by side and the
   * directory fsyncs are shared by every write waiting on the same directory, so on a
   * journalling filesystem they land in one or two journal commits.
   */
  fsync?: boolean;
}

/**
 * Fan-out directories that objects were renamed into and that still need an fsync before
 * anything may name those objects. Passed to write() by a caller that moves a ref next: it
 * syncs them (syncDirs) side by side with the ref's own lock fsync, one wait instead of two.
 */
export type PendingDirs = Set<string>;

// Temp names: random per process, then a counter (randomBytes per object showed in profiles).
const TMP_PREFIX = randomBytes(4).toString('hex');
let tmpCounter = 0;

/** Objects up to this size (uncompressed) are created synchronously; see createSmallSync. */
const SYNC_WRITE_MAX = 256 * 1024;

/**
 * A batch of more objects than this is written as one pack (git/pack-writer.ts), fewer as loose
 * objects. Measured with fsync on the 2-vCPU VM under load 9 (`npm run bench -- pack-threshold`):
 * a pack costs two files and two fsyncs whatever its size, a loose object one file and one
 * fsync each, so a pack is already faster at 4 objects (1.6-1.9x), 4-6x at 16, 7-9x at 32.
 * Speed is not all: every pack is one more index each read may search, and gc --auto repacks
 * the whole repository once there are more than 50. So a pack left for gc is written only where
 * it wins big: a Ladder build (thousands of rungs) or a large changeset is one pack. Everyday
 * durable writes (a Lane op: 3 to 6 objects) are small packs that this process merges itself
 * (smallPacks, git/small-packs.ts); without fsync they stay loose.
 */
export const PACK_MIN_OBJECTS = 32;

/** Loose objects created per turn of the event loop by writeMany. */
const YIELD_EVERY = 4;

export class ObjectWriter {
  private readonly knownDirs = new Set<string>();
  private bigPacks = 0;
  /** Batches of more objects than this become a pack (Infinity: always loose; benchmarks). */
  packMinObjects = PACK_MIN_OBJECTS;
  /**
   * Durable batches of 2..packMinObjects objects are written as one small pack (see
   * small-packs.ts: 4 fsyncs a Lane op instead of 11), merged in the background. Default: on
   * when fsync is (without fsync loose objects cost no more); false: loose (benchmarks, tests).
   */
  smallPacks: boolean;
  readonly small: SmallPacks;

  constructor(
    private readonly gitdir: string,
    private readonly opts: ObjectWriterOptions = {},
  ) {
    this.smallPacks = opts.fsync ?? false;
    this.small = new SmallPacks(gitdir, {
      fsync: opts.fsync ?? false,
      syncDir: (dir) => this.syncDir(dir),
    });
  }

  /**
   * Packs this writer has written and left for git's gc (the daemon's maintenance runs gc
   * --auto as they accumulate). Small packs it merges itself do not count until merged into
   * one it leaves (small-packs.ts).
   */
  get packsWritten(): number {
    return this.bigPacks + this.small.leftForGc;
  }

  /**
   * Writes one object atomically (temp file renamed into place); returns its oid.
   *
   * There is no existence check first. Renaming a complete copy over an existing object is as
   * atomic as git's own writes, saves a system call on the usual case (a new object), and
   * freshens the object's mtime as git does (freshen_loose_object), so that a `git gc` beside
   * us cannot prune an old unreachable object we are about to reference.
   *
   * With fsync on and `pending` given, the object's data is on disk when this resolves but its
   * directory entry is durable only once the caller has awaited syncDirs(pending).
   */
  async write(type: ObjectType, body: Buffer, pending?: PendingDirs): Promise<string> {
    const { oid, raw } = hashObject(type, body);
    const dir = join(this.gitdir, 'objects', oid.slice(0, 2));
    const file = join(dir, oid.slice(2));
    const tmp = join(dir, `tmp_obj_zz_${process.pid}_${TMP_PREFIX}${(tmpCounter++).toString(36)}`);
    if (raw.length <= SYNC_WRITE_MAX) {
      const { fd, madeDir } = this.createSmallSync(dir, tmp, deflateSync(raw, { level: 1 }));
      if (this.opts.fsync) {
        try {
          await fdatasyncFd(fd);
        } catch (e) {
          closeQuietly(fd);
          rmSync(tmp, { force: true });
          throw e;
        }
      }
      closeSync(fd);
      if (this.installSync(tmp, file)) await this.durableDir(dir, madeDir, pending);
      else if (this.opts.fsync) await this.syncDir(dir);
      return oid;
    }
    let fh: fsp.FileHandle | undefined;
    let madeDir = false;
    for (let attempt = 0; !fh; attempt++) {
      try {
        if (!this.knownDirs.has(dir)) {
          madeDir =
            (await fsp.mkdir(dir).then(
              () => true,
              (e: unknown) => (ignoreExists(e), false),
            )) || madeDir;
          this.knownDirs.add(dir);
        }
        fh = await fsp.open(tmp, 'wx', 0o444);
      } catch (e) {
        // `git gc` (prune, prune-packed) removes fan-out directories it empties, even between
        // our mkdir and open: make it again, as git does when it creates its tmp file.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 10) throw e;
        this.knownDirs.delete(dir);
      }
    }
    try {
      await fh.writeFile(deflateSync(raw, { level: 1 }));
      if (this.opts.fsync) await fh.sync();
    } catch (e) {
      await fh.close().catch(() => {});
      await fsp.unlink(tmp).catch(() => {});
      throw e;
    }
    await fh.close();
    try {
      await fsp.rename(tmp, file);
    } catch (e) {
      await fsp.unlink(tmp).catch(() => {});
      // Where a read-only file cannot be replaced (Windows), the existing copy is as good.
      const code = (e as NodeJS.ErrnoException).code;
      if ((code === 'EPERM' || code === 'EACCES' || code === 'EEXIST') && (await exists(file))) {
        if (this.opts.fsync) await this.syncDir(dir);
        return oid;
      }
      throw e;
    }
    await this.durableDir(dir, madeDir, pending);
    return oid;
  }

  // The rename is a directory entry: durable only once the directory is synced (and a
  // fan-out directory we created, only once objects/ is). With `pending`, the caller syncs.
  private async durableDir(dir: string, madeDir: boolean, pending?: PendingDirs): Promise<void> {
    if (!this.opts.fsync) return;
    const objects = join(this.gitdir, 'objects');
    if (pending) {
      pending.add(dir);
      if (madeDir) pending.add(objects);
      return;
    }
    await Promise.all([this.syncDir(dir), madeDir ? this.syncDir(objects) : undefined]);
  }

  /** Lets a merge of small packs in progress finish; starts no new one. */
  close(): Promise<void> {
    return this.small.close();
  }

  /** The ref update that `pending`'s objects were written for is over: see SmallPacks.release. */
  release(pending: PendingDirs): void {
    this.small.release(pending);
  }

  /** Makes the directory entries of objects written with `pending` durable. */
  async syncDirs(pending: PendingDirs): Promise<void> {
    await Promise.all([...pending].map((d) => this.syncDir(d)));
  }

  /** Directory fsyncs not started yet, by directory: later writers join the pending one. */
  private readonly dirSyncs = new Map<string, Promise<void>>();

  /**
   * fsyncs `dir` after the caller's rename. A sync already running may have missed that
   * rename, so a caller joins only a sync that has not started; it starts on the next turn of
   * the event loop, after every write that renamed in this turn has asked for it.
   */
  private syncDir(dir: string): Promise<void> {
    const pending = this.dirSyncs.get(dir);
    if (pending) return pending;
    const p = new Promise<void>((resolve, reject) => {
      setImmediate(() => {
        this.dirSyncs.delete(dir);
        // Opened and closed synchronously (microseconds): only the fsync waits in the pool.
        let fd: number;
        try {
          fd = openSync(dir, 'r');
        } catch (e) {
          reject(e as Error);
          return;
        }
        fs.fsync(fd, (e) => {
          closeQuietly(fd);
          if (e) reject(e);
          else resolve();
        });
      });
    });
    this.dirSyncs.set(dir, p);
    return p;
  }

  // Small objects are created, written, closed and renamed with synchronous calls, and only
  // their fsync (when on) goes to libuv's thread pool. Each of these calls costs a few
  // microseconds on a local disk, where the async version costs a thread-pool round trip and,
  // worse, queues behind the fsyncs of other writes in that 4-thread pool: a commit of 40
  // objects made 200 pool jobs, and every read that needed the pool waited for them. (Measured
  // before: 190 µs sync vs 550 µs async in parallel vs 1.1 ms in sequence for a 5-object lane
  // write.) The price: the event loop waits for the disk while they run, a few ms in all when
  // file creation is slow on a disk hammered by other jobs. Set SYNC_WRITE_MAX to 0 to go back
  // to async writes.
  private createSmallSync(
    dir: string,
    tmp: string,
    data: Buffer,
  ): { fd: number; madeDir: boolean } {
    let fd: number | undefined;
    let madeDir = false;
    for (let attempt = 0; fd === undefined; attempt++) {
      try {
        if (!this.knownDirs.has(dir)) {
          try {
            mkdirSync(dir);
            madeDir = true;
          } catch (e) {
            ignoreExists(e);
          }
          this.knownDirs.add(dir);
        }
        fd = openSync(tmp, 'wx', 0o444);
      } catch (e) {
        // See write(): `git gc` may remove the fan-out directory under us.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 10) throw e;
        this.knownDirs.delete(dir);
      }
    }
    try {
      writeSync(fd, data);
    } catch (e) {
      closeSync(fd);
      rmSync(tmp, { force: true });
      throw e;
    }
    return { fd, madeDir };
  }

  /** Renames a complete temp file into place; false when an existing copy stands instead. */
  private installSync(tmp: string, file: string): boolean {
    try {
      fs.renameSync(tmp, file); // on `fs` at call time: the durability test watches it
      return true;
    } catch (e) {
      rmSync(tmp, { force: true });
      // Where a read-only file cannot be replaced (Windows), the existing copy is as good.
      const code = (e as NodeJS.ErrnoException).code;
      if ((code === 'EPERM' || code === 'EACCES' || code === 'EEXIST') && existsSync(file)) {
        return false;
      }
      throw e;
    }
  }

  /**
   * Writes a commit's objects together: as one pack when isLarge(), as a small pack
   * (smallPacks) from 2 objects, else loose. Either way every object is on disk (with
   * `fsync`, durably) when this resolves, except that loose objects and small packs written
   * with `pending` leave their directories' fsyncs to the caller (see write()); a big pack
   * syncs its own directory.
   */
  async writeMany(
    objects: ReadonlyArray<{ type: ObjectType; body: Buffer } | HashedObject>,
    pending?: PendingDirs,
  ): Promise<string[]> {
    const large = this.isLarge(
      objects.length,
      objects.reduce((n, o) => n + o.body.length, 0),
    );
    // packMinObjects = Infinity keeps its meaning, always loose (the benchmarks' baseline).
    const smallPack = this.smallPacks && objects.length >= 2 && this.packMinObjects !== Infinity;
    if (!large && !smallPack) {
      // write() creates its file with synchronous calls, which wait for the filesystem's
      // journal while other fsyncs run (0.1-1 ms each under load): a batch of 65 objects held
      // the event loop ~10 ms at a time under a writer storm and reads waited behind it.
      // Yielding every few objects lets requests in between; the fsyncs of the objects
      // already created run meanwhile.
      const writes: Array<Promise<string>> = [];
      for (let i = 0; i < objects.length; i++) {
        if (i > 0 && i % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
        const w = this.write(objects[i]!.type, objects[i]!.body, pending);
        w.catch(() => {}); // awaited below; not an unhandled rejection while we yield
        writes.push(w);
      }
      return Promise.all(writes);
    }
    // Hashed here unless hashed by hashedObject: a wrong name would be a corrupt pack.
    const entries = objects.map((o) => (isHashed(o) ? o : hashedObject(o.type, o.body)));
    if (!large) {
      await this.small.write(entries, pending);
    } else {
      // With `pending` (a ref update follows), .kept until release(): see small-packs.ts.
      await this.small.writeLarge(encodePack(entries), pending);
      this.bigPacks++;
    }
    return entries.map((e) => e.oid);
  }

  /**
   * Whether a batch of `count` objects of `bytes` (uncompressed) is written as a pack left for
   * gc, in pack-writer's async path (a Ladder build, a large changeset, a writer storm's group
   * commit), rather than as a small pack or loose objects: past packMinObjects objects, or past
   * what a small pack writes with synchronous calls (SYNC_WRITE_MAX). Tried three ways and
   * measured (issue 17, A/B pairs on a quiet machine): routing a group commit (~60 objects,
   * ~50 KiB) by size alone makes it a small pack, its files written with synchronous calls into
   * blanks, 2 pool round trips where this path makes ~9 (open, write, sync, close, renames,
   * the directory's open, sync and close, each waiting behind whatever the loop is doing: 8.7
   * of a group's 17.7 ms at the median under the 64-client load). It costs the daemon's
   * thread less per post and the load's p99 dropped (84–105 ms against 97–110), but the
   * writers of a 32-writer storm then post 25% faster and reads wait behind them: p99 2.5–3.4×
   * idle for `lane_get`, 2.6–4.2× for `lane_list`, against 2.1–2.4× / 2.1–2.8× this way. The
   * same with the ref's lock taken while the data syncs run, or with the pack encoded in one
   * turn and written in the next, did no better for reads. A fourth try (2 December), with
   * such packs left for gc instead of merged on the loop and a Lane's snapshots sharing their
   * arrays (fewer, shorter scavenges): group commits 27-31 → 16-20 ms at the median, the
   * storm 903-957 → 1,080-1,242 posts/s, but its reads' p50 doubled (1.4 → 2.8 ms) and their
   * p99 went past 3× idle in 3 of 16 ratios (3.06-3.26×) where this way none of 8 did; the
   * 64-client load's p99 was no better told apart (109-133 against 107-149 ms). A group's I/O
   * stays off the loop.
   */
  isLarge(count: number, bytes: number): boolean {
    return count > this.packMinObjects || (this.smallPacks && bytes > SMALL_PACK_MAX_BYTES);
  }

  blob(content: Buffer | string): Promise<string> {
    return this.write('blob', typeof content === 'string' ? Buffer.from(content, 'utf8') : content);
  }

  tree(entries: readonly TreeEntry[]): Promise<string> {
    return this.write('tree', serializeTree(entries));
  }

  commit(c: CommitData): Promise<string> {
    return this.write('commit', serializeCommit(c));
  }
}

function exists(file: string): Promise<boolean> {
  return fsp.access(file).then(
    () => true,
    () => false,
  );
}

export const EMPTY_TREE_OID = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

// Fan-out directories are made one level deep, never `recursive`: objects/ exists in any
// repository, and Node's recursive mkdir reports a read-only file system as ENOENT, which
// would hide the fault (a 503 read_only) behind retries and a bug-like error.
function ignoreExists(e: unknown): void {
  if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
}
