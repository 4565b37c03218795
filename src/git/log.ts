import { z } from 'zod';
import { ZzError } from '../errors.js';
import { cursorCodec } from '../schema/cursor.js';
import { assertRevArg } from './native-git.js';
import {
  confinePath,
  gitFailure,
  intArg,
  resolveCommit,
  spawnGit,
  type HistoryRepo,
} from './history-common.js';

// Read paths over the user's history (git_log, git_diff, git_show_file). Native git does the
// walking and diffing, a persistent `git cat-file --batch` does object reads: isomorphic-git's
// log is 15–19x slower and repeats commits on merge DAGs (DESIGN §2, store rule 4).
//
// Measured on a 4,000-commit repo (bench/git-read.ts): one `git rev-list --reverse --format`
// walk that also yields every commit body costs about what one native `git log` does, while a
// bare rev-list followed by a body fetch per page of 500 costs ~2x (pipelined cat-file reads,
// 8 ms a page) to ~5x (a `--no-walk --stdin` spawn per page). So the first page walks once and
// caches the oid list of (tip, path) with the bodies that fit a budget; later pages are slices.

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
  /** 'oldest' first (the default, as the seed had it) or 'newest' first (`git log`'s order). */
  direction?: LogDirection;
  /**
   * Only commits whose committer date is at or after this: Unix seconds or an ISO 8601 date.
   * git's `--since`, which also stops the walk at the first older commit in date order.
   */
  since?: number | string;
}

export type LogDirection = 'oldest' | 'newest';

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
const LOG_LIMIT_DEFAULT = 100;
const LOG_LIMIT_MAX = 500;

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

/** What selects and orders a walk besides its tip. */
interface WalkSpec {
  path: string | undefined;
  order: LogOrder;
  direction: LogDirection;
  /** Unix seconds, or null. */
  since: number | null;
}

function walkKey(repo: HistoryRepo, tip: string, w: WalkSpec): string {
  return `${repo.gitdir}\0${tip}\0${w.order}\0${w.direction}\0${w.since ?? ''}\0${w.path ?? ''}`;
}

async function walk(repo: HistoryRepo, tip: string, spec: WalkSpec): Promise<Walk> {
  const { path, order } = spec;
  const key = walkKey(repo, tip, spec);
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
    // Newest first is git's own output order, reversed by --reverse for oldest first: the two
    // lists are exact mirrors, and each walk caches the bodies of the pages it serves first.
    const args = [
      'rev-list',
      ...(spec.direction === 'oldest' ? ['--reverse'] : []),
      ...ORDER_FLAGS[order],
      ...(spec.since === null ? [] : [`--max-age=${spec.since}`]),
      ...LOG_FLAGS,
      tip,
      '--',
    ];
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

const OID = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
const logCursor = cursorCodec(
  'git_log',
  z.strictObject({
    /** The tip the first page resolved: later pages ignore where the ref points now. */
    t: z.string().regex(OID),
    /** Index of the next commit in the list (oldest-first or newest-first, as `d` says). */
    i: z.number().int().min(1),
    /** The last oid returned, to re-find the position should the list ever differ. */
    o: z.string().regex(OID),
    p: z.string().nullable(),
    /** Order; absent for 'default'. */
    r: z.enum(['topo', 'date']).optional(),
    /** Direction; absent for 'oldest'. */
    d: z.literal('newest').optional(),
    /** since (Unix seconds); absent when not filtered. */
    s: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  }),
  { maxLength: 16_384 },
);
type Cursor = ReturnType<typeof logCursor.decode>;

/** `since` as Unix seconds: an integer, or an ISO 8601 date (a date alone is midnight UTC). */
function sinceArg(v: unknown): number | null {
  if (v === undefined || v === null || v === '') return null;
  const bad = () =>
    new ZzError('invalid_argument', 'since must be Unix seconds or an ISO 8601 date', {
      field: 'since',
    });
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v) || v < 0) throw bad();
    return v;
  }
  if (typeof v !== 'string' || v.length > 64) throw bad();
  if (/^\d+$/.test(v)) return sinceArg(Number(v));
  if (!/^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) throw bad();
  const ms = Date.parse(v);
  if (!Number.isFinite(ms) || ms < 0) throw bad();
  return Math.floor(ms / 1000);
}

/**
 * Every commit reachable from `ref`, oldest first, in exactly the order of
 * `git rev-list --reverse <ref>`: every commit once, merges included. That order is git's
 * commit-date walk reversed; it is topological as long as no commit is dated before one of its
 * parents, and `order: 'topo' | 'date'` guarantees it even then. `direction: 'newest'` lists
 * the same commits newest first, exactly as `git rev-list <ref>` (or `git log`) does.
 *
 * `since` keeps commits with a committer date at or after it, like `git rev-list --since`
 * (which, in the default order, stops at the first older commit it meets: a commit dated
 * earlier than its parents hides what lies behind it, exactly as in git).
 *
 * `path` filters like `git log --reverse -- <path>` / `git rev-list --reverse <ref> -- <path>`:
 * git's default history simplification, not --full-history. A commit is listed when its tree
 * differs at the path from its parent (a merge: from every parent); a merge whose path matches
 * one parent is not listed and only that parent is followed, so side branches whose changes to
 * the path were discarded do not appear. `parents` are always the commit's real parents.
 *
 * The cursor pins the tip oid the first page resolved, so paging stays consistent when the ref
 * moves; a cursor is only valid with the same `path`, `order`, `direction` and `since`.
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
  const direction = opts.direction ?? 'oldest';
  if (direction !== 'oldest' && direction !== 'newest') {
    throw new ZzError('invalid_argument', 'direction must be oldest or newest', {
      field: 'direction',
    });
  }
  const spec: WalkSpec = { path, order, direction, since: sinceArg(opts.since) };

  let tip: string;
  let start = 0;
  let cursor: Cursor | null = null;
  if (opts.cursor !== undefined && opts.cursor !== null && opts.cursor !== '') {
    cursor = logCursor.decode(opts.cursor);
    if (
      cursor.p !== (path ?? null) ||
      (cursor.r ?? 'default') !== order ||
      (cursor.d ?? 'oldest') !== direction ||
      (cursor.s ?? null) !== spec.since
    ) {
      throw new ZzError(
        'invalid_argument',
        'cursor was issued for a different path, order, direction or since',
        { field: 'cursor' },
      );
    }
    tip = cursor.t;
    start = cursor.i;
    // A forged cursor could name a blob or a tag; only a commit that is still there will do.
    // A cached walk of this tip was checked when it was made.
    if (!walks.has(walkKey(repo, tip, spec))) {
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

  const w = await walk(repo, tip, spec);
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
      ? logCursor.encode({
          t: tip,
          i: end,
          o: oidAt(w, end - 1),
          p: path ?? null,
          ...(order === 'default' ? {} : { r: order }),
          ...(direction === 'oldest' ? {} : { d: direction }),
          ...(spec.since === null ? {} : { s: spec.since }),
        })
      : null;
  return { commits, next_cursor: next };
}
