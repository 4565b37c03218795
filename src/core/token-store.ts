import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { dirname, join } from 'node:path';
import { ZzError } from '../errors.js';

// Bearer tokens of one machine, in <git common dir>/zz/tokens.json (never on refs, never
// synced). Only SHA-256 hashes are kept, so the file leaks no usable secret. Several processes
// (the daemon, `zz login`, `zz agent revoke`) share the file: writes go through an O_EXCL lock
// file and an atomic rename, and every verify re-stats the file so that a revocation made by
// another process takes effect on the very next request.

export const TOKEN_PREFIX = 'zzt_';
const TOKEN_RE = /^zzt_[A-Za-z0-9_-]{43}$/;
const FORMAT = 1;
const TOUCH_EVERY_MS = 60_000;
const STALE_LOCK_MS = 10_000;

export interface TokenInfo {
  actor: string;
  /** What the token is for: 'login', or an agent's name. */
  name: string;
  created_at: string;
  last_used_at: string | null;
}

interface TokenRecord extends TokenInfo {
  /** Hex SHA-256 of the whole token. */
  hash: string;
}

interface TokenFile {
  version: number;
  tokens: TokenRecord[];
}

export type RevokeTarget = string | { name: string; actor?: string };

export interface TokenStoreOptions {
  clock?: () => Date;
  /** How long a writer waits for the lock before giving up. */
  lockTimeoutMs?: number;
  /** Where background failures (last_used_at updates) are reported. Never given a token. */
  log?: (line: string) => void;
}

const sha256 = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

export class TokenStore {
  private records: TokenRecord[] = [];
  private hashes: Buffer[] = [];
  /** Identity of the file version `records` came from ('' = no file). */
  private stamp: string | null = null;
  private loading: Promise<void> | null = null;
  private readonly touched = new Map<string, Date>();
  private readonly dirty = new Map<string, string>();
  private touchTimer: Promise<void> | null = null;
  private readonly clock: () => Date;
  private readonly lockTimeoutMs: number;
  private readonly log: (line: string) => void;

  /** The token file, <gitdir>/zz/tokens.json. */
  readonly file: string;

  /** `gitdir` is the common git dir (`git rev-parse --git-common-dir`). */
  constructor(gitdir: string, opts: TokenStoreOptions = {}) {
    this.file = join(gitdir, 'zz', 'tokens.json');
    this.clock = opts.clock ?? (() => new Date());
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 5_000;
    this.log = opts.log ?? (() => {});
  }

  /** A new token for actor+name; an older token with the same actor and name stops working. */
  async create(actor: string, name: string): Promise<{ token: string; actor: string }> {
    const token = TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const now = this.clock().toISOString();
    await this.update((tokens) => [
      ...tokens.filter((t) => !(t.actor === actor && t.name === name)),
      { hash: sha256(token).toString('hex'), actor, name, created_at: now, last_used_at: null },
    ]);
    return { token, actor };
  }

  async verify(token: string): Promise<{ actor: string } | null> {
    if (typeof token !== 'string' || !TOKEN_RE.test(token)) return null;
    await this.refresh();
    const h = sha256(token);
    let found: TokenRecord | null = null;
    // Compare against every record without stopping early, in constant time per record.
    for (let i = 0; i < this.hashes.length; i++) {
      if (timingSafeEqual(this.hashes[i]!, h) && !found) found = this.records[i]!;
    }
    if (!found) return null;
    this.touch(found);
    return { actor: found.actor };
  }

  /** Removes every token of an actor, or those with a name (of one actor, when given). */
  async revoke(target: RevokeTarget): Promise<number> {
    const match =
      typeof target === 'string'
        ? (t: TokenRecord) => t.actor === target
        : (t: TokenRecord) =>
            t.name === target.name && (target.actor === undefined || t.actor === target.actor);
    let removed = 0;
    await this.update((tokens) => {
      const kept = tokens.filter((t) => !match(t));
      removed = tokens.length - kept.length;
      return kept;
    });
    return removed;
  }

  async list(): Promise<TokenInfo[]> {
    await this.refresh();
    return this.records.map(({ actor, name, created_at, last_used_at }) => ({
      actor,
      name,
      created_at,
      last_used_at,
    }));
  }

  /** Waits for pending last_used_at writes (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.touchTimer) await this.touchTimer;
  }

  private async refresh(): Promise<void> {
    const stamp = await this.statStamp();
    if (stamp === this.stamp) return;
    if (!this.loading) {
      this.loading = this.load().finally(() => {
        this.loading = null;
      });
    }
    await this.loading;
  }

  private async statStamp(): Promise<string> {
    try {
      // A rename installs a new inode, so ino alone tells writes apart; mtime and size cover
      // editors that rewrite in place.
      const st = await fsp.stat(this.file, { bigint: true });
      return `${st.ino}:${st.mtimeNs}:${st.size}`;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return '';
      throw e;
    }
  }

  private async load(): Promise<void> {
    const stamp = await this.statStamp();
    const { tokens } = await this.readFile();
    this.setRecords(tokens);
    this.stamp = stamp;
  }

  private setRecords(tokens: TokenRecord[]): void {
    this.records = tokens;
    this.hashes = tokens.map((t) => Buffer.from(t.hash, 'hex'));
  }

  private async readFile(): Promise<TokenFile> {
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { version: FORMAT, tokens: [] };
      throw e;
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new ZzError(
        'precondition_failed',
        `${this.file} is not valid JSON; fix or delete it (then run \`zz login\` again)`,
      );
    }
    const tokens = (doc as Partial<TokenFile> | null)?.tokens;
    if (!Array.isArray(tokens)) {
      throw new ZzError(
        'precondition_failed',
        `${this.file} has no "tokens" list; fix or delete it (then run \`zz login\` again)`,
      );
    }
    return {
      version: FORMAT,
      tokens: tokens.filter(
        (t): t is TokenRecord =>
          !!t &&
          typeof t === 'object' &&
          typeof (t as TokenRecord).hash === 'string' &&
          /^[0-9a-f]{64}$/.test((t as TokenRecord).hash) &&
          typeof (t as TokenRecord).actor === 'string' &&
          typeof (t as TokenRecord).name === 'string',
      ),
    };
  }

  /** Read-modify-write under the lock file, then an atomic rename. */
  private async update(change: (tokens: TokenRecord[]) => TokenRecord[]): Promise<void> {
    await fsp.mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
    const release = await this.lock();
    try {
      const current = await this.readFile();
      const next = change(current.tokens);
      const tmp = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      const fh = await fsp.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(JSON.stringify({ version: FORMAT, tokens: next }, null, 2) + '\n');
        await fh.sync();
      } finally {
        await fh.close();
      }
      try {
        await fsp.rename(tmp, this.file);
      } catch (e) {
        await fsp.rm(tmp, { force: true });
        throw e;
      }
      this.setRecords(next);
      this.stamp = await this.statStamp();
    } finally {
      await release();
    }
  }

  private async lock(): Promise<() => Promise<void>> {
    const lockFile = `${this.file}.lock`;
    const deadline = Date.now() + this.lockTimeoutMs;
    for (let attempt = 0; ; attempt++) {
      try {
        const fh = await fsp.open(lockFile, 'wx', 0o600);
        await fh.writeFile(String(process.pid));
        await fh.close();
        return () => fsp.rm(lockFile, { force: true });
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      if (await this.lockIsStale(lockFile)) {
        await fsp.rm(lockFile, { force: true });
        continue;
      }
      if (Date.now() > deadline) {
        throw new ZzError(
          'ref_locked',
          `${lockFile} is held by another process; remove it if no zz process is running`,
        );
      }
      await new Promise((r) =>
        setTimeout(r, Math.min(50, 2 + attempt * 3) * (0.5 + Math.random())),
      );
    }
  }

  private async lockIsStale(lockFile: string): Promise<boolean> {
    try {
      const [st, text] = await Promise.all([fsp.stat(lockFile), fsp.readFile(lockFile, 'utf8')]);
      const pid = Number(text);
      if (Number.isInteger(pid) && pid > 0 && !isAlive(pid)) return true;
      return Date.now() - st.mtimeMs > STALE_LOCK_MS;
    } catch {
      return false;
    }
  }

  /** Records use lazily: at most once a minute per token, written in the background. */
  private touch(rec: TokenRecord): void {
    const now = this.clock();
    const last =
      this.touched.get(rec.hash) ?? (rec.last_used_at ? new Date(rec.last_used_at) : null);
    if (last && now.getTime() - last.getTime() < TOUCH_EVERY_MS) return;
    this.touched.set(rec.hash, now);
    this.dirty.set(rec.hash, now.toISOString());
    this.touchTimer ??= this.writeTouches().finally(() => {
      this.touchTimer = null;
    });
  }

  private async writeTouches(): Promise<void> {
    // Let a burst of requests collect before writing once.
    await new Promise((r) => setTimeout(r, 10));
    while (this.dirty.size > 0) {
      const batch = new Map(this.dirty);
      this.dirty.clear();
      try {
        await this.update((tokens) =>
          tokens.map((t) => {
            const at = batch.get(t.hash);
            if (!at || (t.last_used_at && t.last_used_at >= at)) return t;
            return { ...t, last_used_at: at };
          }),
        );
      } catch (e) {
        this.log(`tokens: could not record last use: ${(e as Error).message}`);
      }
    }
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
