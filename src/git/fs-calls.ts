import fs from 'node:fs';
import { join } from 'node:path';

// The small file-system calls the write path shares (refs, objects, packs, blanks), in one
// place. Each looks its `fs` function up at call time, never bound at import: the durability
// and fault tests watch or replace `fs.fdatasync`, `fs.unlinkSync` and the like.

/** fdatasync in libuv's pool: the data and what is needed to read it back, not timestamps. */
export function fdatasyncFd(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fs.fdatasync(fd, (e) => (e ? reject(e) : resolve())));
}

export function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    /* already closed */
  }
}

/** unlink without rmSync's stats first; gone already is fine, any other failure throws. */
export function unlinkIfThere(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
}

/** unlink where nothing can be done about a failure (cleaning up after another one). */
export function unlinkQuietly(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    /* gone already, or left for a sweep */
  }
}

/** unlink in libuv's pool, off the caller's path (an unlink that frees blocks can take ~1 ms). */
export function unlinkLater(path: string): void {
  fs.unlink(path, () => {
    /* gone already, or left for a sweep */
  });
}

/**
 * Waits for every call to end, then throws the first failure. Not Promise.all: on a first
 * failure the other calls are still in libuv's pool, and the caller's cleanup would close an
 * fd under a sync (a reused number: another file synced) or remove a file still being made
 * (left behind on a full disk).
 */
export async function settleAll(calls: ReadonlyArray<Promise<unknown> | undefined>): Promise<void> {
  for (const r of await Promise.allSettled(calls)) if (r.status === 'rejected') throw r.reason;
}

/**
 * Removes `dir` if it and every directory under it are empty (git's REMOVE_DIR_EMPTY_ONLY);
 * false, leaving whatever holds a file, when one does or `dir` is not a directory.
 */
export function removeEmptyDirs(dir: string): boolean {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return false;
  }
  let empty = true;
  for (const e of entries) {
    if (!e.isDirectory() || !removeEmptyDirs(join(dir, e.name))) empty = false;
  }
  if (!empty) return false;
  try {
    fs.rmdirSync(dir); // fails (ENOTEMPTY) if a ref was made in it meanwhile
    return true;
  } catch {
    return false;
  }
}
