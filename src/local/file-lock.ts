import { promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { fromSystemError, ZzError } from '../errors.js';

// The one lock for local files shared by several zz processes (tokens.json, credentials.json):
// an O_EXCL `<file>.lock` holding the owner's pid. A lock whose owner is dead, or that has not
// been touched for `staleMs`, is taken over. Hold it only around a read-modify-write; it is not
// a lock for refs (git/ref-store.ts has git's own).

export interface FileLockOptions {
  /** How long to wait for a held lock before giving up (default 5 s). */
  timeoutMs?: number;
  /** A lock older than this is presumed abandoned (default 10 s). */
  staleMs?: number;
  /** Create the file's directory (mode 0700) when missing. */
  mkdir?: boolean;
}

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
  const deadline = Date.now() + (opts.timeoutMs ?? 5_000);
  const staleMs = opts.staleMs ?? 10_000;
  for (let attempt = 0; ; attempt++) {
    try {
      const fh = await fsp.open(lockFile, 'wx', 0o600);
      try {
        await fh.writeFile(String(process.pid));
      } finally {
        await fh.close();
      }
      return () => fsp.rm(lockFile, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw fromSystemError(e, lockFile);
    }
    if (await isStale(lockFile, staleMs)) {
      await fsp.rm(lockFile, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new ZzError(
        'ref_locked',
        `${lockFile} is held by another process; remove it if no zz process is running`,
        { path: lockFile },
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(50, 2 + attempt * 3) * (0.5 + Math.random())));
  }
}

async function isStale(lockFile: string, staleMs: number): Promise<boolean> {
  try {
    const [st, text] = await Promise.all([fsp.stat(lockFile), fsp.readFile(lockFile, 'utf8')]);
    const pid = Number(text);
    if (Number.isInteger(pid) && pid > 0 && !isAlive(pid)) return true;
    return Date.now() - st.mtimeMs > staleMs;
  } catch {
    return false;
  }
}
