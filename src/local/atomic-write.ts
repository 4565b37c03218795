import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { fromSystemError } from '../errors.js';

// The one way zz replaces a local file: write a sibling temporary file, fsync it, rename it over
// the target. A reader sees the old file or the new one, never half of either; a crash leaves at
// worst a stray `*.tmp`. Disk faults come back as named ZzErrors (507/503 with the path). A file
// made once and never replaced (a signing key) is linked into place instead: createFileExclusive.
// After the rename or link the directory is fsynced too: on ext4/xfs a file's own fsync does not
// make its new directory entry durable, so without it a power loss could bring back the old file
// (or no key at all) after zz had reported success.

export interface AtomicWriteOptions {
  /** File mode of the new file (default 0600: these files hold secrets or pids). */
  mode?: number;
  /** Create the parent directory (mode 0700) when missing. */
  mkdir?: boolean;
}

/** Makes a directory's entries durable; a filesystem that cannot fsync a directory is skipped. */
async function syncDir(dir: string): Promise<void> {
  let fh: fsp.FileHandle | undefined;
  try {
    fh = await fsp.open(dir, 'r');
    await fh.sync();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EINVAL' && code !== 'EISDIR' && code !== 'EPERM' && code !== 'ENOTSUP') throw e;
  } finally {
    await fh?.close();
  }
}

/** Writes and fsyncs `data` to a new sibling temporary file; answers its name. */
async function writeTemp(
  file: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions,
): Promise<string> {
  if (opts.mkdir) await fsp.mkdir(dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const fh = await fsp.open(tmp, 'wx', opts.mode ?? 0o600);
  let written = false;
  try {
    await fh.writeFile(data);
    await fh.sync();
    written = true;
  } finally {
    await fh.close();
    if (!written) await fsp.rm(tmp, { force: true }).catch(() => {});
  }
  return tmp;
}

export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions = {},
): Promise<void> {
  try {
    const tmp = await writeTemp(file, data, opts);
    await fsp.rename(tmp, file).catch(async (e: unknown) => {
      await fsp.rm(tmp, { force: true }).catch(() => {});
      throw e;
    });
    await syncDir(dirname(file));
  } catch (e) {
    throw fromSystemError(e, file);
  }
}

/** `value` as pretty JSON with a final newline, written atomically. */
export function writeJsonAtomic(
  file: string,
  value: unknown,
  opts: AtomicWriteOptions = {},
): Promise<void> {
  return writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n', opts);
}

/**
 * Creates `file` with `data` unless it exists: written and fsynced under a temporary name,
 * then hard-linked into place (link never replaces), so a reader never sees a partial file
 * and of racing creators the first wins. Answers whether this call created it.
 */
export async function createFileExclusive(
  file: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions = {},
): Promise<boolean> {
  let tmp: string;
  try {
    tmp = await writeTemp(file, data, opts);
  } catch (e) {
    throw fromSystemError(e, file);
  }
  try {
    await fsp.link(tmp, file);
    await syncDir(dirname(file));
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw fromSystemError(e, file);
  } finally {
    await fsp.rm(tmp, { force: true }).catch(() => {});
  }
}
