import fs from 'node:fs';
import { OID_RE } from './ref-names.js';

// Reading one loose ref's file, as git reads it, for RefStore (ref-store.ts): its reads and
// listings open every loose ref, so each system call saved counts.

/**
 * Whether a loose ref's file is there, without the exception a missing one costs readFileSync
 * (RefStore.packedOnly). A directory on the way that is a file (ENOTDIR) is no file either, as
 * readRef treats it; any other failure (EACCES, EIO) is thrown, as reading it would.
 */
export function looseExists(path: string): boolean {
  try {
    return fs.statSync(path, { throwIfNoEntry: false }) !== undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOTDIR') return false;
    throw e;
  }
}

/** Bytes read of a loose ref at once (an object id and its newline are 41). */
const LOOSE_READ = 128;
const looseBuf = Buffer.alloc(LOOSE_READ);

/**
 * A loose ref's file as text, or null when there is none: ENOENT, ENOTDIR (a file on the way)
 * and EISDIR (a directory of refs in its place: open succeeds, the read fails) are no loose
 * ref, as git reads them; any other failure (EACCES, EIO) is thrown. One open and one read
 * into a shared buffer, then close: readFileSync's fstat-less read to EOF made a second read
 * (open, read, read, close), and each system call costs ~5-10 µs on the 2-vCPU VMs (an open
 * more): a loose ref read cost 36-40 µs that way against 25-30 µs this way. A file past the
 * buffer is read whole.
 */
export function readLoose(path: string): string | null {
  let fd: number;
  try {
    fd = fs.openSync(path, 'r');
  } catch (e) {
    if (noLooseFile(e)) return null;
    throw e;
  }
  try {
    const n = fs.readSync(fd, looseBuf, 0, LOOSE_READ, 0);
    return n < LOOSE_READ ? looseBuf.toString('utf8', 0, n) : fs.readFileSync(fd, 'utf8');
  } catch (e) {
    if (noLooseFile(e)) return null;
    throw e;
  } finally {
    fs.closeSync(fd);
  }
}

function noLooseFile(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR';
}

/**
 * The object id a loose ref's file holds (content trimmed, as git writes `<oid>\n`), or null:
 * not an id, or gone (raced with a delete or pack-refs' prune: a packed value stands). A
 * listing opens every loose ref: readLoose's one read into a shared buffer.
 */
export function looseOid(path: string): string | null {
  let text: string | null;
  try {
    text = readLoose(path);
  } catch {
    return null;
  }
  const v = text?.trim();
  return v !== undefined && OID_RE.test(v) ? v : null;
}
