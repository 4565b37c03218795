import { promises as fsp, readFileSync, type Stats } from 'node:fs';
import { dirname } from 'node:path';
import { fromSystemError, ZzError } from '../errors.js';

// The one lock for local files shared by several zz processes (tokens.json, credentials.json):
// an O_EXCL `<file>.lock` holding the owner's pid and, on Linux, that process's start time. A
// lock whose owner is dead is taken over; so is one older than `staleMs` whose owner cannot be
// told apart from a later process given its pid (no start time: not Linux). A holder known to
// be alive (same pid, same start time) keeps its lock however long it takes: aging it out
// let a second process in beside it, and one of their read-modify-writes was lost (tokens.json
// lost 2 of 40 tokens created at once by processes on a loaded machine, holds past 4 s). A
// holder that hangs makes waiters fail after their timeout with an error naming the lock.
// Hold it only around a read-modify-write; it is not a lock for refs (git/ref-store.ts).
//
// Hazard: a pid alone does not name a process. With pid_max at 32,768 (containers, CI) and a
// test suite spawning thousands of git processes, a dead holder's pid is reused within seconds;
// the start time tells the new process from the holder. `staleMs` stays below the default
// timeout so an abandoned lock is taken over before a waiter gives up even where no start
// time can be read. A takeover removes the lock only under `<file>.lock.takeover`, judged
// stale again there: two waiters that judged one dead holder's lock stale at once must not
// have the slower remove the faster one's new lock (takeOver).

export interface FileLockOptions {
  /** How long to wait for a held lock before giving up (default 10 s). */
  timeoutMs?: number;
  /** A lock older than this is presumed abandoned (default 4 s). */
  staleMs?: number;
  /** Create the file's directory (mode 0700) when missing. */
  mkdir?: boolean;
}

/**
 * A process's start time (clock ticks since boot) and whether it is a zombie (dead, not yet
 * reaped by its parent), from /proc/<pid>/stat (Linux); null where unreadable.
 */
export function processState(pid: number): { start: string; zombie: boolean } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Field 2 (comm) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const start = fields[19]; // field 22 of the whole line
  return start === undefined ? null : { start, zombie: fields[0] === 'Z' };
}

/** The start time of a process in clock ticks since boot (Linux), or null where unknown. */
export function processStartTime(pid: number): string | null {
  return processState(pid)?.start ?? null;
}

let bootId: string | null | undefined;

/**
 * A name for a live process that no later process can share: this boot's id and the process's
 * start time (Linux: /proc/sys/kernel/random/boot_id, /proc/<pid>/stat), or null where either
 * is unreadable (not Linux) or the process is a zombie. A pid alone is reused; a start time
 * alone repeats across reboots (a boot runs the same services at the same ticks).
 */
export function processStamp(pid: number): string | null {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      bootId = null;
    }
  }
  const state = bootId === null ? null : processState(pid);
  return state && !state.zombie ? `${bootId}/${state.start}` : null;
}

/**
 * Whether `pid` is still the process that recorded `stamp` (its processStamp): 'other' when it
 * is dead or a later process given that pid, 'unknown' when no stamp was recorded (an older
 * zz) or none can be read here (not Linux): the caller must then ask the process itself.
 */
export function sameProcess(
  pid: number,
  stamp: string | null | undefined,
): 'same' | 'other' | 'unknown' {
  if (!isAlive(pid)) return 'other';
  const now = processStamp(pid);
  if (now === null && processState(pid)?.zombie) return 'other';
  if (now === null || typeof stamp !== 'string') return 'unknown';
  return now === stamp ? 'same' : 'other';
}

const selfStamp = (): string => {
  const start = processStartTime(process.pid);
  return start ? `${process.pid} ${start}` : String(process.pid);
};

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs `fn` holding `<file>.lock`. */
export async function withFileLock<T>(
  file: string,
  fn: () => Promise<T>,
  opts: FileLockOptions = {},
): Promise<T> {
  if (opts.mkdir) {
    await fsp
      .mkdir(dirname(file), { recursive: true, mode: 0o700 })
      .catch((e: unknown) => Promise.reject(fromSystemError(e, dirname(file))));
  }
  const release = await acquire(`${file}.lock`, opts);
  try {
    return await fn();
  } finally {
    await release();
  }
}

async function acquire(lockFile: string, opts: FileLockOptions): Promise<() => Promise<void>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  const staleMs = opts.staleMs ?? 4_000;
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await fsp.open(lockFile, 'wx', 0o600);
      try {
        await fh.writeFile(selfStamp());
      } finally {
        await fh.close();
      }
      return () => fsp.rm(lockFile, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fromSystemError(e, lockFile);
    }
    if (await takeOver(lockFile, staleMs)) continue;
    if (Date.now() > deadline) {
      // Who holds it, so a person can look at that process (a zz stopped with Ctrl-Z, hung).
      const holder = await fsp
        .readFile(lockFile, 'utf8')
        .then((t) => Number(t.trim().split(' ')[0]))
        .catch(() => NaN);
      const who = Number.isInteger(holder) && holder > 0 ? `process ${holder}` : 'another process';
      throw new ZzError(
        'ref_locked',
        `${lockFile} is held by ${who}; remove it if no zz process is running`,
        { path: lockFile, ...(Number.isInteger(holder) && holder > 0 ? { pid: holder } : {}) },
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(50, 2 + attempt * 3) * (0.5 + Math.random())));
  }
}

/** The lock's stat when it is stale (see the header), else null. */
async function staleLock(lockFile: string, staleMs: number): Promise<Stats | null> {
  try {
    const [st, text] = await Promise.all([fsp.stat(lockFile), fsp.readFile(lockFile, 'utf8')]);
    const [pidText, start] = text.trim().split(' ');
    const pid = Number(pidText);
    if (Number.isInteger(pid) && pid > 0) {
      if (!isAlive(pid)) return st;
      // Alive, but is it the holder or a later process given the same pid?
      const now = start ? processStartTime(pid) : null;
      if (now) return now === start ? null : st;
    }
    return Date.now() - st.mtimeMs > staleMs ? st : null;
  } catch {
    return null;
  }
}

/**
 * Removes the lock when it is stale, holding `<lock>.takeover` (O_EXCL) meanwhile; true when
 * it was removed (the caller tries the lock again at once). A check of "still the same
 * file" and the removal are two calls: two waiters that judged one dead holder's lock stale
 * at once each checked it, the faster removed it and took its own, and the slower then
 * removed that one and got in beside it. Only a takeover's holder removes a lock it did not
 * take, so under it nothing replaces the lock between the judgement and the removal (a live
 * holder's own lock is never judged stale where start times are known). A takeover lock
 * left by a process that died in those few calls is removed past `staleMs` (hazard: by its
 * age alone, so a takeover stopped that long (SIGSTOP) may meet another's when it resumes).
 */
async function takeOver(lockFile: string, staleMs: number): Promise<boolean> {
  if (!(await staleLock(lockFile, staleMs))) return false;
  const mutex = `${lockFile}.takeover`;
  let fh;
  try {
    fh = await fsp.open(mutex, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fromSystemError(e, mutex);
    const st = await fsp.stat(mutex).catch(() => null);
    if (st && Date.now() - st.mtimeMs > staleMs) await fsp.rm(mutex, { force: true });
    return false;
  }
  try {
    await fh.close();
    // Judged again under the takeover: another waiter may have taken the lock over already.
    if (!(await staleLock(lockFile, staleMs))) return false;
    await fsp.rm(lockFile, { force: true });
    return true;
  } finally {
    await fsp.rm(mutex, { force: true });
  }
}
