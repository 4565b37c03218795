import { isUtf8 } from 'node:buffer';
import { ZzError } from '../errors.js';
import { cancelled, gitFailure, spawnGit } from './history-common.js';

// A byte range of a blob too large to hold whole (git_show_file pages of a multi-GB file): git
// streams the blob through a one-off `git cat-file blob`, only the range is kept, and git is
// stopped once nothing more is needed. A one-off process, not the shared `--batch` one: a read
// cut short there would still have to drain the rest of the blob through the pipe (seconds for
// a few GB) while every other reader of the repository waited behind it.
//
// Whether the file is text is a property of the whole file (valid UTF-8, no NUL in its first
// 8,000 bytes), so the first read of a blob runs to its end, validating as it goes with
// nothing kept; the answer is remembered per blob id, and later pages stop at their range.

/** Where git_show_file sniffs for a NUL (as git's own binary check). */
export const BINARY_SNIFF = 8000;

export interface BlobWindow {
  size: number;
  /** Offset of bytes[0] in the blob. */
  base: number;
  bytes: Buffer;
  binary: boolean;
}

/**
 * One-off readers running at once in this process (the daemon), and calls waiting for one.
 * Each is a git process streaming up to a whole multi-GB blob (a text check reads to the end)
 * plus the page it keeps: unbounded, a handful of callers asking for big files could hold the
 * two cores and a page each per request. Past the queue a caller is told to come back (429).
 */
export const BLOB_READERS_MAX = 4;
export const BLOB_READERS_QUEUE_MAX = 16;
let readers = 0;
const queue = new Set<() => void>();

/** A reader slot, waiting in line for one; rejects if `signal` aborts while waiting. */
function acquire(signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(cancelled());
  if (readers < BLOB_READERS_MAX) {
    readers++;
    return Promise.resolve();
  }
  if (queue.size >= BLOB_READERS_QUEUE_MAX) {
    return Promise.reject(
      new ZzError(
        'too_many_requests',
        `${BLOB_READERS_MAX} large files are being read and ${queue.size} more wait: try again shortly`,
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      queue.delete(go);
      reject(cancelled());
    };
    // Handed the slot of a reader that finished (readers is not decremented in between).
    const go = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    queue.add(go);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function release(): void {
  const next = queue.values().next();
  if (next.done) readers--;
  else {
    queue.delete(next.value);
    next.value();
  }
}

/** Blob id → binary, for blobs read through blobWindow: a later page need not read to the end. */
const binaryOf = new Map<string, boolean>();
const BINARY_MEMO_MAX = 256;

function remember(oid: string, binary: boolean): void {
  binaryOf.delete(oid);
  binaryOf.set(oid, binary);
  if (binaryOf.size > BINARY_MEMO_MAX) binaryOf.delete(binaryOf.keys().next().value!);
}

/** How many bytes a UTF-8 sequence with this first byte has (1 for anything not a lead). */
const seqLength = (c: number): number => (c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1);

/** UTF-8 validity of a byte stream pushed in pieces; a character may span two pieces. */
export class Utf8Stream {
  private carry = Buffer.alloc(0);
  private valid = true;

  push(b: Buffer): void {
    if (!this.valid) return;
    let at = 0;
    if (this.carry.length > 0) {
      const need = seqLength(this.carry[0]!) - this.carry.length;
      if (b.length < need) {
        this.carry = Buffer.concat([this.carry, b]);
        return;
      }
      this.valid = isUtf8(Buffer.concat([this.carry, b.subarray(0, need)]));
      this.carry = Buffer.alloc(0);
      at = need;
    }
    const rest = b.subarray(at);
    // Held back: a lead byte among the last three whose sequence runs past the piece.
    let cut = rest.length;
    for (let i = rest.length - 1; i >= Math.max(0, rest.length - 3); i--) {
      const c = rest[i]!;
      if ((c & 0xc0) === 0x80) continue;
      if (i + seqLength(c) > rest.length) cut = i;
      break;
    }
    if (this.valid && !isUtf8(rest.subarray(0, cut))) this.valid = false;
    if (this.valid) this.carry = Buffer.from(rest.subarray(cut));
  }

  /** Whether everything pushed was valid UTF-8, ending on a whole character. */
  end(): boolean {
    return this.valid && this.carry.length === 0;
  }

  /** Whether it is already known to be invalid. */
  get invalid(): boolean {
    return !this.valid;
  }
}

/**
 * Bytes [lo, hi) of blob `oid` (`size` bytes, from cat-file's info) and whether the blob is
 * binary, holding no more than hi - lo bytes of it. Waits for one of BLOB_READERS_MAX slots;
 * `signal` (the request's) ends the wait or kills git.
 */
export async function blobWindow(
  gitdir: string,
  oid: string,
  size: number,
  lo: number,
  hi: number,
  signal?: AbortSignal,
): Promise<BlobWindow> {
  await acquire(signal);
  try {
    return await readWindow(gitdir, oid, size, lo, hi, signal);
  } finally {
    release();
  }
}

async function readWindow(
  gitdir: string,
  oid: string,
  size: number,
  lo: number,
  hi: number,
  signal: AbortSignal | undefined,
): Promise<BlobWindow> {
  const bytes = Buffer.alloc(Math.max(0, hi - lo));
  let binary = binaryOf.get(oid);
  const utf8 = new Utf8Stream();
  let pos = 0;
  const r = await spawnGit(gitdir, ['cat-file', 'blob', oid], {
    signal,
    onData(b) {
      const from = Math.max(pos, lo);
      const to = Math.min(pos + b.length, hi);
      if (from < to) b.copy(bytes, from - lo, from - pos, to - pos);
      if (binary === undefined) {
        if (pos < BINARY_SNIFF && b.subarray(0, BINARY_SNIFF - pos).includes(0)) binary = true;
        else {
          utf8.push(b);
          if (utf8.invalid) binary = true;
        }
      }
      pos += b.length;
      // Stop once the range is in hand and the kind is known (git is killed).
      return !(pos >= hi && binary !== undefined);
    },
  });
  if (!r.cut) {
    if (r.code !== 0) throw gitFailure('cat-file', r);
    if (pos !== size) {
      throw new ZzError('git_failed', `git cat-file gave ${pos} bytes of ${oid}, not ${size}`);
    }
    binary ??= !utf8.end();
  }
  remember(oid, binary!);
  return { size, base: lo, bytes, binary: binary! };
}
