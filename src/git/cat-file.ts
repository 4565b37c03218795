import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { ZzError } from '../errors.js';
import { gitEnv, runGit } from './native-git.js';
import { RefStore } from './ref-store.js';

// One long-lived `git cat-file --batch` per repository. Measured (README, "Reads"): ~0.1 ms per
// object, constant memory (git mmaps packs), and it understands everything the user's git does
// (packs, multi-pack-index, alternates, objects written a moment ago, repacks by `git gc`).
//
// The batch process is shared by every reader of the repository, so nothing one caller sends
// may disturb another's answer (hardening issue 11.1). git dies on some revisions it is asked
// to resolve (`HEAD@{9999}`, `@{u}` without an upstream, `HEAD:./x` outside a work tree), which
// used to fail every queued read and let a dead process's output be matched to the next waiter.
// So:
// - only full object ids ever reach the batch process. A revision expression is resolved by a
//   one-off `git rev-parse --verify` (a bad one is a null, i.e. 404, for that caller alone);
//   `<oid>:<path>` is resolved by walking trees and `<oid>^{commit|tree}` by peeling here, both
//   with oid reads only;
// - every reply is matched to its request: the header must name the oid asked for with a known
//   type, and the body must end in the LF git prints after it. Anything else is a desynchronised
//   stream: that process is killed and never read again;
// - each process has its own buffer and queue. When one dies (or is killed for a mismatch) the
//   requests it had not answered are sent once more to a fresh process, then fail; nothing from
//   an unmatched reply is ever handed to a caller, so nothing of it can be cached or committed.

export interface GitObject {
  oid: string;
  type: 'blob' | 'tree' | 'commit' | 'tag';
  data: Buffer;
}

/** An object's type and size, read without its content (`--batch-check`). */
export interface ObjectInfo {
  oid: string;
  type: GitObject['type'];
  size: number;
}

/** A reply: the object, or (from a `--batch-check` process) its header with empty data. */
type Reply = GitObject & { size: number };
const NO_DATA = Buffer.alloc(0);

const OID = /^[0-9a-f]{40}$/;
const TYPES = new Set(['blob', 'tree', 'commit', 'tag']);
const MAX_PEEL = 16;
const MAX_HEADER = 256;
const SIMPLE_REF = /^(?!.*(?:\.\.|\/\/|\.lock(?:\/|$)|\/$|@\{))[A-Za-z0-9_][A-Za-z0-9._/-]*$/;
/** HEAD, FETCH_HEAD, ORIG_HEAD, …: files in the git dir, some per worktree. */
const PSEUDO_REF = /^[A-Z_]+$/;

/** Resolves a full ref name without spawning git (RefStore.read); null lets git decide. */
export type RefResolver = (ref: string) => Promise<string | null>;

interface Request {
  oid: string;
  resolve: (o: Reply | null) => void;
  reject: (e: Error) => void;
  /** Processes this request was sent to. */
  tries: number;
}

/**
 * One `git cat-file --batch` process (or `--batch-check`: headers only, `check`): its own pipe,
 * buffer and queue, never shared with a successor.
 */
class BatchProcess {
  readonly proc: ChildProcessWithoutNullStreams;
  /** Sent and not yet answered, in the order git answers. */
  private readonly queue: Request[] = [];
  private header: Buffer = Buffer.alloc(0);
  /** The body being received for queue[0]: size + 1 bytes (git's trailing LF). */
  private body: { type: GitObject['type']; buf: Buffer; filled: number } | null = null;
  dead = false;

  constructor(
    gitdir: string,
    private readonly check: boolean,
    private readonly onDeath: (orphans: Request[]) => void,
  ) {
    const mode = check ? '--batch-check' : '--batch';
    const p = spawn('git', ['--git-dir', gitdir, 'cat-file', mode], {
      env: gitEnv(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc = p;
    p.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    p.stderr.resume();
    p.on('error', () => this.die());
    p.on('exit', () => this.die());
    p.stdin.on('error', () => this.die());
    this.setRef(false);
  }

  get pending(): number {
    return this.queue.length;
  }

  send(r: Request): void {
    this.sendMany([r]);
  }

  /** Many requests in one write: one pipe write (and wake-up of git) for a window of reads. */
  sendMany(rs: readonly Request[]): void {
    if (rs.length === 0) return;
    if (this.queue.length === 0) this.setRef(true);
    let line = '';
    for (const r of rs) {
      r.tries++;
      this.queue.push(r);
      line += r.oid + '\n';
    }
    this.proc.stdin.write(line);
  }

  /** Stops the process; whatever it still owed is handed to onDeath. */
  die(): void {
    if (this.dead) return;
    this.dead = true;
    this.proc.stdout.removeAllListeners('data');
    this.proc.kill('SIGKILL');
    const orphans = this.queue.splice(0);
    this.body = null;
    this.header = Buffer.alloc(0);
    this.onDeath(orphans);
  }

  close(): void {
    this.dead = true;
    this.proc.stdout.removeAllListeners('data');
    this.proc.stdin.end();
    this.proc.kill();
    for (const r of this.queue.splice(0)) {
      r.reject(new ZzError('unavailable', 'repository is closed'));
    }
  }

  // An idle reader must not keep a CLI process alive, but one with pending reads must:
  // an unref'd pipe with a waiter would let Node exit before the answer arrives.
  private setRef(on: boolean): void {
    const p = this.proc;
    // as unknown as: the pipes are net.Sockets (ref/unref) but typed as plain streams.
    for (const h of [p, p.stdout, p.stderr, p.stdin] as unknown as Array<{
      ref?: () => void;
      unref?: () => void;
    }>) {
      if (on) h.ref?.();
      else h.unref?.();
    }
  }

  private desync(): void {
    // The stream no longer lines up with the queue: no byte more of it is trusted.
    this.die();
  }

  private onData(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length && !this.dead) {
      const r = this.queue[0];
      if (!r) return this.desync(); // output nobody asked for
      if (this.body) {
        const b = this.body;
        const n = Math.min(b.buf.length - b.filled, chunk.length - at);
        chunk.copy(b.buf, b.filled, at, at + n);
        b.filled += n;
        at += n;
        if (b.filled < b.buf.length) return;
        this.body = null;
        if (b.buf[b.buf.length - 1] !== 10) return this.desync();
        const data = b.buf.subarray(0, b.buf.length - 1);
        this.answer({ oid: r.oid, type: b.type, data, size: data.length });
        continue;
      }
      const nl = chunk.indexOf(10, at);
      const end = nl < 0 ? chunk.length : nl;
      this.header =
        this.header.length === 0
          ? Buffer.from(chunk.subarray(at, end))
          : Buffer.concat([this.header, chunk.subarray(at, end)]);
      at = end + 1;
      if (this.header.length > MAX_HEADER) return this.desync();
      if (nl < 0) return;
      const line = this.header.toString('latin1');
      this.header = Buffer.alloc(0);
      if (line === `${r.oid} missing`) {
        this.answer(null);
        continue;
      }
      const m = /^([0-9a-f]{40}) ([a-z]+) (\d+)$/.exec(line);
      if (!m || m[1] !== r.oid || !TYPES.has(m[2]!)) return this.desync();
      const size = Number(m[3]);
      if (!Number.isSafeInteger(size)) return this.desync();
      if (this.check) {
        this.answer({ oid: r.oid, type: m[2] as GitObject['type'], data: NO_DATA, size });
        continue;
      }
      this.body = {
        type: m[2] as GitObject['type'],
        buf: Buffer.allocUnsafe(size + 1),
        filled: 0,
      };
    }
  }

  private answer(o: Reply | null): void {
    const r = this.queue.shift()!;
    if (this.queue.length === 0) this.setRef(false);
    r.resolve(o);
  }
}

export class CatFile {
  private current: BatchProcess | null = null;
  /** `--batch-check`, started on the first info(): sizes before deciding how to read a blob. */
  private checker: BatchProcess | null = null;
  private closed = false;
  /** Processes started (tests watch a reader being replaced). */
  spawned = 0;

  private readonly refs: RefResolver;

  /** `refs` reads a ref without git (default: a RefStore of `gitdir`, used read-only). */
  constructor(
    private readonly gitdir: string,
    refs?: RefResolver,
  ) {
    if (refs) this.refs = refs;
    else {
      const store = new RefStore(gitdir);
      this.refs = (ref) => store.read(ref);
    }
  }

  private process(check = false): BatchProcess {
    const running = check ? this.checker : this.current;
    if (running && !running.dead) return running;
    this.spawned++;
    const p = new BatchProcess(this.gitdir, check, (orphans) => {
      if (check && this.checker === p) this.checker = null;
      if (!check && this.current === p) this.current = null;
      for (const r of orphans) {
        if (this.closed) r.reject(new ZzError('unavailable', 'repository is closed'));
        else if (r.tries >= 2) {
          r.reject(new ZzError('git_failed', `git cat-file stopped while reading ${r.oid}`));
        } else this.process(check).send(r);
      }
    });
    if (check) this.checker = p;
    else this.current = p;
    return p;
  }

  /** The running batch process's pid (tests kill it to prove a dying reader is replaced). */
  get pid(): number | undefined {
    return this.current && !this.current.dead ? this.current.proc.pid : undefined;
  }

  /** Reads one object by its full id; the reply is checked to be that object. */
  readOid(oid: string): Promise<GitObject | null> {
    if (this.closed) return Promise.reject(new ZzError('unavailable', 'repository is closed'));
    if (!OID.test(oid)) {
      return Promise.reject(new ZzError('invalid_argument', 'invalid object id'));
    }
    return new Promise((resolve, reject) => {
      this.process().send({ oid, resolve, reject, tries: 0 });
    });
  }

  /**
   * An object's type and size by full id, without reading it: a caller that must not hold a
   * huge blob whole (git_show_file) asks first. Null when the object is missing.
   */
  info(oid: string): Promise<ObjectInfo | null> {
    if (this.closed) return Promise.reject(new ZzError('unavailable', 'repository is closed'));
    if (!OID.test(oid)) {
      return Promise.reject(new ZzError('invalid_argument', 'invalid object id'));
    }
    return new Promise((resolve, reject) => {
      const answer = (o: Reply | null) => resolve(o && { oid: o.oid, type: o.type, size: o.size });
      this.process(true).send({ oid, resolve: answer, reject, tries: 0 });
    });
  }

  /**
   * Reads many objects by full id, sent to git in one write (a Ladder build reads thousands of
   * blobs: one write each showed in its profile). Each promise settles as readOid's would;
   * git answers in order, so the first can be used while the rest arrive.
   */
  readMany(oids: readonly string[]): Array<Promise<GitObject | null>> {
    const reqs: Request[] = [];
    const out = oids.map((oid) => {
      if (this.closed) return Promise.reject(new ZzError('unavailable', 'repository is closed'));
      if (!OID.test(oid))
        return Promise.reject(new ZzError('invalid_argument', 'invalid object id'));
      return new Promise<GitObject | null>((resolve, reject) => {
        reqs.push({ oid, resolve, reject, tries: 0 });
      });
    });
    if (reqs.length > 0) this.process().sendMany(reqs);
    return out;
  }

  /**
   * Reads an object by oid or revision expression: `<oid>`, `<rev>^{commit}`,
   * `<rev>^{tree}`, `<rev>:<path>` or anything `git rev-parse` resolves. Null when it does
   * not resolve (a revision git refuses is missing for this caller, never a failure of others).
   */
  async read(spec: string): Promise<GitObject | null> {
    if (this.closed) throw new ZzError('unavailable', 'repository is closed');
    if (typeof spec !== 'string' || spec.length === 0 || spec.length > 8192) {
      throw new ZzError('invalid_argument', 'invalid object name');
    }
    if (spec.includes('\0') || spec.startsWith('-')) {
      throw new ZzError('invalid_argument', 'invalid object name');
    }
    if (OID.test(spec)) return this.readOid(spec);
    const colon = spec.indexOf(':');
    if (colon === 40 && OID.test(spec.slice(0, 40)))
      return this.readPath(spec.slice(0, 40), spec.slice(41));
    const peel = /^(.*)\^\{(commit|tree)\}$/s.exec(spec);
    if (peel) {
      const base = await this.resolve(peel[1]!);
      return base === null ? null : this.peel(base, peel[2] as 'commit' | 'tree');
    }
    const oid = await this.resolve(spec);
    return oid === null ? null : this.readOid(oid);
  }

  /** A revision to a full oid without touching the batch process; null when it does not resolve. */
  private async resolve(rev: string): Promise<string | null> {
    if (OID.test(rev)) return rev;
    if (/[\n\r]/.test(rev) || rev.length === 0) return null;
    // A branch or tag name is looked up in git's own order (refs/<n>, refs/tags/<n>,
    // refs/heads/<n>, refs/remotes/<n>) from the ref files, saving a git spawn; anything else
    // (HEAD and other pseudo-refs, @{…}, ~, ^, a symbolic ref, no such ref) is git's to decide.
    if (SIMPLE_REF.test(rev) && !PSEUDO_REF.test(rev)) {
      const candidates = rev.startsWith('refs/')
        ? [rev]
        : [`refs/${rev}`, `refs/tags/${rev}`, `refs/heads/${rev}`, `refs/remotes/${rev}`];
      try {
        for (const c of candidates) {
          const oid = await this.refs(c);
          if (oid) return oid;
        }
      } catch {
        /* a symbolic ref or an odd name: git decides below */
      }
    }
    const r = await runGit(
      ['--git-dir', this.gitdir, 'rev-parse', '--verify', '--quiet', '--end-of-options', rev],
      { cwd: this.gitdir, okCodes: [1, 128] },
    );
    const out = r.stdout.toString('latin1').trim();
    return r.code === 0 && OID.test(out) ? out : null;
  }

  /** Follows tags (and a commit to its tree) until an object of type `want`. */
  private async peel(oid: string, want: 'commit' | 'tree'): Promise<GitObject | null> {
    let cur = oid;
    for (let i = 0; i < MAX_PEEL; i++) {
      const o = await this.readOid(cur);
      if (!o) return null;
      if (o.type === want) return o;
      const field =
        o.type === 'tag' ? 'object' : o.type === 'commit' && want === 'tree' ? 'tree' : null;
      if (!field) return null;
      const m = new RegExp(`^${field} ([0-9a-f]{40})$`, 'm').exec(
        o.data.toString('latin1', 0, 200),
      );
      if (!m) return null;
      cur = m[1]!;
    }
    return null;
  }

  /** `<oid>:<path>` by walking trees: any byte but NUL is a legal path byte here. */
  private async readPath(oid: string, path: string): Promise<GitObject | null> {
    const found = await this.pathOid(oid, path);
    return found === null ? null : this.readOid(found);
  }

  /**
   * The id of what `<commit-ish>:<path>` names, walking trees without reading that last object
   * (a blob may be too large to hold: git_show_file reads it by its info). Null when the path
   * is not there (or crosses a submodule).
   */
  async pathOid(oid: string, path: string): Promise<string | null> {
    if (!OID.test(oid)) throw new ZzError('invalid_argument', 'invalid object id');
    const root = await this.peel(oid, 'tree');
    if (!root) return null;
    const p = path.endsWith('/') ? path.slice(0, -1) : path;
    if (p === '') return root.oid;
    let tree: GitObject = root;
    const parts = p.split('/');
    for (let i = 0; ; i++) {
      const found = findEntry(tree.data, Buffer.from(parts[i]!, 'utf8'));
      if (!found || found.mode === '160000') return null;
      if (i === parts.length - 1) return found.oid;
      // Only a tree can hold the next part. Checked by mode, before any read: reading a blob
      // in the middle of a path ("huge.bin/x") would pull it whole through the shared --batch
      // process, holding its bytes and stalling every other reader behind it.
      if (found.mode !== '040000') return null;
      const o = await this.readOid(found.oid);
      if (!o || o.type !== 'tree') return null;
      tree = o;
    }
  }

  close(): void {
    this.closed = true;
    for (const p of [this.current, this.checker]) p?.close();
    this.current = this.checker = null;
  }
}

/** The entry named `name` in a raw tree object. */
function findEntry(data: Buffer, name: Buffer): { mode: string; oid: string } | null {
  for (let p = 0; p < data.length;) {
    const sp = data.indexOf(0x20, p);
    const nul = sp < 0 ? -1 : data.indexOf(0, sp);
    if (sp < 0 || nul < 0 || nul + 21 > data.length) return null;
    if (data.subarray(sp + 1, nul).equals(name)) {
      return {
        mode: data.toString('latin1', p, sp).padStart(6, '0'),
        oid: data.toString('hex', nul + 1, nul + 21),
      };
    }
    p = nul + 21;
  }
  return null;
}
