import { spawn } from 'node:child_process';
import { isUtf8 } from 'node:buffer';
import { ZzError } from '../errors.js';
import type { CatFile, GitObject } from './cat-file.js';
import { assertRevArg, gitEnv } from './native-git.js';

// Read paths over the user's history (git_log, git_diff, git_show_file). Native git does the
// walking and diffing, a persistent `git cat-file --batch` does object reads: isomorphic-git's
// log is 15–19x slower and repeats commits on merge DAGs (DESIGN §2, store rule 4).
//
// Measured on a 4,000-commit repo (bench/git-read.ts): one `git rev-list --reverse --format`
// walk that also yields every commit body costs about what one native `git log` does, while a
// bare rev-list followed by a body fetch per page of 500 costs ~2x (pipelined cat-file reads,
// 8 ms a page) to ~5x (a `--no-walk --stdin` spawn per page). So the first page walks once and
// caches the oid list of (tip, path) with the bodies that fit a budget; later pages are slices.

export interface HistoryRepo {
  /** The common git dir (`git rev-parse --git-common-dir`). */
  gitdir: string;
  workTree?: string;
  catFile: CatFile;
}

export interface LogSignature {
  name: string;
  email: string;
  /** Unix seconds. */
  time: number;
  /** As git records it, e.g. "+0200". */
  timezone: string;
}

export interface LogCommit {
  oid: string;
  parents: string[];
  author: LogSignature;
  committer: LogSignature;
  message: string;
}

export interface GitLogOptions {
  ref: string;
  path?: string;
  limit?: number;
  cursor?: string;
  /**
   * 'default' is git's own order (`git rev-list --reverse`), which a clock-skewed commit can
   * make list a parent after its child; 'topo' (`--topo-order`) and 'date' (`--date-order`)
   * never do.
   */
  order?: LogOrder;
}

export type LogOrder = 'default' | 'topo' | 'date';
const ORDER_FLAGS: Record<LogOrder, string[]> = {
  default: [],
  topo: ['--topo-order'],
  date: ['--date-order'],
};

export interface GitLogResult {
  commits: LogCommit[];
  next_cursor: string | null;
}

export type DiffStatus = 'added' | 'modified' | 'deleted' | 'renamed' | 'copied' | 'type_changed';

export interface DiffHunk {
  old_start: number;
  old_lines: number;
  new_start: number;
  new_lines: number;
  /** Lines with their ' ', '+', '-' kept; "\ No newline at end of file" markers are kept too. */
  lines: string[];
}

export interface DiffFile {
  path: string;
  old_path: string | null;
  status: DiffStatus;
  binary: boolean;
  /** Git modes ("100644", "100755", "120000", "160000"); null on the side where it is absent. */
  old_mode: string | null;
  new_mode: string | null;
  hunks: DiffHunk[];
  /** True when this file's hunks were cut by max_bytes. */
  truncated: boolean;
}

export interface GitDiffOptions {
  commit: string;
  base?: string;
  paths?: string[];
  context_lines?: number;
  max_bytes?: number;
}

export interface GitDiffResult {
  commit: string;
  /** The commit diffed against; null for a root commit (diffed against the empty tree). */
  base: string | null;
  files: DiffFile[];
  truncated: boolean;
}

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

const LOG_LIMIT_DEFAULT = 100;
const LOG_LIMIT_MAX = 500;
const DIFF_CONTEXT_DEFAULT = 3;
const DIFF_CONTEXT_MAX = 100;
const DIFF_MAX_BYTES_DEFAULT = 1024 * 1024;
const DIFF_MAX_BYTES_MAX = 64 * 1024 * 1024;
const DIFF_MAX_PATHS = 1000;
const SHOW_LIMIT_DEFAULT = 1024 * 1024;
const SHOW_LIMIT_MAX = 16 * 1024 * 1024;
const BINARY_SNIFF = 8000;
const EMPTY_TREE_SHA1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const EMPTY_TREE_SHA256 = '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321';

// ---------------------------------------------------------------------------------------------
// Validation

function printable(s: string): string {
  return s
    .slice(0, 120)
    .replace(/[\0-\x1f\x7f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * A repository-relative path as the user's tree spells it. Refused: absolute, `..`, `.`, empty
 * components, `.git`, a leading `-`, NUL. One trailing `/` is dropped ("src/" names "src").
 * Other bytes (spaces, quotes, backslashes, newlines) are legal in git paths and are kept.
 */
function confinePath(value: unknown, field: string): string {
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

function intArg(value: unknown, field: string, min: number, max: number, dflt: number): number {
  if (value === undefined || value === null) return dflt;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ZzError('invalid_argument', `${field} must be an integer from ${min} to ${max}`, {
      field,
    });
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Native git plumbing

interface SpawnResult {
  stdout: Buffer;
  stderr: string;
  code: number;
  /** stdout passed `cap` and git was killed: the output is a prefix. */
  cut: boolean;
}

/**
 * Like runGit, but can stream stdout (`onData`, nothing kept) or stop at `cap` bytes and keep
 * the prefix, which a truncating reader needs (runGit rejects past maxBuffer).
 */
function spawnGit(
  gitdir: string,
  args: readonly string[],
  opts: { input?: string; cap?: number; onData?: (chunk: Buffer) => void } = {},
): Promise<SpawnResult> {
  return new Promise((resolve, reject) => {
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
        opts.onData(b);
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
    child.on('error', (e) =>
      reject(new ZzError('git_failed', `could not run git: ${e.message}`, undefined, { cause: e })),
    );
    child.on('close', (code) => {
      resolve({ stdout: Buffer.concat(out, len), stderr: err, code: code ?? 128, cut });
    });
    // EPIPE when git exits early (bad revision) surfaces through its exit code instead.
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.input ?? '');
  });
}

function gitFailure(what: string, r: SpawnResult): ZzError {
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

async function resolveCommit(
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

// ---------------------------------------------------------------------------------------------
// git_log

// Fields of one record, NUL-separated; rev-list ends each record with "\n", which therefore
// prefixes the next record's %H. %B stops at a NUL in the message, exactly as `git log` does.
const LOG_FORMAT = '--format=%H%x00%P%x00%an%x00%ae%x00%ad%x00%cn%x00%ce%x00%cd%x00%B%x00';
const LOG_FIELDS = 9;
const LOG_FLAGS = ['--no-commit-header', '--date=raw', '--encoding=UTF-8', LOG_FORMAT];

const limits = {
  /** Bodies kept per walk; past this only oids are cached and later pages fetch their bodies. */
  walkBodyBytes: 16 * 1024 * 1024,
  maxBytes: 96 * 1024 * 1024,
  maxWalks: 32,
};

interface Walk {
  /** 20 (or 32) bytes per commit, oldest first. */
  oids: Buffer;
  oidLen: number;
  count: number;
  /** Bodies of the first `bodies.length` commits. */
  bodies: LogCommit[];
  bytes: number;
}

// Keyed by gitdir, tip and path: the ancestry of a commit never changes, so an entry is valid
// until evicted (grafts and replace refs aside). Map order is the LRU order.
const walks = new Map<string, Walk>();
const walksInFlight = new Map<string, Promise<Walk>>();
let walksBytes = 0;

/** Drops cached walks (tests and benchmarks measuring cold paths). */
export function clearHistoryCache(): void {
  walks.clear();
  walksBytes = 0;
}

/** Tunes the walk cache (tests force the path where bodies are fetched per page). */
export function configureHistoryCache(l: Partial<typeof limits>): typeof limits {
  const old = { ...limits };
  Object.assign(limits, l);
  clearHistoryCache();
  return old;
}

function remember(key: string, w: Walk): void {
  const old = walks.get(key);
  if (old) {
    walks.delete(key);
    walksBytes -= old.bytes;
  }
  walks.set(key, w);
  walksBytes += w.bytes;
  for (const [k, v] of walks) {
    if (walks.size <= 1 || (walks.size <= limits.maxWalks && walksBytes <= limits.maxBytes)) break;
    walks.delete(k);
    walksBytes -= v.bytes;
  }
}

function parseSignature(name: string, email: string, date: string): LogSignature {
  const sp = date.indexOf(' ');
  const time = Number(sp < 0 ? date : date.slice(0, sp));
  return {
    name,
    email,
    time: Number.isFinite(time) ? time : 0,
    timezone: sp < 0 ? '+0000' : date.slice(sp + 1),
  };
}

/**
 * Incremental parser of LOG_FORMAT output. `want(i)` says whether record i's body is needed;
 * for the others only the oid is kept.
 */
class LogParser {
  private pending: Buffer = Buffer.alloc(0);
  private field = 0;
  private readonly cur: string[] = new Array<string>(LOG_FIELDS);
  count = 0;

  constructor(
    private readonly onRecord: (oidHex: string, body: LogCommit | null) => void,
    private readonly want: (index: number) => boolean,
  ) {}

  push(chunk: Buffer): void {
    const buf = this.pending.length ? Buffer.concat([this.pending, chunk]) : chunk;
    // One decode and one split per chunk (not per field) is most of the parser's speed. A NUL
    // is never inside a multi-byte UTF-8 sequence, so cutting at the last one is safe.
    const last = buf.lastIndexOf(0);
    if (last < 0) {
      this.pending = Buffer.from(buf);
      return;
    }
    const toks = buf.toString('utf8', 0, last).split('\0');
    this.pending = Buffer.from(buf.subarray(last + 1));
    for (const t of toks) {
      this.cur[this.field++] = t;
      if (this.field === LOG_FIELDS) {
        this.field = 0;
        this.finish();
      }
    }
  }

  private finish(): void {
    const t = this.cur;
    // The record separator "\n" lands in front of %H.
    const oid = t[0]!.trim();
    let body: LogCommit | null = null;
    if (this.want(this.count)) {
      const parents = t[1]!;
      body = {
        oid,
        parents: parents.length ? parents.split(' ') : [],
        author: parseSignature(t[2]!, t[3]!, t[4]!),
        committer: parseSignature(t[5]!, t[6]!, t[7]!),
        message: t[8]!,
      };
    }
    this.count++;
    this.onRecord(oid, body);
  }

  end(): void {
    if (this.field !== 0 || this.pending.toString('latin1').trim().length > 0) {
      throw new ZzError('git_failed', 'git rev-list output ended inside a record');
    }
  }
}

/**
 * Hands output to the parser in large batches. `--reverse` makes git print everything at the
 * end of its walk; parsing each 64 KiB chunk as it arrives makes git wait on a full pipe
 * whenever we are descheduled, which on a busy machine cost up to 2x (measured). Batches keep
 * the memory of a huge history bounded.
 */
class Batcher {
  private parts: Buffer[] = [];
  private len = 0;

  constructor(private readonly parser: LogParser) {}

  push(b: Buffer): void {
    this.parts.push(b);
    this.len += b.length;
    if (this.len >= 8 * 1024 * 1024) this.flush();
  }

  flush(): void {
    if (this.len === 0) return;
    const all = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.len);
    this.parts = [];
    this.len = 0;
    this.parser.push(all);
  }
}

function bodyCost(c: LogCommit): number {
  return (
    200 +
    2 * (c.message.length + c.author.name.length + c.author.email.length) +
    2 * (c.committer.name.length + c.committer.email.length) +
    48 * c.parents.length
  );
}

function walkKey(
  repo: HistoryRepo,
  tip: string,
  path: string | undefined,
  order: LogOrder,
): string {
  return `${repo.gitdir}\0${tip}\0${order}\0${path ?? ''}`;
}

async function walk(
  repo: HistoryRepo,
  tip: string,
  path: string | undefined,
  order: LogOrder,
): Promise<Walk> {
  const key = walkKey(repo, tip, path, order);
  const hit = walks.get(key);
  if (hit) {
    walks.delete(key);
    walks.set(key, hit);
    return hit;
  }
  const running = walksInFlight.get(key);
  if (running) return running;
  const p = (async () => {
    const oidLen = tip.length / 2;
    let oids = Buffer.allocUnsafe(oidLen * 1024);
    const bodies: LogCommit[] = [];
    const bodyBytes = limits.walkBodyBytes;
    let budget = bodyBytes;
    const parser = new LogParser(
      (oid, body) => {
        const at = (parser.count - 1) * oidLen;
        if (at + oidLen > oids.length) {
          const bigger = Buffer.allocUnsafe(oids.length * 2);
          oids.copy(bigger);
          oids = bigger;
        }
        oids.write(oid, at, 'hex');
        if (body) {
          bodies.push(body);
          budget -= bodyCost(body);
        }
      },
      (i) => budget > 0 && i === bodies.length,
    );
    // "--" even without a path: the tip is never mistaken for a file name.
    const args = ['rev-list', '--reverse', ...ORDER_FLAGS[order], ...LOG_FLAGS, tip, '--'];
    if (path !== undefined) args.push(path);
    const batch = new Batcher(parser);
    const r = await spawnGit(repo.gitdir, args, { onData: (b) => batch.push(b) });
    batch.flush();
    if (r.code !== 0) {
      if (/bad object|unknown revision|bad revision|not a valid object/i.test(r.stderr)) {
        throw new ZzError('not_found', `commit ${tip} no longer exists`, { commit: tip });
      }
      throw gitFailure('rev-list', r);
    }
    parser.end();
    const count = parser.count;
    const w: Walk = {
      oids: Buffer.from(oids.subarray(0, count * oidLen)),
      oidLen,
      count,
      bodies,
      bytes: count * oidLen + (bodyBytes - Math.min(budget, bodyBytes)) + 256,
    };
    remember(key, w);
    return w;
  })();
  walksInFlight.set(key, p);
  try {
    return await p;
  } finally {
    walksInFlight.delete(key);
  }
}

function oidAt(w: Walk, i: number): string {
  return w.oids.toString('hex', i * w.oidLen, (i + 1) * w.oidLen);
}

async function fetchBodies(repo: HistoryRepo, oids: string[]): Promise<LogCommit[]> {
  const got = new Map<string, LogCommit>();
  const parser = new LogParser(
    (oid, body) => {
      if (body) got.set(oid, body);
    },
    () => true,
  );
  const batch = new Batcher(parser);
  const r = await spawnGit(
    repo.gitdir,
    ['rev-list', '--no-walk=unsorted', '--stdin', ...LOG_FLAGS],
    { input: oids.join('\n') + '\n', onData: (b) => batch.push(b) },
  );
  batch.flush();
  if (r.code !== 0) throw gitFailure('rev-list', r);
  parser.end();
  return oids.map((o) => {
    const c = got.get(o);
    if (!c) throw new ZzError('git_failed', `git rev-list did not return commit ${o}`);
    return c;
  });
}

interface Cursor {
  v: 1;
  /** The tip the first page resolved: later pages ignore where the ref points now. */
  t: string;
  /** Index of the next commit in the oldest-first list. */
  i: number;
  /** The last oid returned, to re-find the position should the list ever differ. */
  o: string;
  p: string | null;
  /** Order; absent for 'default'. */
  r?: LogOrder;
}

function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify(c), 'utf8').toString('base64url');
}

function decodeCursor(s: unknown): Cursor {
  const bad = () => new ZzError('invalid_argument', 'cursor is not valid', { field: 'cursor' });
  if (typeof s !== 'string' || s.length > 16384 || !/^[A-Za-z0-9_-]+$/.test(s)) throw bad();
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
  } catch {
    throw bad();
  }
  const o = c as Partial<Cursor> | null;
  if (
    !o ||
    typeof o !== 'object' ||
    o.v !== 1 ||
    typeof o.t !== 'string' ||
    !/^([0-9a-f]{40}|[0-9a-f]{64})$/.test(o.t) ||
    typeof o.i !== 'number' ||
    !Number.isInteger(o.i) ||
    o.i < 1 ||
    typeof o.o !== 'string' ||
    !/^[0-9a-f]{40,64}$/.test(o.o) ||
    !(o.p === null || typeof o.p === 'string') ||
    !(o.r === undefined || (typeof o.r === 'string' && Object.hasOwn(ORDER_FLAGS, o.r)))
  ) {
    throw bad();
  }
  return o as Cursor;
}

/**
 * Every commit reachable from `ref`, oldest first, in exactly the order of
 * `git rev-list --reverse <ref>`: every commit once, merges included. That order is git's
 * commit-date walk reversed; it is topological as long as no commit is dated before one of its
 * parents, and `order: 'topo' | 'date'` guarantees it even then.
 *
 * `path` filters like `git log --reverse -- <path>` / `git rev-list --reverse <ref> -- <path>`:
 * git's default history simplification, not --full-history. A commit is listed when its tree
 * differs at the path from its parent (a merge: from every parent); a merge whose path matches
 * one parent is not listed and only that parent is followed, so side branches whose changes to
 * the path were discarded do not appear. `parents` are always the commit's real parents.
 *
 * The cursor pins the tip oid the first page resolved, so paging stays consistent when the ref
 * moves; a cursor is only valid with the same `path`.
 */
export async function gitLog(repo: HistoryRepo, opts: GitLogOptions): Promise<GitLogResult> {
  if (typeof opts.ref !== 'string') {
    throw new ZzError('invalid_argument', 'ref must be a string', { field: 'ref' });
  }
  assertRevArg(opts.ref, 'ref');
  const path =
    opts.path === undefined || opts.path === '' ? undefined : confinePath(opts.path, 'path');
  const limit = intArg(opts.limit, 'limit', 1, LOG_LIMIT_MAX, LOG_LIMIT_DEFAULT);
  const order = opts.order ?? 'default';
  if (typeof order !== 'string' || !Object.hasOwn(ORDER_FLAGS, order)) {
    throw new ZzError('invalid_argument', 'order must be one of default, topo, date', {
      field: 'order',
    });
  }

  let tip: string;
  let start = 0;
  let cursor: Cursor | null = null;
  if (opts.cursor !== undefined && opts.cursor !== null && opts.cursor !== '') {
    cursor = decodeCursor(opts.cursor);
    if (cursor.p !== (path ?? null) || (cursor.r ?? 'default') !== order) {
      throw new ZzError('invalid_argument', 'cursor was issued for a different path or order', {
        field: 'cursor',
      });
    }
    tip = cursor.t;
    start = cursor.i;
    // A forged cursor could name a blob or a tag; only a commit that is still there will do.
    // A cached walk of this tip was checked when it was made.
    if (!walks.has(walkKey(repo, tip, path, order))) {
      const o = await repo.catFile.read(`${tip}^{commit}`);
      if (!o || o.oid !== tip) {
        throw new ZzError('not_found', `the cursor's commit ${tip} does not exist`, {
          commit: tip,
        });
      }
    }
  } else {
    tip = (await resolveCommit(repo, opts.ref, 'ref')).oid;
  }

  const w = await walk(repo, tip, path, order);
  if (cursor) {
    if (start > w.count || oidAt(w, start - 1) !== cursor.o) {
      let found = -1;
      for (let i = 0; i < w.count; i++) {
        if (oidAt(w, i) === cursor.o) {
          found = i;
          break;
        }
      }
      if (found < 0) {
        throw new ZzError('invalid_argument', 'cursor no longer matches the history', {
          field: 'cursor',
        });
      }
      start = found + 1;
    }
  }
  const end = Math.min(w.count, start + limit);
  let commits: LogCommit[];
  if (end <= w.bodies.length) {
    commits = w.bodies.slice(start, end);
  } else {
    const cached = w.bodies.slice(start, end);
    const missing: string[] = [];
    for (let i = start + cached.length; i < end; i++) missing.push(oidAt(w, i));
    commits = cached.concat(missing.length ? await fetchBodies(repo, missing) : []);
  }
  const next =
    end < w.count
      ? encodeCursor({
          v: 1,
          t: tip,
          i: end,
          o: oidAt(w, end - 1),
          p: path ?? null,
          ...(order === 'default' ? {} : { r: order }),
        })
      : null;
  return { commits, next_cursor: next };
}

// ---------------------------------------------------------------------------------------------
// git_diff

interface RawRecord {
  status: string;
  oldMode: string;
  newMode: string;
  oldOid: string;
  newOid: string;
  path: string;
  oldPath: string | null;
}

interface PatchSection {
  binary: boolean;
  indexOld: string | null;
  indexNew: string | null;
  hunks: Array<DiffHunk & { bytes: number }>;
  /** The output was cut inside this section. */
  partial: boolean;
}

const STATUS: Record<string, DiffStatus> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  T: 'type_changed',
};

/** The `--raw -z` records before the patch: unquoted paths, exact statuses. */
function parseRaw(buf: Buffer): { records: RawRecord[]; patchStart: number; complete: boolean } {
  const records: RawRecord[] = [];
  let p = 0;
  const readZ = (): string | null => {
    const e = buf.indexOf(0, p);
    if (e < 0) return null;
    const s = buf.toString('utf8', p, e);
    p = e + 1;
    return s;
  };
  while (p < buf.length && buf[p] === 0x3a) {
    const start = p;
    const head = readZ();
    const a = head?.slice(1).split(' ');
    if (!a || a.length < 5) return { records, patchStart: start, complete: false };
    const status = a[4]!.charAt(0);
    const first = readZ();
    const second = first !== null && (status === 'R' || status === 'C') ? readZ() : undefined;
    if (first === null || second === null) return { records, patchStart: start, complete: false };
    records.push({
      status,
      oldMode: a[0]!,
      newMode: a[1]!,
      oldOid: a[2]!,
      newOid: a[3]!,
      path: second ?? first,
      oldPath: second !== undefined ? first : null,
    });
  }
  // A NUL separates the raw part from the patch.
  if (p < buf.length && buf[p] === 0) p++;
  return { records, patchStart: p, complete: true };
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function parsePatch(buf: Buffer, from: number): PatchSection[] {
  const sections: PatchSection[] = [];
  let pos = from;
  // Lines are handed out as byte ranges and decoded only when kept.
  const nextLine = (): [number, number] | null => {
    if (pos >= buf.length) return null;
    const nl = buf.indexOf(10, pos);
    const s = pos;
    const e = nl < 0 ? buf.length : nl;
    pos = nl < 0 ? buf.length : nl + 1;
    return [s, e];
  };
  const startsWith = (r: [number, number], prefix: string) =>
    r[1] - r[0] >= prefix.length && buf.toString('latin1', r[0], r[0] + prefix.length) === prefix;
  let sec: PatchSection | null = null;
  for (let line = nextLine(); line; line = nextLine()) {
    if (startsWith(line, 'diff --git ')) {
      sec = { binary: false, indexOld: null, indexNew: null, hunks: [], partial: false };
      sections.push(sec);
      continue;
    }
    if (!sec) continue;
    if (startsWith(line, 'index ')) {
      const m = /^index ([0-9a-f]+)\.\.([0-9a-f]+)/.exec(buf.toString('latin1', line[0], line[1]));
      if (m) {
        sec.indexOld = m[1]!;
        sec.indexNew = m[2]!;
      }
    } else if (startsWith(line, 'Binary files ') || startsWith(line, 'GIT binary patch')) {
      sec.binary = true;
    } else if (startsWith(line, '@@ ')) {
      const m = HUNK_HEADER.exec(buf.toString('latin1', line[0], line[1]));
      if (!m) throw new ZzError('git_failed', 'unexpected hunk header in git diff-tree output');
      const hunk = {
        old_start: Number(m[1]),
        old_lines: m[2] === undefined ? 1 : Number(m[2]),
        new_start: Number(m[3]),
        new_lines: m[4] === undefined ? 1 : Number(m[4]),
        lines: [] as string[],
        bytes: 32,
      };
      let oldLeft = hunk.old_lines;
      let newLeft = hunk.new_lines;
      let complete = true;
      while (oldLeft > 0 || newLeft > 0) {
        const l = nextLine();
        if (!l) {
          complete = false;
          break;
        }
        // An empty context line is printed as "" under diff.suppressBlankEmpty.
        const c = l[1] > l[0] ? buf[l[0]] : 0x20;
        if (c === 0x20) {
          oldLeft--;
          newLeft--;
        } else if (c === 0x2d) oldLeft--;
        else if (c === 0x2b) newLeft--;
        else if (c !== 0x5c) {
          throw new ZzError('git_failed', 'unexpected line in a hunk of git diff-tree output');
        }
        hunk.lines.push(l[1] > l[0] ? buf.toString('utf8', l[0], l[1]) : ' ');
        hunk.bytes += l[1] - l[0] + 1;
      }
      // "\ No newline at end of file" follows the last line it applies to, possibly the final one.
      if (complete && pos < buf.length && buf[pos] === 0x5c) {
        const l = nextLine()!;
        hunk.lines.push(buf.toString('utf8', l[0], l[1]));
        hunk.bytes += l[1] - l[0] + 1;
      }
      if (!complete) {
        sec.partial = true;
        break;
      }
      sec.hunks.push(hunk);
    }
  }
  return sections;
}

function emptyTreeFor(oid: string): string {
  return oid.length === 64 ? EMPTY_TREE_SHA256 : EMPTY_TREE_SHA1;
}

/**
 * The files `commit` changed against its first parent (a root commit against the empty tree)
 * or against `base`, with hunks. Renames are detected (-M, git's default 50% similarity).
 * `max_bytes` bounds the payload (paths and hunk lines); past it no further hunks or files are
 * added and `truncated` is set (and the cut file's own `truncated`).
 */
export async function gitDiff(repo: HistoryRepo, opts: GitDiffOptions): Promise<GitDiffResult> {
  const context = intArg(
    opts.context_lines,
    'context_lines',
    0,
    DIFF_CONTEXT_MAX,
    DIFF_CONTEXT_DEFAULT,
  );
  const maxBytes = intArg(
    opts.max_bytes,
    'max_bytes',
    1,
    DIFF_MAX_BYTES_MAX,
    DIFF_MAX_BYTES_DEFAULT,
  );
  let paths: string[] = [];
  if (opts.paths !== undefined && opts.paths !== null) {
    if (!Array.isArray(opts.paths) || opts.paths.length > DIFF_MAX_PATHS) {
      throw new ZzError('invalid_argument', `paths must be an array of at most ${DIFF_MAX_PATHS}`, {
        field: 'paths',
      });
    }
    paths = opts.paths.map((p, i) => confinePath(p, `paths[${i}]`));
  }
  const commit = await resolveCommit(repo, opts.commit, 'commit');
  let base: string | null;
  if (opts.base !== undefined && opts.base !== null) {
    base = (await resolveCommit(repo, opts.base, 'base')).oid;
  } else {
    base = commit.parents[0] ?? null;
  }

  const args = [
    'diff-tree',
    '-r',
    '--raw',
    '-p',
    '-z',
    '-M',
    '--no-color',
    '--full-index',
    '--no-ext-diff',
    '--no-textconv',
    `-U${context}`,
    base ?? emptyTreeFor(commit.oid),
    commit.oid,
  ];
  if (paths.length) args.push('--', ...paths);
  // Headers and context make the output larger than the payload; past this much the payload
  // surely exceeds max_bytes, so git is stopped rather than read to the end.
  const cap = 2 * maxBytes + 8 * 1024 * 1024;
  const r = await spawnGit(repo.gitdir, args, { cap });
  if (!r.cut && r.code !== 0) throw gitFailure('diff-tree', r);

  const raw = parseRaw(r.stdout);
  const sections = parsePatch(r.stdout, raw.patchStart);
  const files: DiffFile[] = [];
  let truncated = r.cut || !raw.complete;
  let used = 0;
  let s = 0;
  for (const rec of raw.records) {
    // A type change (file <-> symlink) is printed as a deletion followed by a creation.
    const secs = sections.slice(s, s + (rec.status === 'T' ? 2 : 1));
    s += secs.length;
    if (secs.length < (rec.status === 'T' ? 2 : 1)) {
      truncated = true;
      break;
    }
    const first = secs[0]!;
    if (
      rec.status !== 'T' &&
      first.indexOld !== null &&
      (first.indexOld !== rec.oldOid || first.indexNew !== rec.newOid)
    ) {
      throw new ZzError(
        'git_failed',
        `git diff-tree output for "${printable(rec.path)}" is out of order`,
      );
    }
    const cost =
      64 + Buffer.byteLength(rec.path) + (rec.oldPath ? Buffer.byteLength(rec.oldPath) : 0);
    if (used + cost > maxBytes) {
      truncated = true;
      break;
    }
    used += cost;
    const file: DiffFile = {
      path: rec.path,
      old_path: rec.oldPath,
      status: STATUS[rec.status] ?? 'modified',
      binary: secs.some((x) => x.binary),
      old_mode: /^0+$/.test(rec.oldMode) ? null : rec.oldMode,
      new_mode: /^0+$/.test(rec.newMode) ? null : rec.newMode,
      hunks: [],
      truncated: false,
    };
    files.push(file);
    let stop = false;
    for (const sec of secs) {
      for (const h of sec.hunks) {
        if (used + h.bytes > maxBytes) {
          stop = true;
          break;
        }
        used += h.bytes;
        file.hunks.push({
          old_start: h.old_start,
          old_lines: h.old_lines,
          new_start: h.new_start,
          new_lines: h.new_lines,
          lines: h.lines,
        });
      }
      if (stop) break;
      if (sec.partial) stop = true;
    }
    if (stop) {
      file.truncated = true;
      truncated = true;
      break;
    }
  }
  return { commit: commit.oid, base, files, truncated };
}

// ---------------------------------------------------------------------------------------------
// git_show_file

/**
 * `<commit>:<path>` through cat-file is one line of its stdin, so a path with a line break is
 * looked up by walking the trees instead.
 */
async function readPathByTrees(
  repo: HistoryRepo,
  commit: string,
  path: string,
): Promise<GitObject | null> {
  const c = await repo.catFile.read(commit);
  if (!c || c.type !== 'commit') return null;
  const m = /^tree ([0-9a-f]+)/.exec(c.data.toString('latin1', 0, 80));
  if (!m) return null;
  let oid = m[1]!;
  const want = path.split('/');
  for (const name of want) {
    const t = await repo.catFile.read(oid);
    if (!t || t.type !== 'tree') return null;
    const data = t.data;
    const hashLen = oid.length / 2;
    const nameBuf = Buffer.from(name, 'utf8');
    let found: string | null = null;
    for (let p = 0; p < data.length;) {
      const sp = data.indexOf(0x20, p);
      const nul = data.indexOf(0, sp);
      if (sp < 0 || nul < 0) return null;
      if (data.subarray(sp + 1, nul).equals(nameBuf)) {
        found = data.toString('hex', nul + 1, nul + 1 + hashLen);
        break;
      }
      p = nul + 1 + hashLen;
    }
    if (found === null) return null;
    oid = found;
  }
  return repo.catFile.read(oid);
}

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
  const obj = /[\n\r]/.test(path)
    ? await readPathByTrees(repo, commit.oid, path)
    : await repo.catFile.read(`${commit.oid}:${path}`);
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
