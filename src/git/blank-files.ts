import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { hostname } from 'node:os';
import { join, sep } from 'node:path';
import { isAlive, processStartTime, processState } from '../local/file-lock.js';
import { closeQuietly, unlinkQuietly } from './fs-calls.js';

// Empty files created ahead of the write that needs them ("blanks"), held open, and handed
// out with their fd. A durable Lane op creates four files on its path: the small pack's tmp
// .pack and tmp .idx and its .keep (small-packs.ts), and the ref lock's owner token
// (ref-store.ts). Measured on the 2-vCPU VM's ext4 (`discard`): creating a file costs
// 115–280 µs quiet and 310–430 µs while an fdatasync is in flight (the inode allocation waits
// on the journal), where a rename, link, unlink or small write costs 5–15 µs. Those creations
// were ~1 ms of a 2.3 ms durable single write, and all of it synchronous on the event loop
// (objects.ts says why the small calls are synchronous), so under a writer storm every group
// commit also held reads for ~1 ms. Blanks are created one at a time in libuv's pool (off the
// event loop, while the write that took the last one waits for its fsyncs), so the write
// itself only writes, syncs and renames or links.
//
// take() answers null when no blank is ready (the first write, or writes outpacing the
// refill): the caller then creates its file itself, as before, so blanks change how fast a
// write is, never whether it happens.
//
// Where they live: zz/blanks/, one directory of files this process made for itself (blanks
// for tmp packs and lock tokens, SmallPacks' .keep owner file, RefStore's hold on a ref's old
// file), named <host>.<pid>.<hex>[.kind]; none is ever a lock's proof of ownership, so those
// of a dead process are all removed (sweepBlanks). Not objects/pack/: there a spare tmp_*
// file would be git's (`git prune --expire=now` deletes it, `git count-objects -v` calls it
// garbage for as long as the daemon runs). Not zz/locks/: a token there is a lock's proof,
// and a spare token would be one more file for the sweep of tokens to judge; a token blank
// is renamed into zz/locks/ when taken. A blank is renamed (or linked) across into
// objects/pack/ or zz/locks/, which is fine on one filesystem and durable the same way (the
// caller fsyncs the destination directory after); where zz/ is on another device than the
// destination (`sameDeviceAs`), no blanks are made at all.
//
// Hazards:
// - A blank is a file with a name that someone may remove meanwhile (a person clearing
//   .git/zz/). take() does not check (an fstat per blank, three a durable write, ~1% of its
//   CPU, for a rare case): the caller's rename of a blank whose name is gone fails (ENOENT)
//   and it makes its file itself, as without blanks (RefStore.newToken; SmallPacks.write
//   writes its pack again; blanks-attack.test.ts clears zz/blanks/ under writes).
// - A process that dies leaves its spares (and owner or hold file): the first take() of the
//   next process removes those of dead processes on this host (a pid reused by a live
//   process keeps them for later: harmless). close() removes a live process's spares.
// - Each spare holds an fd: `spare` per directory and repository, a handful per daemon.

/** link() is not available on every filesystem (FAT, some network mounts). */
export const LINK_UNSUPPORTED = new Set([
  'EPERM',
  'ENOTSUP',
  'EOPNOTSUPP',
  'EXDEV',
  'ENOSYS',
  'EMLINK',
]);

const HOST = hostname();
const HOST_NAME = encodeURIComponent(HOST);
// Names end in hex: random per process, then a counter.
const NAME_PREFIX = randomBytes(4).toString('hex');
let nameCounter = 0;
// Hazard: a pid alone does not name a process. With pid_max at 32,768 (containers, CI) and a
// machine spawning thousands of git processes, a killed writer's pid is soon another
// process's: its lock then looked held by a live process, and the next writer waited out the
// lock timeout and failed with ref_locked (a crash test at CI load). So a name carries its
// process's start time too (`s<ticks since boot>`, Linux), and a process with that pid but
// another start time is not the owner. Names without one (not Linux, or an older zz) are
// judged by pid alone; an older zz cannot parse these names and leaves them be (it never
// removed what it could not read).
const SELF_START = processStartTime(process.pid);
const SELF_TAG = SELF_START === null ? '' : `s${SELF_START}.`;

/** A fresh file name that says who made it: `<host>.<pid>.s<start>.<hex>` (lock tokens, blanks). */
export function ownedName(): string {
  return `${HOST_NAME}.${process.pid}.${SELF_TAG}${NAME_PREFIX}${(nameCounter++).toString(16)}`;
}

/** The directory of blanks (and other files a zz process makes for itself) of a repository. */
export function blanksDir(gitdir: string): string {
  return join(gitdir, 'zz', 'blanks');
}

/** Who made a file named by ownedName() (with a `.old` or `.owner` kind); null for any other. */
export function parseOwnedName(
  name: string,
): { host: string; pid: number; start: string | null } | null {
  const m = /^(.+)\.(\d+)\.(?:s(\d+)\.)?[0-9a-f]+(?:\.(?:old|owner))?$/.exec(name);
  if (!m) return null;
  try {
    return { host: decodeURIComponent(m[1]!), pid: Number(m[2]), start: m[3] ?? null };
  } catch {
    return null;
  }
}

/**
 * Made by another process on this host that is gone: no process has its pid, the one that has
 * it started at another time (the pid was reused), or it is a zombie (killed, not yet reaped by
 * its parent: it can hold nothing any more).
 */
export function isDeadHere(owner: { host: string; pid: number; start?: string | null }): boolean {
  if (owner.host !== HOST || owner.pid === process.pid) return false;
  if (!isAlive(owner.pid)) return true;
  const now = processState(owner.pid);
  if (now === null) return false; // unreadable (EPERM, no /proc): alive as far as we know
  return now.zombie || (owner.start != null && now.start !== owner.start);
}

/** A blank creation is in flight somewhere in this process; who else wants one. */
let creatingAny = false;
const waiting = new Set<BlankFiles>();

export interface Blank {
  fd: number;
  path: string;
}

export interface BlankFilesOptions {
  /** Spares kept ready. */
  spare: number;
  /** Mode of the files (as the file the caller would create itself). */
  mode: number;
  /** Blanks only where `dir` is on the same device as this path (they are renamed there). */
  sameDeviceAs?: string;
}

export class BlankFiles {
  private readonly spares: Blank[] = [];
  private creating = false;
  private closed = false;
  private checked = false;

  constructor(
    private readonly dir: string,
    private readonly opts: BlankFilesOptions,
  ) {}

  /** A blank (empty, open for writing, its name still in place), or null: create your own. */
  take(): Blank | null {
    sweepBlanks(this.dir);
    const b = this.spares.shift();
    this.refill();
    return b ?? null;
  }

  /** Spares ready to be taken now. */
  get ready(): number {
    return this.spares.length;
  }

  /** Stops refilling; closes and removes the spares. */
  close(): void {
    this.closed = true;
    waiting.delete(this);
    for (const b of this.spares.splice(0)) discard(b);
  }

  // One creation at a time in the whole process (`creatingAny`): each holds one of libuv's
  // 4 pool threads for ~0.3 ms, and a durable write's three fdatasyncs need the other three
  // (two at once, one per BlankFiles, measured 5-10% slower single writes than none at all).
  // A failure stops the chain until the next take(); a chain that finished wakes the others.
  private refill(): void {
    if (this.creating || this.closed || this.spares.length >= this.opts.spare) return;
    if (creatingAny) {
      waiting.add(this);
      return;
    }
    creatingAny = this.creating = true;
    const path = this.dir + sep + ownedName();
    const create = (again: boolean): void =>
      fs.open(path, 'wx', this.opts.mode, (err, fd) => {
        if (err?.code === 'ENOENT' && again) {
          fs.mkdir(this.dir, { recursive: true }, (m) => (m ? this.done() : create(false)));
          return;
        }
        let usable = !err;
        if (!err) {
          const b = { fd, path };
          usable = !this.closed && this.sameDevice(fd);
          if (usable) this.spares.push(b);
          else discard(b);
        }
        // Not usable (the destination not there yet): the chain stops until the next take(),
        // as after a failure, not a loop of creations and removals in the pool.
        this.done(usable);
      });
    create(true);
  }

  /** The creation in flight is over: go on (`more`), else let another BlankFiles have a turn. */
  private done(more = false): void {
    this.creating = creatingAny = false;
    if (more) this.refill();
    if (creatingAny) return;
    for (const next of waiting) {
      waiting.delete(next);
      next.refill();
      if (creatingAny) return;
    }
  }

  private sameDevice(fd: number): boolean {
    if (this.checked || !this.opts.sameDeviceAs) return true;
    try {
      this.checked = fs.fstatSync(fd).dev === fs.statSync(this.opts.sameDeviceAs).dev;
      if (!this.checked) this.closed = true; // for good: renames across would fail (EXDEV)
      return this.checked;
    } catch {
      return false; // the destination is not there yet: ask again with the next blank
    }
  }
}

const swept = new Set<string>();

/**
 * Removes, once per process and directory, what dead processes on this host left in a blanks
 * directory: blanks, owner and hold files alike (none is a lock's proof, see the header).
 * Synchronous, on the first take(): a small directory, once.
 */
export function sweepBlanks(dir: string): void {
  if (swept.has(dir)) return;
  swept.add(dir);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const owner = parseOwnedName(name);
    if (!owner || !isDeadHere(owner)) continue;
    try {
      fs.unlinkSync(join(dir, name));
    } catch {
      /* gone already */
    }
  }
}

function discard(b: Blank): void {
  closeQuietly(b.fd);
  unlinkQuietly(b.path);
}
