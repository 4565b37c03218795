import fs, { closeSync, existsSync, mkdirSync, openSync, promises as fsp, rmSync } from 'node:fs';
import { join, sep } from 'node:path';
import { BlankFiles, blanksDir } from './blank-files.js';
import { closeQuietly, fdatasyncFd, unlinkIfThere } from './fs-calls.js';
import { PackKeeps } from './pack-keeps.js';
import {
  assemblePack,
  encodePack,
  skipBytes,
  tmpTag,
  writeEncodedPack,
  type EncodedEntry,
  type EncodedPack,
  type PackEntry,
} from './pack-writer.js';

// A durable commit of a few objects (a Lane op: blob, fan-out tree, asks/, root tree, commit)
// written as one small pack instead of loose objects, and those small packs merged in the
// background so that their number stays bounded (issue 17: durable single-writer ≥ 500 ops/s).
//
// Why a pack, for durability's sake. Before the ref moves, three things must be on disk: the
// objects' bytes, the names under which git finds them, and the ref's new value (its lock).
// - The bytes are synced (fdatasyncFd) before the rename that gives the file its final name: a
//   name that survives a power cut without its data (delayed allocation leaves an empty file)
//   is a corrupt object in place, and git's own writers trust it (an object whose file exists
//   is not written again). So data first, then the rename.
// - fsync of a file makes its data and size durable, not the directory entry that names it:
//   POSIX promises nothing for the entry, and ext4 and xfs do not guarantee it for a newly
//   created or renamed file either (ext4's journal usually carries it along; usually is not a
//   guarantee). So after the rename the directory holding the name is fsynced, even when that
//   directory existed long before: what must be durable is the new entry in it, not the
//   directory itself. A directory we had to create (objects/pack/ in a fresh repository) is an
//   entry of its parent, so objects/ is fsynced as well.
// - So any temp-file-and-rename scheme waits twice: data, then names; the ref's lock (its
//   new value synced) is renamed after both. What a pack changes is how many syncs each wait
//   holds. Loose, a Lane op is 5 files in 5 fan-out directories: 5 fdatasyncs, then 5
//   directory fsyncs, 11 with the lock's, each a device cache flush even where the journal
//   commit is shared, and more than libuv's 4 pool threads, so each wait runs in two waves. As
//   a pack: the .pack, the .idx and the ref's lock (3 fdatasyncs in one wait: GitStore.commit
//   takes the lock while the objects' syncs run), then objects/pack/ alone (1 fsync).
// - What each write does, and why no step can go (a durable Lane op, issue 17; per write of a
//   single writer): write the tmp .pack and .idx into two blanks (files made ahead, in the
//   pool: blank-files.ts), issue their fdatasyncs; while they run, link this pack's .keep to
//   the process's owner file, then take the ref's lock (rename a blank into zz/locks/ as the
//   owner token, link it to <ref>.lock, read the ref, write the new value, issue its
//   fdatasyncFd); wait 1. Rename the .pack, then the .idx; fsync objects/pack/; wait 2. Give
//   the ref's old file a second name, rename the lock over the ref; unlink the token and the
//   .keep (names of inodes that live on); the second name's unlink (it frees the old file's
//   block) goes to the pool. 3 fdatasyncs + 1 fsync, 4 renames, 3 links, 2 unlinks and no
//   file creation on the write's path; no data block is freed there either. Both matter
//   on the VMs' ext4 (`discard`, no journal): a creation
//   costs 40–140 µs, a free is a synchronous discard of 0.3–1.3 ms, where a rename, link or
//   unlink of a name costs ~10 µs (measured, issue 17). Before (main at 1504813): the same
//   syncs, 3 renames, 1 link, 4 creations, the .keep's unlink and the rename over the ref
//   each freeing a block, on the event loop: ~1.2 ms of a 2.3 ms write. Neither wait's
//   directory fsync is redundant on a filesystem that does not order metadata (the .pack's
//   and .idx's names are new; the lock's directory is not synced at all, as git does not,
//   README "Durability").
// (Not done: skipping the directory fsync when the rename replaced an existing object: then
// the old entry already names a complete copy, so it would be safe, but zz rarely rewrites an
// object it has, and the check costs a system call on every write.)
//
// The pack itself is written as git-pack-writer's big packs are (see pack-writer.ts: .pack
// renamed into place before the .idx that makes it visible), with synchronous calls for its
// few KiB (see ObjectWriter's createSmallSync for why) and only the fsyncs in the pool; its
// directory fsync is left to the caller (`pending`), who runs it before the ref moves.
//
// Bounded packs. A pack per write would leave thousands of packs: each is one more index a
// read may search (measured: 1,000 tiny packs still read in ~0.03 ms an object, but git
// re-lists objects/pack each time it meets an object it has not seen) and git's gc --auto
// repacks the whole repository past gc.autoPackLimit (50). So the small packs this process
// wrote are merged: every FAN_IN of them into one (from the entries kept in memory: no
// inflate, no read back), and every FAN_IN of those into one more that is left for git's gc
// (counted in leftForGc, which the daemon's maintenance watches). About 2 × FAN_IN packs of
// ours are live between gc runs, and the entries kept in memory are bounded by
// TRACK_MAX_BYTES per small pack and MAX_WAITING small packs (under 10 MiB at worst; ~2 MiB
// for Lane ops of a 1,000-Ask Lane).
//
// A merge deletes the packs it replaced only once the merged pack is durable (files, then
// objects/pack/): a power cut in between leaves the objects in both, never in neither. A
// crash mid-merge leaves tmp_* files (git prune sweeps them) or duplicate packs (gc merges
// them). Readers cope with a pack that disappears as they do when git's repack deletes one: a
// long-lived `git cat-file` that misses an object re-scans objects/pack and finds the merged
// pack, which is in place before anything is deleted (test/git/small-packs.test.ts). Hazard:
// a git repack that listed our small packs and reads one after we deleted it fails (and is
// retried later: nothing is lost). Deletion stops, leaving the rest of the small packs to gc,
// while a `git gc` says it runs (gc.pid, asked before each pack) or this process's own gc is
// about to run (holdDeletes); a bare `git repack` says nothing and may hit that window.
// Only packs this process wrote are ever merged or deleted, and never the merged pack itself
// (same objects, same name).
//
// In-flight packs. Between a pack's .pack appearing and the ref that names its objects moving,
// those objects are unreachable, and a `git repack -a -d` (without -A; also what `git gc
// --prune=now` runs) drops unreachable objects of the packs it replaces: the ref would then
// move to a commit whose objects are gone. Even gc --auto (-A) loses a pack it listed (by its
// .pack) before the .idx appeared: pack-writer.ts, "Concurrent `git gc`". So the .keep comes
// first, before the .pack. A durable Lane op is in that window most of the
// time under load, so a small pack written for a ref update (`pending`) carries a .keep file,
// which repack honours, until the caller calls release() after the ref update (whatever its
// outcome); only then is it tracked for merging. A crash inside the window leaves a .keep
// behind, naming its process (host, pid, start time): the next zz to write here removes it
// once that process is gone, and until then git only leaves that small pack alone. A large
// pack written for a ref update (writeLarge: a Ladder build, a big Lane commit or sync merge)
// is held the same way; pack-writer.ts says which packs still have the window.

/** Small packs merged into one, and merged packs into one more. */
export const FAN_IN = 16;
/** Merge levels kept in memory: level 0 (a write's pack) and 1; a level-2 pack is gc's. */
const LEVELS = 2;
/** Small packs waiting for a merge, at most (more: the oldest are left for gc). */
const MAX_WAITING = 4 * FAN_IN;
/** A small pack bigger than this is not kept for merging (left for gc). */
const TRACK_MAX_BYTES = 32 * 1024;
/** Packs up to this size are written with synchronous calls (larger: pack-writer's async path). */
export const SYNC_WRITE_MAX = 256 * 1024;
/** Blanks kept ready: a small pack takes two (its tmp .pack and .idx), and so does a merge. */
const BLANKS = 4;

interface Tracked {
  name: string;
  entries: EncodedEntry[];
}

export interface SmallPacksOptions {
  fsync: boolean;
  /** fsyncs a directory (ObjectWriter's, which lets concurrent writers share one). */
  syncDir: (dir: string) => Promise<void>;
}

export class SmallPacks {
  /** Packs written here and left for git's gc (merged as far as we go, or not mergeable). */
  leftForGc = 0;
  /** Merges that failed (their small packs stay, for gc). */
  mergeFailures = 0;
  private readonly levels: Tracked[][] = Array.from({ length: LEVELS }, () => []);
  private merging: Promise<void> | null = null;
  /** Small packs written with a `pending` set whose ref has not moved yet, and their .keep. */
  private readonly held = new WeakMap<
    ReadonlySet<string>,
    Array<{ keep: string | null; enc: EncodedPack | null }>
  >();
  private knownDir = false;
  /** holdDeletes() calls not yet released: merges keep the packs they replace meanwhile. */
  private deleteHolds = 0;
  /** A replaced pack's removal in progress (holdDeletes waits for it). */
  private deleting: Promise<void> | null = null;
  private closed = false;
  /** The .keep files of the packs written for a ref update (pack-keeps.ts). */
  private readonly keeps: PackKeeps;

  /** Blanks for the tmp files and .keep of small packs (blank-files.ts: "Where they live"). */
  private readonly blanks: BlankFiles;
  /** objects/pack/ (built once: path.join on every write showed in profiles). */
  private readonly dir: string;

  constructor(
    private readonly gitdir: string,
    private readonly opts: SmallPacksOptions,
  ) {
    this.dir = join(gitdir, 'objects', 'pack');
    this.keeps = new PackKeeps(gitdir);
    this.blanks = new BlankFiles(blanksDir(gitdir), {
      spare: BLANKS,
      mode: 0o444,
      sameDeviceAs: join(gitdir, 'objects'),
    });
  }

  /** A tmp file in objects/pack/ holding `parts`: its fd and path. */
  private tmpFile(kind: 'pack' | 'idx', parts: Buffer[], blanks: boolean): [number, string] {
    const blank = blanks ? this.blanks.take() : null;
    if (blank) {
      try {
        writeAll(blank.fd, parts, blank.path);
      } catch (e) {
        closeQuietly(blank.fd);
        rmSync(blank.path, { force: true });
        throw e;
      }
      return [blank.fd, blank.path];
    }
    const path = `${this.dir}${sep}tmp_${kind}_${tmpTag()}`;
    try {
      return [createSync(path, parts), path];
    } catch (e) {
      // The caller never learns this path: a short write (ENOSPC) must not leave it behind.
      rmSync(path, { force: true });
      throw e;
    }
  }

  /**
   * Writes `objects` (oids already hashed) as one pack. The files are synced and renamed into
   * place when this resolves; with `pending`, objects/pack/'s fsync is the caller's (it must
   * complete before any ref names these objects), else it is done here.
   */
  async write(objects: readonly PackEntry[], pending?: Set<string>): Promise<void> {
    const enc = encodePack(objects);
    if (enc.bytes > SYNC_WRITE_MAX) {
      await this.writeLarge(enc, pending);
      this.leftForGc++;
      return;
    }
    const keep = await this.writeSmallOnce(enc, pending);
    if (pending) this.hold(pending, keep, enc);
    else this.track(enc);
  }

  /** writeSmall, again once after a fault a second try gets past. Answers the .keep. */
  private async writeSmallOnce(enc: EncodedPack, pending?: Set<string>): Promise<string | null> {
    try {
      return await this.writeSmall(enc, pending);
    } catch (e) {
      // objects/pack/ gone under us (ENOENT: made again, as git would; no stat per write to
      // notice it before). And a blank is renamed (the .keep linked) from zz/blanks/ into
      // objects/pack/, which fails where creating the file in place did not: a mount
      // point between the two (EXDEV: a bind mount has the same st_dev, so sameDeviceAs
      // cannot see it; blanks stop for good). Whatever the first attempt left is removed or
      // the same bytes, so it is written again, as without blanks (a person clearing
      // .git/zz/ again meanwhile cannot fail it twice).
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EXDEV') this.blanks.close();
      else if (code === 'ENOENT') this.knownDir = false;
      else throw e;
      return this.writeSmall(enc, pending, false);
    }
  }

  /**
   * Writes `enc` with synchronous calls into blanks (fsyncs in the pool): durable when this
   * resolves, but for objects/pack/'s fsync where `pending` leaves it to the caller, who then
   * also gets a .keep (answered) for the pack until release().
   */
  private async writeSmall(
    enc: EncodedPack,
    pending?: Set<string>,
    blanks = true,
  ): Promise<string | null> {
    // objects/pack/ is made once per process and then trusted (no stat per write); gone since
    // (a repository re-initialised under us), write()'s retry makes it again, as git would.
    const madeDir = this.knownDir ? false : this.makeDir();
    const final = `${this.dir}${sep}pack-${enc.name}`;
    const fds: number[] = [];
    // The tmp files: blanks made ahead when there are (blank-files.ts: a creation is most of
    // what this write would otherwise wait for), else created here.
    let tmpPack = '';
    let tmpIdx = '';
    let keep: string | null = null;
    try {
      [fds[0], tmpPack] = this.tmpFile('pack', enc.pack, blanks);
      [fds[1], tmpIdx] = this.tmpFile('idx', [enc.idx], blanks);
      const synced = this.opts.fsync ? Promise.all(fds.map(fdatasyncFd)) : Promise.resolve([]);
      synced.catch(() => {}); // awaited below
      // Kept (git's .keep, as receive-pack does for a pushed pack) from before git can see it
      // until the ref that names its objects has moved: see the header, "In-flight packs".
      // Made while the data syncs run (a link to the owner file: pack-keeps.ts). A .keep
      // before its .pack is nothing to git (count-objects calls it garbage for that moment).
      try {
        if (pending) keep = this.keeps.hold(`${final}.keep`);
      } catch (e) {
        await synced.catch(() => {}); // no fd is closed under a sync still running
        throw e;
      }
      await synced;
    } catch (e) {
      for (const fd of fds) closeQuietly(fd);
      if (tmpPack) rmSync(tmpPack, { force: true });
      if (tmpIdx) rmSync(tmpIdx, { force: true });
      if (keep) rmSync(keep, { force: true });
      throw e;
    }
    for (const fd of fds) closeSync(fd);
    try {
      installSync(tmpPack, `${final}.pack`, tmpIdx);
      installSync(tmpIdx, `${final}.idx`);
    } catch (e) {
      if (keep) rmSync(keep, { force: true });
      throw e;
    }
    if (this.opts.fsync) {
      const objectsDir = join(this.gitdir, 'objects');
      if (pending) {
        pending.add(this.dir);
        if (madeDir) pending.add(objectsDir);
      } else {
        await Promise.all([
          this.opts.syncDir(this.dir),
          madeDir ? this.opts.syncDir(objectsDir) : undefined,
        ]);
      }
    }
    return keep;
  }

  /**
   * Writes a pack that is left for git's gc (pack-writer's async path: a Ladder build, a
   * large commit or merge). With `pending` it carries a .keep until release(), as a small
   * pack does ("In-flight packs" above); its directory is synced here either way.
   */
  async writeLarge(enc: EncodedPack, pending?: Set<string>): Promise<void> {
    // Its .keep is a link to the owner file, as a small pack's (pack-keeps.ts).
    const written = await writeEncodedPack(this.gitdir, enc, {
      fsync: this.opts.fsync,
      ...(pending ? { holdKeep: (path: string) => this.keeps.hold(path) } : {}),
    });
    if (pending) this.hold(pending, written.keep, null);
  }

  /** A pack written for `pending`'s ref update: its .keep goes, and `enc` is tracked, on release. */
  private hold(pending: ReadonlySet<string>, keep: string | null, enc: EncodedPack | null): void {
    // Merged only once released: a merged pack carries no .keep.
    const held = this.held.get(pending) ?? [];
    held.push({ keep, enc });
    this.held.set(pending, held);
  }

  /**
   * The ref naming what was written with `pending` has moved (or will not): their .keep files
   * go and the packs become mergeable. Call it whatever happened to the ref update.
   */
  release(pending: ReadonlySet<string>): void {
    const held = this.held.get(pending);
    if (!held) return;
    this.held.delete(pending);
    for (const { keep, enc } of held) {
      // Called once the ref moved (GitStore.commit's finally): a failure here (EIO, EACCES)
      // thrown out answered a landed write as failed, and skipped the packs after it. A .keep
      // that stays is a crash's leftover while we live (sweepStaleKeeps after): that pack is
      // not merged (a merge would delete it under its .keep), it is left for gc.
      if (keep) {
        try {
          unlinkIfThere(keep);
        } catch {
          if (enc) this.leftForGc++;
          continue;
        }
      }
      if (enc) this.track(enc);
    }
  }

  /** Resolves when no merge is running (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.merging) await this.merging;
  }

  /** Starts no further merge; resolves when the running one (if any) is done. */
  close(): Promise<void> {
    this.closed = true;
    this.blanks.close();
    this.keeps.close();
    return this.idle();
  }

  private makeDir(): boolean {
    try {
      mkdirSync(this.dir);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      return false;
    } finally {
      this.knownDir = true;
    }
  }

  private track(enc: EncodedPack): void {
    if (enc.bytes > TRACK_MAX_BYTES) {
      this.leftForGc++;
      return;
    }
    const level0 = this.levels[0]!;
    level0.push({ name: enc.name, entries: enc.entries });
    // Writes outpacing merges (a saturated disk): the oldest are left for gc, so that what is
    // kept in memory stays bounded.
    while (level0.length > MAX_WAITING) {
      level0.shift();
      this.leftForGc++;
    }
    if (!this.merging && !this.closed && this.levels[0]!.length >= FAN_IN) {
      this.merging = this.mergeAll().finally(() => (this.merging = null));
    }
  }

  // One merge at a time, level by level, until no level holds FAN_IN packs (writes that land
  // meanwhile are picked up by the loop).
  private async mergeAll(): Promise<void> {
    for (let level = 0; level < LEVELS && !this.closed;) {
      const group = this.levels[level]!;
      if (group.length < FAN_IN) {
        level++;
        continue;
      }
      const batch = group.splice(0, FAN_IN);
      const merged = await this.merge(batch);
      if (!merged) continue;
      if (level + 1 < LEVELS) this.levels[level + 1]!.push(merged);
      else this.leftForGc++;
      level = 0;
    }
  }

  private async merge(batch: Tracked[]): Promise<Tracked | null> {
    const enc = assemblePack(batch.flatMap((p) => p.entries));
    try {
      // Durable (both files, then objects/pack/) before anything it replaces is deleted.
      // Written as a write's small pack is (synchronous calls into two blanks, the syncs in
      // the pool, objects/pack/'s fsync shared with the writes'), where blanks are ready:
      // pack-writer's async path made ~15 pool round trips of it (open, writes, syncs,
      // closes, renames, the directory's open, sync and close), each a wake of a pool thread
      // and a callback on the loop (issue 17). Without blanks, that path, rather than files
      // created on the event loop for a background merge.
      if (enc.bytes <= SYNC_WRITE_MAX && this.blanks.ready >= 2) await this.writeSmallOnce(enc);
      else await writeEncodedPack(this.gitdir, enc, { fsync: this.opts.fsync });
    } catch {
      this.mergeFailures++;
      this.leftForGc += batch.length;
      return null;
    }
    // One at a time, in the pool: an unlink of a pack cost ~1 ms under a busy disk (ext4,
    // mounted with discard), 32 of them a merge; synchronous, they held the event loop and
    // the next write for 30-40 ms at a time, and side by side they took every pool thread
    // the writes' fsyncs need. So the loop is slow (tens of ms), and whether a gc runs is
    // asked before each pack, not once before the loop: a gc that started meanwhile lists
    // these packs, and deleting one under its pack-objects fails that run ("unable to add
    // recent objects", seen in a long-lived daemon's log right before a gc that lost a
    // commit). What is not deleted is left for gc.
    const names = [...new Set(batch.map((p) => p.name))].filter((n) => n !== enc.name);
    for (let i = 0; i < names.length; i++) {
      if (!this.mayDelete()) {
        this.leftForGc += names.length - i;
        break;
      }
      const removing = removePack(join(this.dir, `pack-${names[i]!}`));
      this.deleting = removing;
      try {
        await removing;
      } finally {
        this.deleting = null;
      }
    }
    return { name: enc.name, entries: enc.entries };
  }

  /** No gc of ours (holdDeletes) nor git's (gc.pid) is running: a replaced pack may go. */
  private mayDelete(): boolean {
    return this.deleteHolds === 0 && !existsSync(join(this.gitdir, 'gc.pid'));
  }

  /**
   * For a gc this process is about to run on the repository (the daemon's maintenance): no
   * merge deletes a pack from now until the returned function is called, and this resolves
   * once the deletion in flight, if any, is over. gc.pid alone leaves a window: git writes it
   * only once gc has started, and a merge may be between its check and an unlink then.
   */
  async holdDeletes(): Promise<() => void> {
    this.deleteHolds++;
    let held = true;
    const release = (): void => {
      if (held) this.deleteHolds--;
      held = false;
    };
    while (this.deleting) await this.deleting.catch(() => {});
    return release;
  }
}

/** Creates `path` exclusively (read-only, like git's packs) and writes `parts`; returns the fd. */
function createSync(path: string, parts: Buffer[]): number {
  const fd = openSync(path, 'wx', 0o444);
  try {
    writeAll(fd, parts, path);
    return fd;
  } catch (e) {
    closeQuietly(fd);
    throw e;
  }
}

function writeAll(fd: number, parts: Buffer[], path: string): void {
  let bufs = parts;
  let want = parts.reduce((s, b) => s + b.length, 0);
  while (want > 0) {
    const n = fs.writevSync(fd, bufs);
    if (n <= 0) throw new Error(`pack: short write to ${path}`);
    want -= n;
    bufs = skipBytes(bufs, n);
  }
}

/**
 * Renames a synced tmp file into place (on `fs` at call time: the durability tests watch it).
 * The same objects make the same pack name and bytes, so where an existing file cannot be
 * replaced (Windows), keeping it is as good. On failure `alsoRemove` (the .idx still to come)
 * is removed with the tmp file.
 */
function installSync(tmp: string, final: string, alsoRemove?: string): void {
  try {
    fs.renameSync(tmp, final);
  } catch (e) {
    rmSync(tmp, { force: true });
    const code = (e as NodeJS.ErrnoException).code;
    if ((code === 'EPERM' || code === 'EACCES' || code === 'EEXIST') && existsSync(final)) return;
    if (alsoRemove) rmSync(alsoRemove, { force: true });
    throw e;
  }
}

/** Deletes a pack we replaced: the .idx first (the pack leaves git's view), then the .pack. */
async function removePack(base: string): Promise<void> {
  for (const ext of ['.idx', '.pack']) {
    try {
      await fsp.unlink(base + ext); // on `fs.promises` at call time: a test watches the order
    } catch (e) {
      // Gone already (gc took it): go on. In use where that forbids deleting (Windows): stop,
      // an .idx must never outlive its .pack; gc will remove both.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return;
    }
  }
}
