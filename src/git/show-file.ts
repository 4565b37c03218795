import { isUtf8 } from 'node:buffer';
import { ZzError } from '../errors.js';
import { confinePath, intArg, resolveCommit, type HistoryRepo } from './history-common.js';
import { printable } from './ref-names.js';

// git_show_file: a file's content at a commit, paged by bytes.

export interface GitShowFileOptions {
  commit: string;
  path: string;
  offset?: number;
  limit?: number;
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
const BINARY_SNIFF = 8000;

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
  // Resolved by cat-file walking the trees (any path byte but NUL is fine, newlines included).
  const obj = await repo.catFile.read(`${commit.oid}:${path}`);
  if (!obj) {
    throw new ZzError(
      'not_found',
      `path "${printable(path)}" does not exist at commit ${commit.oid}`,
      {
        path,
        commit: commit.oid,
      },
    );
  }
  if (obj.type !== 'blob') {
    throw new ZzError(
      'invalid_argument',
      `path "${printable(path)}" is a ${obj.type === 'tree' ? 'directory' : obj.type} at commit ${commit.oid}, not a file`,
      { field: 'path', path, commit: commit.oid },
    );
  }
  const data = obj.data;
  const size = data.length;
  if (offset > size) {
    throw new ZzError(
      'invalid_argument',
      `offset ${offset} is past the end of the file (${size} bytes)`,
      {
        field: 'offset',
      },
    );
  }
  const binary = data.subarray(0, BINARY_SNIFF).includes(0) || !isUtf8(data);
  let start = offset;
  let end = Math.min(size, offset + limit);
  if (!binary) {
    const cont = (i: number) => i < size && (data[i]! & 0xc0) === 0x80;
    while (start > 0 && cont(start)) start--;
    end = Math.min(size, start + limit);
    while (end > start && cont(end)) end--;
    // A limit smaller than the character at `start`: return that one character whole.
    if (end === start && start < size) {
      end = start + 1;
      while (cont(end)) end++;
    }
  }
  const slice = data.subarray(start, end);
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
