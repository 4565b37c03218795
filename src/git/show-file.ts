import { isUtf8 } from 'node:buffer';
import { ZzError } from '../errors.js';
import { BINARY_SNIFF, blobWindow, type BlobWindow } from './blob-window.js';
import { confinePath, intArg, resolveCommit, type HistoryRepo } from './history-common.js';
import { printable } from './ref-names.js';

// git_show_file: a file's content at a commit, paged by bytes.

export interface GitShowFileOptions {
  commit: string;
  path: string;
  offset?: number;
  limit?: number;
  /** The request's: a client that leaves stops the one-off git reading a large blob. */
  signal?: AbortSignal;
}

export interface GitShowFileResult {
  commit: string;
  path: string;
  content: string;
  encoding: 'utf8' | 'base64';
  /** Size of the whole file in bytes. */
  size: number;
  /** Where this page starts; earlier than the requested offset if that was inside a character. */
  offset: number;
  next_offset: number | null;
}

const SHOW_LIMIT_DEFAULT = 1024 * 1024;
const SHOW_LIMIT_MAX = 16 * 1024 * 1024;
/**
 * Blobs up to this size are read whole through the shared cat-file process (one round trip);
 * larger ones are streamed and only the page is kept (blob-window.ts): reading one byte of a
 * 100 MB file used to hold all 100 MB, and a multi-GB one could exhaust the daemon's memory.
 */
const WHOLE_BLOB_MAX = 4 * 1024 * 1024;
/** Bytes around a page a text page may need: its start moves back, its end looks one past. */
const CHAR_SLACK = 4;

/**
 * A file's content at a commit. Pages are byte ranges [offset, offset + limit); text pages
 * never split a UTF-8 character (the end moves back to a character boundary, and an offset
 * inside a character moves back to its start). Content with a NUL in its first 8,000 bytes or
 * that is not valid UTF-8 is returned as base64 with exact byte offsets.
 */
export async function gitShowFile(
  repo: HistoryRepo,
  opts: GitShowFileOptions,
): Promise<GitShowFileResult> {
  const path = confinePath(opts.path, 'path');
  const offset = intArg(opts.offset, 'offset', 0, Number.MAX_SAFE_INTEGER, 0);
  const limit = intArg(opts.limit, 'limit', 1, SHOW_LIMIT_MAX, SHOW_LIMIT_DEFAULT);
  const commit = await resolveCommit(repo, opts.commit, 'commit');
  // Resolved by cat-file walking the trees (any path byte but NUL is fine, newlines included);
  // the blob's size is asked before any of it is read.
  const oid = await repo.catFile.pathOid(commit.oid, path);
  const info = oid === null ? null : await repo.catFile.info(oid);
  if (!info) {
    throw new ZzError(
      'not_found',
      `path "${printable(path)}" does not exist at commit ${commit.oid}`,
      {
        path,
        commit: commit.oid,
      },
    );
  }
  if (info.type !== 'blob') {
    throw new ZzError(
      'invalid_argument',
      `path "${printable(path)}" is a ${info.type === 'tree' ? 'directory' : info.type} at commit ${commit.oid}, not a file`,
      { field: 'path', path, commit: commit.oid },
    );
  }
  const size = info.size;
  if (offset > size) {
    throw new ZzError(
      'invalid_argument',
      `offset ${offset} is past the end of the file (${size} bytes)`,
      {
        field: 'offset',
      },
    );
  }
  const win: BlobWindow =
    size <= WHOLE_BLOB_MAX
      ? await wholeBlob(repo, info.oid)
      : await blobWindow(
          repo.gitdir,
          info.oid,
          size,
          Math.max(0, offset - CHAR_SLACK),
          Math.min(size, offset + limit + CHAR_SLACK),
          opts.signal,
        );
  const { binary, base, bytes } = win;
  let start = offset;
  let end = Math.min(size, offset + limit);
  if (!binary) {
    // Within the window: a valid UTF-8 character is at most 4 bytes.
    const cont = (i: number) => i < size && i >= base && (bytes[i - base]! & 0xc0) === 0x80;
    while (start > base && cont(start)) start--;
    end = Math.min(size, start + limit);
    while (end > start && cont(end)) end--;
    // A limit smaller than the character at `start`: return that one character whole.
    if (end === start && start < size) {
      end = start + 1;
      while (cont(end)) end++;
    }
  }
  const slice = bytes.subarray(start - base, end - base);
  return {
    commit: commit.oid,
    path,
    content: binary ? slice.toString('base64') : slice.toString('utf8'),
    encoding: binary ? 'base64' : 'utf8',
    size,
    offset: start,
    next_offset: end < size ? end : null,
  };
}

/** A blob small enough to hold whole, read through the shared cat-file process. */
async function wholeBlob(repo: HistoryRepo, oid: string): Promise<BlobWindow> {
  const obj = await repo.catFile.readOid(oid);
  if (!obj) throw new ZzError('git_failed', `blob ${oid} vanished while it was read`);
  const data = obj.data;
  const binary = data.subarray(0, BINARY_SNIFF).includes(0) || !isUtf8(data);
  return { size: data.length, base: 0, bytes: data, binary };
}
