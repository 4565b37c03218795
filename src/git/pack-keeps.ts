import fs, {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processStartTime } from '../local/file-lock.js';
import { blanksDir, LINK_UNSUPPORTED, ownedName, sweepBlanks } from './blank-files.js';
import { closeQuietly, unlinkIfThere } from './fs-calls.js';

// The .keep files of packs written for a ref update (small-packs.ts, "In-flight packs"): made
// before the pack's .pack appears, removed by the caller once the ref that names its objects
// has moved. One instance per repository and process (SmallPacks holds it), with the owner
// file every .keep links to and the once-per-process sweep of dead processes' .keep files.

export class PackKeeps {
  /** Stale .keep files of dead zz processes removed (once per process and repository). */
  private swept = false;
  private closed = false;
  /** The file every .keep of ours links to (hold); undefined: not made yet. */
  private owner: string | null | undefined;

  constructor(private readonly gitdir: string) {}

  /**
   * Creates a pack's .keep naming this process (no fsync: after a power cut no write is in
   * flight, and a lost one costs nothing). Answers its path, or null when it already exists
   * (the same objects written twice at once: the other write's .keep holds it).
   *
   * Each .keep is a hard link to one owner file per process (in zz/blanks/, holding
   * KEEP_OWNER), not a file of its own: a link costs ~10 µs where a creation cost
   * 40–140 µs, and removing it frees no data block. Freeing one is what made the .keep's
   * removal slow (0.3–1.3 ms on an ext4 mounted with `discard` and no journal, where each
   * free is a synchronous discard), on the event loop, once a write. The owner file of a dead
   * process is swept with its blanks (blank-files.ts); its .keep files by sweepStaleKeeps.
   */
  hold(path: string): string | null {
    this.sweepOnce();
    for (let attempt = 0; ; attempt++) {
      // Closed (a write still in flight): no owner file made again, that nothing would remove.
      const owner = this.closed ? null : this.ownerFile();
      if (owner === null) return createKeep(path);
      try {
        fs.linkSync(owner, path);
        return path;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? '';
        if (code === 'EEXIST') return null;
        if (LINK_UNSUPPORTED.has(code)) {
          rmSync(owner, { force: true }); // not left behind: close() forgets it
          this.owner = null;
        }
        // The owner file was removed (a person clearing .git/zz/): made again, once. Still
        // there, it is objects/pack/ that is gone (write() makes it again).
        else if (code !== 'ENOENT' || attempt > 0 || existsSync(owner)) throw e;
        else this.owner = undefined;
      }
    }
  }

  /** The owner file .keep files link to (made once); null where links are not supported. */
  private ownerFile(): string | null {
    if (this.owner !== undefined) return this.owner;
    const dir = blanksDir(this.gitdir);
    sweepBlanks(dir); // before anything of ours is there (a dead process's owner file goes)
    const path = join(dir, `${ownedName()}.owner`);
    mkdirSync(dir, { recursive: true });
    const fd = openSync(path, 'wx', 0o444);
    try {
      fs.writeSync(fd, KEEP_OWNER);
    } catch (e) {
      closeQuietly(fd);
      rmSync(path, { force: true });
      throw e;
    }
    closeSync(fd);
    this.owner = path;
    return path;
  }

  private sweepOnce(): void {
    if (this.swept) return;
    this.swept = true;
    sweepStaleKeeps(join(this.gitdir, 'objects', 'pack'));
  }

  /** Removes the owner file; .keep files still held keep their inode, only that name goes. */
  close(): void {
    this.closed = true;
    if (this.owner) unlinkIfThere(this.owner);
    this.owner = undefined;
  }
}

/** What our .keep files say: whose write holds them (git's own say "receive-pack …"). */
const KEEP_OWNER = `zz ${hostname()} ${process.pid} ${processStartTime(process.pid) ?? '-'}\n`;

/** A .keep of its own (where hard links are not supported): see PackKeeps.hold. */
function createKeep(path: string): string | null {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o444);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return null;
    throw e;
  }
  try {
    fs.writeSync(fd, KEEP_OWNER);
  } finally {
    closeQuietly(fd);
  }
  return path;
}

/**
 * Removes the .keep files a zz process on this host left when it died inside a write's window
 * (its pid is gone or now another process's): their packs become git's to repack again.
 */
function sweepStaleKeeps(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.keep'));
  } catch {
    return;
  }
  for (const name of names) {
    try {
      const m = /^zz (\S+) (\d+) (\S+)\n$/.exec(readFileSync(join(dir, name), 'utf8'));
      if (!m || m[1] !== hostname()) continue;
      const pid = Number(m[2]);
      if (pid === process.pid) continue;
      const start = processStartTime(pid);
      if (start === null || (m[3] !== '-' && start !== m[3]))
        rmSync(join(dir, name), { force: true });
    } catch {
      /* unreadable or gone: leave it */
    }
  }
}
