import * as crypto from 'node:crypto';
import { statSync } from 'node:fs';
import { z } from 'zod';
import { ZzError } from '../errors.js';
import {
  readJsonFile,
  tokensFile,
  trackBackground,
  withFileLock,
  writeJsonAtomic,
} from '../local/index.js';

// Bearer tokens of one repository on this machine, in <git common dir>/zz/tokens.json (never on
// refs, never synced): a token is honoured only by the repository whose store minted it. Only
// SHA-256 hashes are kept, so the file leaks no usable secret. Tokens are named (one per
// machine, session or agent process) and an actor may hold several at once: minting never
// revokes another token unless asked (`rotate`), revoking is always explicit. Several processes
// (the daemon, `zz login`, `zz agent revoke`) share the file: writes go through the local file
// lock and an atomic rename, and every verify re-stats the file so that a revocation made by
// another process takes effect on the very next request (no timer, no file watcher: an
// inotify event can reach the daemon after the revoking command has returned and the next
// request has arrived). A verify costs one stat, one SHA-256 and one Map lookup: a few µs.

export { isAlive } from '../local/index.js';

export const TOKEN_PREFIX = 'zzt_';
const TOKEN_RE = /^zzt_[A-Za-z0-9_-]{43}$/;
const FORMAT = 1;
const TOUCH_EVERY_MS = 60_000;
/** Live tokens one actor may hold in one repository: bounded like everything stored. */
export const MAX_TOKENS_PER_ACTOR = 100;
const NAME_RE = /^[\x21-\x7e](?:[\x20-\x7e]{0,62}[\x21-\x7e])?$/;

export interface TokenInfo {
  /** Stable handle for listing and revoking (a prefix of the hash; reveals nothing usable). */
  id: string;
  actor: string;
  /** What the token is for: 'login', an agent's name, a machine or session. */
  name: string;
  created_at: string;
  last_used_at: string | null;
}

const TokenRecordSchema = z.object({
  /** Hex SHA-256 of the whole token. */
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  actor: z.string().min(1),
  name: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable().default(null),
});
type TokenRecord = z.output<typeof TokenRecordSchema>;

const TokenFileSchema = z.object({
  version: z.number().int().positive(),
  tokens: z.array(TokenRecordSchema),
});

const EMPTY = { version: FORMAT, tokens: [] as TokenRecord[] };
const HINT = 'fix or delete it (then run `zz login` again)';

/** Which tokens to revoke: all of an actor's, those with a name (of one actor), or one by id. */
export type RevokeTarget = string | { name: string; actor?: string } | { id: string };

export interface CreateTokenOptions {
  /** Revoke the actor's other tokens with this name (and only those). */
  rotate?: boolean;
}

export interface CreatedToken {
  token: string;
  actor: string;
  name: string;
  id: string;
  /** How many tokens `rotate` revoked (0 without it). */
  revoked: number;
}

export interface TokenStoreOptions {
  clock?: () => Date;
  /** How long a writer waits for the lock before giving up. */
  lockTimeoutMs?: number;
  /** Where background failures (last_used_at updates) are reported. Never given a token. */
  log?: (line: string) => void;
}

// crypto.hash (Node ≥ 20.12) hashes a short string in one call, several times faster than a
// createHash object; engines allow 20.11, which lacks it.
const oneShot = (crypto as { hash?: (alg: string, data: string) => string }).hash;
const sha256hex = oneShot
  ? (s: string): string => oneShot('sha256', s)
  : (s: string): string => crypto.createHash('sha256').update(s, 'utf8').digest('hex');
const idOf = (hash: string): string => hash.slice(0, 12);
const infoOf = ({ hash, actor, name, created_at, last_used_at }: TokenRecord): TokenInfo => ({
  id: idOf(hash),
  actor,
  name,
  created_at,
  last_used_at,
});

export class TokenStore {
  private records: TokenRecord[] = [];
  /** records by hash; the first record of a hash wins (a duplicate is never minted). */
  private byHash = new Map<string, TokenRecord>();
  /** Identity of the file version `records` came from ('' = no file). */
  private stamp: string | null = null;
  /** The reload in flight and the file version (statStamp) it began from. */
  private loading: { stamp: string; done: Promise<void> } | null = null;
  /** When each token's use was last recorded, in ms (read from the file at first). */
  private readonly touched = new Map<string, number>();
  private readonly dirty = new Map<string, string>();
  private touchTimer: Promise<void> | null = null;
  private readonly clock: () => Date;
  /** The clock in ms: Date.now unless a clock was given (no Date made a request). */
  private readonly nowMs: () => number;
  private readonly lockTimeoutMs: number;
  private readonly log: (line: string) => void;
  /** The file version (statStamp) last logged as unreadable by holdsOrNone. */
  private unreadable: string | null = null;

  /** The token file, <gitdir>/zz/tokens.json. */
  readonly file: string;

  /** `gitdir` is the common git dir (`git rev-parse --git-common-dir`). */
  constructor(gitdir: string, opts: TokenStoreOptions = {}) {
    this.file = tokensFile(gitdir);
    this.clock = opts.clock ?? (() => new Date());
    const clock = opts.clock;
    this.nowMs = clock ? () => clock().getTime() : Date.now;
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 10_000;
    this.log = opts.log ?? (() => {});
  }

  /** A new named token for actor. Other tokens keep working unless `rotate` is asked for. */
  async create(actor: string, name: string, opts: CreateTokenOptions = {}): Promise<CreatedToken> {
    if (!NAME_RE.test(name)) {
      throw new ZzError(
        'invalid_argument',
        'a token name is 1–64 printable ASCII characters, not starting or ending with a space',
      );
    }
    const token = TOKEN_PREFIX + crypto.randomBytes(32).toString('base64url');
    const hash = sha256hex(token);
    const now = this.clock().toISOString();
    let revoked = 0;
    await this.update((tokens) => {
      const replaced = (t: TokenRecord) => !!opts.rotate && t.actor === actor && t.name === name;
      const kept = tokens.filter((t) => !replaced(t));
      revoked = tokens.length - kept.length;
      if (kept.filter((t) => t.actor === actor).length >= MAX_TOKENS_PER_ACTOR) {
        throw new ZzError(
          'precondition_failed',
          `${actor} already holds ${MAX_TOKENS_PER_ACTOR} tokens in this repository; revoke some first (zz agent revoke, zz logout)`,
        );
      }
      return [...kept, { hash, actor, name, created_at: now, last_used_at: null }];
    });
    return { token, actor, name, id: idOf(hash), revoked };
  }

  /** The token's actor, name and id; null for anything not minted (and not revoked) here. */
  async verify(token: string): Promise<{ actor: string; name: string; id: string } | null> {
    if (typeof token !== 'string' || !TOKEN_RE.test(token)) return null;
    // The file unchanged since it was read (every request but those after a change): no await
    // at all, the stat and the lookup run in this one step.
    const stamp = this.statStamp();
    if (stamp !== this.stamp) await this.reload(stamp);
    // A lookup by the token's hash, not a constant-time comparison with each record: its timing
    // can only tell how a SHA-256 digest of the guess compares with the stored digests, and
    // nobody can steer a digest toward a stored one (the comparison loop over 100 tokens cost
    // ~15 µs of every authenticated request).
    const found = this.byHash.get(sha256hex(token));
    if (!found) return null;
    this.touch(found);
    return { actor: found.actor, name: found.name, id: idOf(found.hash) };
  }

  /** Removes every token of an actor, those with a name (of one actor, when given), or one id. */
  async revoke(target: RevokeTarget): Promise<number> {
    const match =
      typeof target === 'string'
        ? (t: TokenRecord) => t.actor === target
        : 'id' in target
          ? (t: TokenRecord) => idOf(t.hash) === target.id
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

  /** Live tokens (never the secrets), oldest first; of one actor when given. */
  async list(filter: { actor?: string } = {}): Promise<TokenInfo[]> {
    await this.refresh();
    return this.records
      .filter((t) => filter.actor === undefined || t.actor === filter.actor)
      .map(infoOf);
  }

  /** Whether actor holds at least one live token here (one stat when the file is unchanged). */
  async holds(actor: string): Promise<boolean> {
    await this.refresh();
    return this.records.some((t) => t.actor === actor);
  }

  /**
   * holds(actor), or false when the file cannot be read (not JSON, a newer format): for views
   * across repositories, where one broken store must not fail every caller's request nor put
   * its path in their answer. Logged once per version of the file, not once per request.
   */
  async holdsOrNone(actor: string): Promise<boolean> {
    try {
      return await this.holds(actor);
    } catch (e) {
      const stamp = this.statStamp();
      if (this.unreadable !== stamp) {
        this.unreadable = stamp;
        this.log(
          `tokens: ${(e as Error).message}; its repository is left out of other repositories' views`,
        );
      }
      return false;
    }
  }

  /**
   * Whether the token with this id (TokenInfo.id) is still live and acts as actor: what a
   * dashboard session minted with it checks on every request (revoked → the session ends).
   */
  async isLive(id: string, actor: string): Promise<boolean> {
    await this.refresh();
    return this.records.some((t) => t.actor === actor && idOf(t.hash) === id);
  }

  /** Waits for pending last_used_at writes (tests, shutdown). */
  async flush(): Promise<void> {
    while (this.touchTimer) await this.touchTimer;
  }

  private async refresh(): Promise<void> {
    const stamp = this.statStamp();
    if (stamp !== this.stamp) await this.reload(stamp);
  }

  /**
   * Reads the file again, once for all the calls that saw the same version of it (`seen`, their
   * statStamp). A reload in flight that began from another version may have read the file
   * before that one landed (a revocation the caller's request came after): joining it answered
   * the request from the old file, so the caller waits for it and reads again.
   */
  private async reload(seen: string): Promise<void> {
    for (let l = this.loading; l; l = this.loading) {
      if (l.stamp === seen) return l.done;
      await l.done.catch(() => {});
    }
    if (this.stamp === seen) return; // read meanwhile by a reload that began from `seen`
    const stamp = this.statStamp();
    const done = this.load(stamp).finally(() => {
      if (this.loading?.done === done) this.loading = null;
    });
    this.loading = { stamp, done };
    return done;
  }

  private statStamp(): string {
    // A rename installs a new inode, so ino alone tells writes apart; mtime and size cover
    // editors that rewrite in place.
    // Synchronous on purpose: a stat of one small file costs microseconds, where an async
    // stat queues in libuv's 4-thread pool behind the daemon's durable writes' fsyncs and
    // every authenticated request would wait for them. ENOENT answers undefined rather than
    // throwing (a thrown error costs more than the stat). Numbers, not bigint: a BigIntStats
    // and its strings cost ~2 µs more a request; an inode number is exact as a double (below
    // 2^53) and mtimeMs keeps the nanoseconds to ~0.2 µs, besides the inode a rename changes.
    const st = statSync(this.file, { throwIfNoEntry: false });
    return st ? `${st.ino}:${st.mtimeMs}:${st.size}` : '';
  }

  private async load(stamp: string): Promise<void> {
    this.setRecords(await this.readRecords());
    this.stamp = stamp;
  }

  private setRecords(tokens: TokenRecord[]): void {
    this.records = tokens;
    this.byHash = new Map();
    for (const t of tokens) if (!this.byHash.has(t.hash)) this.byHash.set(t.hash, t);
  }

  private async readRecords(): Promise<TokenRecord[]> {
    const doc = await readJsonFile(this.file, TokenFileSchema, { missing: EMPTY, hint: HINT });
    if (doc.version > FORMAT) {
      throw new ZzError(
        'precondition_failed',
        `${this.file} was written by a newer zz (format ${doc.version}); upgrade zz`,
        { path: this.file },
      );
    }
    return doc.tokens;
  }

  /** Read-modify-write under the lock file, then an atomic rename. */
  private async update(change: (tokens: TokenRecord[]) => TokenRecord[]): Promise<void> {
    await withFileLock(
      this.file,
      async () => {
        const next = change(await this.readRecords());
        await writeJsonAtomic(this.file, { version: FORMAT, tokens: next }, { mkdir: true });
        this.setRecords(next);
        this.stamp = this.statStamp();
      },
      { timeoutMs: this.lockTimeoutMs, mkdir: true },
    );
  }

  /** Records use lazily: at most once a minute per token, written in the background. */
  private touch(rec: TokenRecord): void {
    const now = this.nowMs();
    let last = this.touched.get(rec.hash);
    if (last === undefined && rec.last_used_at) {
      last = Date.parse(rec.last_used_at);
      if (!Number.isNaN(last)) this.touched.set(rec.hash, last);
    }
    if (last !== undefined && now - last < TOUCH_EVERY_MS) return;
    this.touched.set(rec.hash, now);
    this.dirty.set(rec.hash, new Date(now).toISOString());
    this.touchTimer ??= trackBackground(
      this.writeTouches().finally(() => {
        this.touchTimer = null;
      }),
    );
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
