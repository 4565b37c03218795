import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { dirname } from 'node:path';
import { fromSystemError } from '../errors.js';

// The one way zz replaces a local file: write a sibling temporary file, fsync it, rename it over
// the target. A reader sees the old file or the new one, never half of either; a crash leaves at
// worst a stray `*.tmp`. Disk faults come back as named ZzErrors (507/503 with the path).

export interface AtomicWriteOptions {
  /** File mode of the new file (default 0600: these files hold secrets or pids). */
  mode?: number;
  /** Create the parent directory (mode 0700) when missing. */
  mkdir?: boolean;
}

export async function writeFileAtomic(
  file: string,
  data: string | Uint8Array,
  opts: AtomicWriteOptions = {},
): Promise<void> {
  const mode = opts.mode ?? 0o600;
  try {
    if (opts.mkdir) await fsp.mkdir(dirname(file), { recursive: true, mode: 0o700 });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const fh = await fsp.open(tmp, 'wx', mode);
    try {
      try {
        await fh.writeFile(data);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, file);
    } catch (e) {
      await fsp.rm(tmp, { force: true }).catch(() => {});
      throw e;
    }
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
