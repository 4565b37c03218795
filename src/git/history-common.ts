import { spawn } from 'node:child_process';
import { ZzError } from '../errors.js';
import type { CatFile } from './cat-file.js';
import { assertRevArg, gitEnv } from './native-git.js';
import { printable } from './ref-names.js';

// What the read paths over the user's history (log.ts, diff.ts, show-file.ts) share: the
// repository handle they take, argument validation, and a git runner that can stream or cut
// its output.

export interface HistoryRepo {
  /** The common git dir (`git rev-parse --git-common-dir`). */
  gitdir: string;
  workTree?: string;
  catFile: CatFile;
}

/**
 * A repository-relative path as the user's tree spells it. Refused: absolute, `..`, `.`, empty
 * components, `.git`, a leading `-`, NUL. One trailing `/` is dropped ("src/" names "src").
 * Other bytes (spaces, quotes, backslashes, newlines) are legal in git paths and are kept.
 */
export function confinePath(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new ZzError('invalid_argument', `${field} must be a string`);
  const bad = (why: string) =>
    new ZzError('invalid_argument', `${field} "${printable(value)}" is not allowed: ${why}`, {
      field,
    });
  if (value.includes('\0')) throw bad('contains NUL');
  if (value.length > 4096) throw bad('too long');
  if (value.startsWith('/') || /^[A-Za-z]:[\\/]/.test(value)) throw bad('absolute path');
  if (value.startsWith('-')) throw bad('starts with "-"');
  const p = value.endsWith('/') ? value.slice(0, -1) : value;
  if (p.length === 0) throw bad('empty');
  for (const c of p.split('/')) {
    if (c === '') throw bad('empty component');
    if (c === '.' || c === '..') throw bad('contains "." or ".." component');
    if (c.toLowerCase() === '.git') throw bad('contains ".git"');
  }
  return p;
}

export function intArg(
  value: unknown,
  field: string,
  min: number,
  max: number,
  dflt: number,
): number {
  if (value === undefined || value === null) return dflt;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ZzError('invalid_argument', `${field} must be an integer from ${min} to ${max}`, {
      field,
    });
  }
  return value;
}

export interface SpawnResult {
  stdout: Buffer;
  stderr: string;
  code: number;
  /** stdout passed `cap` and git was killed: the output is a prefix. */
  cut: boolean;
}

/**
 * Like runGit, but can stream stdout (`onData`, nothing kept; returning false stops git, and
 * the result is `cut`) or stop at `cap` bytes and keep the prefix, which a truncating reader
 * needs (runGit rejects past maxBuffer).
 */
export function spawnGit(
  gitdir: string,
  args: readonly string[],
  opts: {
    input?: string;
    cap?: number;
    onData?: (chunk: Buffer) => boolean | void;
    /** Kills git when it aborts (a client that left): the promise then rejects. */
    signal?: AbortSignal;
  } = {},
): Promise<SpawnResult> {
  return new Promise((resolve, reject) => {
    const signal = opts.signal;
    if (signal?.aborted) {
      reject(cancelled());
      return;
    }
    const child = spawn('git', args as string[], {
      cwd: gitdir,
      // Literal pathspecs: a user path like "*.ts" or ":(exclude)x" names that exact file.
      env: gitEnv({ GIT_DIR: gitdir, GIT_LITERAL_PATHSPECS: '1', GIT_OPTIONAL_LOCKS: '0' }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let len = 0;
    let cut = false;
    let err = '';
    child.stdout.on('data', (b: Buffer) => {
      if (cut) return;
      if (opts.onData) {
        if (opts.onData(b) === false) {
          cut = true;
          child.kill('SIGKILL');
        }
        return;
      }
      if (opts.cap !== undefined && len + b.length > opts.cap) {
        out.push(b.subarray(0, opts.cap - len));
        len = opts.cap;
        cut = true;
        child.kill('SIGKILL');
        return;
      }
      out.push(b);
      len += b.length;
    });
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 64 * 1024) err += b.toString('utf8');
    });
    const abort = () => child.kill('SIGKILL');
    signal?.addEventListener('abort', abort, { once: true });
    child.on('error', (e) => {
      signal?.removeEventListener('abort', abort);
      reject(new ZzError('git_failed', `could not run git: ${e.message}`, undefined, { cause: e }));
    });
    child.on('close', (code) => {
      signal?.removeEventListener('abort', abort);
      if (signal?.aborted) reject(cancelled());
      else resolve({ stdout: Buffer.concat(out, len), stderr: err, code: code ?? 128, cut });
    });
    // EPIPE when git exits early (bad revision) surfaces through its exit code instead.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

/** What a git run stopped by its caller's signal (a request aborted, the daemon closing) is. */
export function cancelled(): ZzError {
  return new ZzError('unavailable', 'the request was cancelled before git finished');
}

export function gitFailure(what: string, r: SpawnResult): ZzError {
  const msg = r.stderr.trim().split('\n').slice(-3).join(' ') || `exit ${r.code}`;
  return new ZzError('git_failed', `git ${what} failed: ${msg}`, {
    code: r.code,
    stderr: r.stderr,
  });
}

function parseParents(commitBody: Buffer): string[] {
  const parents: string[] = [];
  const end = commitBody.indexOf('\n\n');
  const head = commitBody.toString('latin1', 0, end < 0 ? commitBody.length : end);
  for (const line of head.split('\n')) {
    if (line.startsWith('parent ')) parents.push(line.slice(7));
    else if (parents.length > 0) break;
  }
  return parents;
}

export async function resolveCommit(
  repo: HistoryRepo,
  rev: string,
  field: string,
): Promise<{ oid: string; parents: string[] }> {
  if (typeof rev !== 'string') throw new ZzError('invalid_argument', `${field} must be a string`);
  assertRevArg(rev, field);
  const o = await repo.catFile.read(`${rev}^{commit}`);
  if (!o) {
    throw new ZzError('not_found', `${field} "${printable(rev)}" does not name a commit`, {
      [field]: rev,
    });
  }
  return { oid: o.oid, parents: parseParents(o.data) };
}
