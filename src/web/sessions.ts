import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ZzError } from '../errors.js';
import { writeJsonAtomic } from '../local/index.js';
import { personOf } from '../schema/ids.js';

// Dashboard logins. `zz dashboard` (holding a bearer token) asks for a one-time code; the page
// trades the code for a session of two secrets: one in an HttpOnly cookie, and a page key
// that only the page's own origin holds (sessionStorage, sent as a header). Cookies are not
// isolated by port, so the cookie alone proves nothing: any server on this host can read or
// overwrite it; the page key is what ties a request to the page that signed in. Codes are kept
// in memory for a minute and work once. Sessions are stored as SHA-256 hashes (like tokens) in
// <git common dir>/zz/dashboard-sessions.json, so an open page survives a daemon restart; the
// file holds nothing a thief could replay. Both are bounded per actor and in total. Per actor,
// a new one drops that actor's own oldest (a member cannot sign anyone else out); the total
// bound never drops another actor's live entry: a new one is refused instead, with a message
// saying so (one member minting codes or sessions in a loop fills only their own share).
// A session records the id of the token that minted its code (TokenInfo.id, a prefix of the
// token's hash: nothing usable) and lasts only while that token is live: the dashboard checks
// it on every request, as a bearer token is checked. Sessions stored before that field existed
// cannot be tied to a token and are ended when the file is read (their people sign in again).

export interface Session {
  actor: string;
  /** The repository the session acts on (tokens belong to one repository). */
  repo: string;
  /** The id of the token whose code opened the session: revoking it ends the session. */
  token_id: string;
  created_at: string;
  expires_at: string;
}

const storedSession = z.object({
  hash: z.string().regex(/^[0-9a-f]{64}$/),
  actor: z.string(),
  repo: z.string(),
  token_id: z.string().min(1),
  /** SHA-256 of the page key (sessionStorage of the dashboard's origin, sent as X-ZZ-Session). */
  page_hash: z.string().regex(/^[0-9a-f]{64}$/),
  created_at: z.string(),
  expires_at: z.string(),
});
type StoredSession = z.infer<typeof storedSession>;

const sessionsFile = z.object({ sessions: z.array(z.unknown()) });

export interface SessionStoreOptions {
  /** Where dashboard-sessions.json is kept; in memory only when absent. */
  dir?: string;
  clock?: () => Date;
  codeTtlMs?: number;
  sessionTtlMs?: number;
  /** Live login codes in total (default 100); past it new codes are refused. */
  maxCodes?: number;
  /**
   * Live login codes per person (default 5), the person's agents included (`a@b[x]` is a@b's):
   * a new one drops that person's oldest. Per actor, twenty agent names of one person filled
   * the total and locked everyone else out.
   */
  maxCodesPerPerson?: number;
  /** Live sessions in total (default 200); past it new sessions are refused. */
  maxSessions?: number;
  /** Live sessions per person (default 10), agents included; a new one ends the person's oldest. */
  maxSessionsPerPerson?: number;
  log?: (line: string) => void;
}

export const CODE_TTL_MS = 60_000;
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
const SECRET = /^[A-Za-z0-9_-]{43}$/;

const hashOf = (secret: string): string =>
  createHash('sha256').update(secret, 'utf8').digest('hex');
const newSecret = (): string => randomBytes(32).toString('base64url');

export class SessionStore {
  private readonly codes = new Map<
    string,
    { actor: string; repo: string; token_id: string; expires: number }
  >();
  private sessions: StoredSession[] | null = null;
  private loading: Promise<StoredSession[]> | null = null;
  private writing: Promise<void> = Promise.resolve();
  private readonly clock: () => Date;
  private readonly file: string | null;
  private readonly log: (line: string) => void;

  constructor(private readonly opts: SessionStoreOptions = {}) {
    this.clock = opts.clock ?? (() => new Date());
    this.file = opts.dir ? join(opts.dir, 'dashboard-sessions.json') : null;
    this.log = opts.log ?? (() => {});
  }

  /** A one-time login code for actor on repo, minted with token tokenId, valid for codeTtlMs. */
  issueCode(actor: string, repo: string, tokenId: string): { code: string; expires_at: string } {
    const now = this.clock().getTime();
    for (const [h, c] of this.codes) if (c.expires <= now) this.codes.delete(h);
    // Map order is insertion order: the first of an actor's codes is their oldest.
    const person = personOf(actor);
    const own = [...this.codes].filter(([, c]) => personOf(c.actor) === person);
    const perPerson = this.opts.maxCodesPerPerson ?? 5;
    for (const [h] of own.slice(0, Math.max(0, own.length - perPerson + 1))) this.codes.delete(h);
    const max = this.opts.maxCodes ?? 100;
    if (this.codes.size >= max)
      throw new ZzError(
        'too_many_requests',
        `${max} dashboard login codes are waiting to be used; try again within a minute`,
      );
    const code = newSecret();
    const expires = now + (this.opts.codeTtlMs ?? CODE_TTL_MS);
    this.codes.set(hashOf(code), { actor, repo, token_id: tokenId, expires });
    return { code, expires_at: new Date(expires).toISOString() };
  }

  /** Who a live code signs in as, without using it up; null when unknown or expired. */
  peek(code: string): { actor: string; repo: string } | null {
    if (!SECRET.test(code)) return null;
    const found = this.codes.get(hashOf(code));
    if (!found || found.expires <= this.clock().getTime()) return null;
    return { actor: found.actor, repo: found.repo };
  }

  /** Consumes a code (whatever the outcome, it cannot be used again) and opens a session. */
  async redeem(
    code: string,
  ): Promise<{ secret: string; pageKey: string; session: Session } | null> {
    if (!SECRET.test(code)) return null;
    const h = hashOf(code);
    const found = this.codes.get(h);
    this.codes.delete(h);
    const now = this.clock();
    if (!found || found.expires <= now.getTime()) return null;
    const secret = newSecret();
    const pageKey = newSecret();
    const session: Session = {
      actor: found.actor,
      repo: found.repo,
      token_id: found.token_id,
      created_at: now.toISOString(),
      expires_at: new Date(
        now.getTime() + (this.opts.sessionTtlMs ?? SESSION_TTL_MS),
      ).toISOString(),
    };
    await this.mutate((list) => {
      // The list is in order of creation: a person's first sessions are their oldest.
      const perPerson = this.opts.maxSessionsPerPerson ?? 10;
      const person = personOf(found.actor);
      const own = list.filter((s) => personOf(s.actor) === person);
      const drop = new Set(own.slice(0, Math.max(0, own.length - perPerson + 1)));
      const kept = list.filter((s) => !drop.has(s));
      const max = this.opts.maxSessions ?? 200;
      if (kept.length >= max)
        throw new ZzError(
          'too_many_requests',
          `the dashboard has ${max} open sessions, the most it keeps; sign out of one (or wait for one to expire) and try again`,
        );
      return [...kept, { ...session, hash: hashOf(secret), page_hash: hashOf(pageKey) }];
    });
    return { secret, pageKey, session };
  }

  /**
   * The live session a cookie secret names, or null; with `pageKey`, null too unless the key
   * is the one the session was opened with (compared in constant time). Without `pageKey` the
   * answer only says whose cookie it is: callers must not act on it.
   */
  async lookup(secret: string, pageKey?: string | null): Promise<Session | null> {
    if (!SECRET.test(secret)) return null;
    const h = Buffer.from(hashOf(secret), 'hex');
    const now = this.clock().toISOString();
    let found: StoredSession | null = null;
    for (const s of await this.load()) {
      if (timingSafeEqual(Buffer.from(s.hash, 'hex'), h) && !found) found = s;
    }
    if (!found || found.expires_at <= now) return null;
    if (pageKey !== undefined) {
      // Hash first: equal-length buffers for timingSafeEqual whatever the header held.
      const given = Buffer.from(hashOf(pageKey ?? ''), 'hex');
      if (!timingSafeEqual(Buffer.from(found.page_hash, 'hex'), given) || !pageKey) return null;
    }
    const { hash: _h, page_hash: _p, ...session } = found;
    return session;
  }

  async end(secret: string): Promise<void> {
    if (!SECRET.test(secret)) return;
    const h = hashOf(secret);
    await this.mutate((list) => list.filter((s) => s.hash !== h));
  }

  private async load(): Promise<StoredSession[]> {
    if (this.sessions) return this.sessions;
    this.loading ??= this.readFile().then((list) => (this.sessions = list));
    return this.loading;
  }

  private async readFile(): Promise<StoredSession[]> {
    if (!this.file) return [];
    let text: string;
    try {
      text = await fsp.readFile(this.file, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
        this.log(`${this.file}: unreadable (${(e as Error).message}); starting without sessions`);
      return [];
    }
    let doc: z.infer<typeof sessionsFile>;
    try {
      doc = sessionsFile.parse(JSON.parse(text));
    } catch (e) {
      this.log(`${this.file}: unreadable (${(e as Error).message}); starting without sessions`);
      return [];
    }
    // One bad entry (a hand edit, an older format) costs that session, not the others.
    let untied = 0;
    const kept = doc.sessions.flatMap((x) => {
      const r = storedSession.safeParse(x);
      if (
        !r.success &&
        storedSession.omit({ token_id: true, page_hash: true }).safeParse(x).success
      )
        untied++;
      return r.success ? [r.data] : [];
    });
    if (untied)
      this.log(
        `${this.file}: ended ${untied} dashboard session(s) opened before sessions recorded their token and page key; sign in again with \`zz dashboard\``,
      );
    return kept;
  }

  /** Applies f to the list (dropping expired sessions) and persists it, one write at a time. */
  private async mutate(f: (list: StoredSession[]) => StoredSession[]): Promise<void> {
    const run = this.writing.then(async () => {
      const now = this.clock().toISOString();
      const next = f((await this.load()).filter((s) => s.expires_at > now));
      this.sessions = next;
      if (!this.file) return;
      await writeJsonAtomic(this.file, { version: 1, sessions: next }, { mkdir: true });
    });
    this.writing = run.catch(() => {});
    return run;
  }
}
