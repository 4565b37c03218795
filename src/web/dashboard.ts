import type { Caller } from '../core/index.js';
import { ZzError } from '../errors.js';
import { Assets, pageResponse } from './static.js';
import { SessionStore, type SessionStoreOptions } from './sessions.js';

// The dashboard's own routes: the page (/), its files (/assets/*) and the login handshake
// (/auth/*). Everything else the page does goes through the daemon's ordinary API
// (/api/repos/<o>/<r>/tools/<tool>, /events), authenticated by the session cookie and its page
// key through sessionCaller(), so the scopes are exactly those of any other client.
//
// Cookie-authenticated requests must show they come from our own page: the daemon already
// refuses a foreign Origin, and here a cookie only counts when the browser marked the request
// same-origin (Sec-Fetch-Site) or named our origin. SameSite=Strict alone is not enough: every
// port on 127.0.0.1 is the same *site*.
//
// Hazard: browsers do not separate cookies by port. Any server on this host receives our
// cookie (and can replay it with a forged Origin from outside a browser), and any page on
// another port can set one of our name (swapping the open dashboard to a session it chose). So
// the cookie alone never authenticates: every request must also carry the session's page key,
// which sign-in returns in its JSON body only and the page keeps in sessionStorage (isolated
// per origin, port included): the X-ZZ-Session header, or for the event stream (EventSource
// sends no headers) the session_key query parameter. The access log writes paths only, never
// a query. A missing or wrong key is a 401 the page shows as signed out.

export interface DashboardOptions {
  /** host:port the daemon is bound to (names the cookie: cookies ignore ports). */
  host: string;
  /** The actor and id of a bearer token of a repository, or null (the daemon's own check). */
  verifyToken(token: string, repo: string): Promise<{ actor: string; id: string } | null>;
  /** Repositories served, to refuse codes for others. */
  hasRepo(repo: string): boolean;
  /**
   * Whether the token with this id (of this actor) is still live in the repository's store:
   * revoking the token that opened a session ends the session, even while the actor holds
   * other tokens. Asked on every request; keep it cheap (TokenStore.isLive: one stat when the
   * file is unchanged). Without it sessions run until they expire.
   */
  tokenLive?(tokenId: string, actor: string, repo: string): Promise<boolean>;
  /** Sessions persist under this directory (<git common dir>/zz); memory only when absent. */
  stateDir?: string;
  sessions?: Omit<SessionStoreOptions, 'dir'>;
}

export interface Dashboard {
  /** Answers /, /assets/* and /auth/*; null for any other path. */
  handle(req: Request): Promise<Response | null>;
  /**
   * The caller of an API request carrying a session cookie (and its page key) for `repo`; null
   * without a cookie; a 401 with the cookie but without the session's page key.
   */
  sessionCaller(req: Request, repo: string): Promise<Caller | null>;
}

const BEARER = /^Bearer +([!-~]+) *$/i;
/** The header carrying the session's page key (see the comment at the top). */
export const PAGE_KEY_HEADER = 'x-zz-session';
/** The event stream's query parameter for the page key (EventSource cannot set headers). */
export const PAGE_KEY_PARAM = 'session_key';

/** The page key a request carries: the header, or on an event stream GET the query parameter. */
function pageKeyOf(req: Request): string | null {
  const header = req.headers.get(PAGE_KEY_HEADER);
  if (header !== null) return header;
  if (req.method !== 'GET') return null;
  const url = new URL(req.url);
  return url.pathname.endsWith('/events') ? url.searchParams.get(PAGE_KEY_PARAM) : null;
}

const unbound = (key: string | null) =>
  new ZzError(
    'unauthorized',
    key
      ? 'signed out: this dashboard session belongs to another page (another tab or `zz dashboard` link signed in since, or the cookie was set from elsewhere); run `zz dashboard` to sign in again'
      : `signed out: this request carries the dashboard session cookie but not the page's session key (${PAGE_KEY_HEADER}); run \`zz dashboard\` to sign in again`,
  );
const MAX_AUTH_BODY = 4096;
const JSON_HEADERS = {
  'content-type': 'application/json; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
};

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { ...JSON_HEADERS, ...headers } });

async function readSmallJson(req: Request): Promise<Record<string, unknown>> {
  const type = req.headers.get('content-type') ?? '';
  if (!/^application\/json\s*(;|$)/i.test(type))
    throw new ZzError('unsupported_media_type', 'Content-Type must be application/json');
  const reader = req.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (reader) {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > MAX_AUTH_BODY) {
        await reader.cancel().catch(() => {});
        throw new ZzError('payload_too_large', `login requests are at most ${MAX_AUTH_BODY} bytes`);
      }
      chunks.push(value);
    }
  }
  let v: unknown;
  try {
    v = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ZzError('invalid_argument', 'the body is not valid JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ZzError('invalid_argument', 'the body must be a JSON object');
  return v as Record<string, unknown>;
}

/**
 * The value of this daemon's session cookie, or null without one. Cookies are not isolated by
 * port: any server on this host (another user's too) can set a cookie of our name, say with
 * `Path=/api` so the browser sends it first, and make our page act as a session it chose. Two
 * of our cookies in one request are therefore refused, never picked between; the refusal
 * expires the name at every path above the request so that signing in again starts clean.
 */
function cookieValue(req: Request, name: string): string | null {
  const header = req.headers.get('cookie');
  if (!header) return null;
  const found: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) found.push(part.slice(eq + 1).trim());
  }
  if (found.length > 1) throw new DuplicateCookie(name, new URL(req.url).pathname);
  return found[0] ?? null;
}

class DuplicateCookie extends ZzError {
  constructor(name: string, path: string) {
    super(
      'unauthorized',
      'signed out: this request carried two dashboard session cookies for this daemon (another server on this host may have set one); run `zz dashboard` to sign in again',
      { cookie_paths_cleared: clearedPaths(path) },
    );
    this.setCookies = clearedPaths(path).map(
      (p) => `${name}=; Path=${p}; HttpOnly; SameSite=Strict; Max-Age=0`,
    );
  }
  readonly setCookies: string[];
}

/** "/", "/api", "/api/repos", ... up to the request's path (at most 8 levels). */
function clearedPaths(path: string): string[] {
  const parts = path.split('/').filter(Boolean).slice(0, 8);
  return ['/', ...parts.map((_, i) => `/${parts.slice(0, i + 1).join('/')}`)];
}

const sameOrigin = (req: Request): boolean =>
  req.headers.get('sec-fetch-site') === 'same-origin' || req.headers.get('origin') !== null;

export function createDashboard(opts: DashboardOptions): Dashboard {
  const port = opts.host.slice(opts.host.lastIndexOf(':') + 1).replace(/[^0-9]/g, '');
  const cookieName = `zz_session_${port || 'default'}`;
  const store = new SessionStore({
    ...opts.sessions,
    ...(opts.stateDir ? { dir: opts.stateDir } : {}),
  });
  const assets = new Assets();

  const setCookie = (value: string, maxAgeSeconds: number) =>
    `${cookieName}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}`;

  const only = (req: Request, ...allowed: string[]) => {
    if (!allowed.includes(req.method))
      throw new ZzError(
        'method_not_allowed',
        `${req.method} is not allowed here; use ${allowed.join(' or ')}`,
        { allow: allowed },
      );
  };

  const requireSameOrigin = (req: Request) => {
    if (!sameOrigin(req))
      throw new ZzError('forbidden', 'dashboard sessions are only used by the dashboard page');
  };

  async function issueCode(req: Request): Promise<Response> {
    only(req, 'POST');
    const m = BEARER.exec(req.headers.get('authorization') ?? '');
    if (!m) throw new ZzError('unauthorized', 'a login code needs a bearer token (run `zz login`)');
    const body = await readSmallJson(req);
    const repo = body.repo;
    if (typeof repo !== 'string' || !opts.hasRepo(repo))
      throw new ZzError('not_found', 'repo: this server does not serve that repository');
    const who = await opts.verifyToken(m[1]!, repo);
    if (!who)
      throw new ZzError('unauthorized', 'unknown or revoked token (run `zz login` for a new one)');
    const { code, expires_at } = store.issueCode(who.actor, repo, who.id);
    // The code travels in the fragment: browsers never send it to a server or in a Referer.
    return json(200, { actor: who.actor, repo, code, path: `/#code=${code}`, expires_at });
  }

  async function session(req: Request): Promise<Response> {
    only(req, 'GET', 'POST', 'DELETE');
    requireSameOrigin(req);
    if (req.method === 'POST') {
      // A shadowing cookie must not stop the way out of it: signing in ends neither session
      // (we cannot tell ours) and expires the name at the paths it may sit on.
      let current: string | null = null;
      let cleared: string[] = [];
      try {
        current = cookieValue(req, cookieName);
      } catch (e) {
        if (!(e instanceof DuplicateCookie)) throw e;
        cleared = e.setCookies.filter((c) => !c.includes('Path=/;'));
      }
      const { code, switch: switching } = await readSmallJson(req);
      // Login CSRF: any page can send the browser to /#code=<a code its author minted>. A
      // page already signed in as someone else must ask its person before switching; this
      // refusal (the code still unused) tells it whom the code signs in as.
      // Signed out, the page asks too: otherwise a page on any origin signs this browser in
      // as its author by opening the link, with no prompt. Only the same person on the same
      // repository, already signed in *in this page* (its key), goes through unasked.
      const offered = typeof code === 'string' ? store.peek(code) : null;
      const mine = current ? await store.lookup(current, pageKeyOf(req)) : null;
      if (
        offered &&
        switching !== true &&
        (!mine || mine.actor !== offered.actor || mine.repo !== offered.repo)
      )
        throw new ZzError(
          'conflict',
          mine
            ? `this link signs in as ${offered.actor}, but this browser is signed in as ${mine.actor}; confirm to switch`
            : `this link signs in as ${offered.actor}; confirm to sign in`,
          { signed_in_as: mine, code_signs_in_as: offered },
        );
      const opened = typeof code === 'string' ? await store.redeem(code) : null;
      if (!opened)
        throw new ZzError(
          'unauthorized',
          'this login code is unknown, used or expired; run `zz dashboard` for a new one',
        );
      // Only the page holding the key ends the session it replaces (as DELETE): a cookie alone,
      // replayed by a server on another port with a code of its own, ended a victim's session.
      if (current && (await store.lookup(current, pageKeyOf(req)))) await store.end(current);
      const maxAge = Math.floor((Date.parse(opened.session.expires_at) - Date.now()) / 1000);
      // The page key goes in the body only, never in a cookie: see the comment at the top.
      const res = json(
        200,
        { ...opened.session, session_key: opened.pageKey },
        { 'set-cookie': setCookie(opened.secret, maxAge) },
      );
      for (const c of cleared) res.headers.append('set-cookie', c);
      return res;
    }
    const current = cookieValue(req, cookieName);
    const key = pageKeyOf(req);
    if (req.method === 'DELETE') {
      // Only the page holding the key ends the session; the cookie is expired either way.
      if (current && (await store.lookup(current, key))) await store.end(current);
      return json(200, { ended: true }, { 'set-cookie': setCookie('', 0) });
    }
    const whose = current ? await store.lookup(current) : null;
    if (!whose)
      throw new ZzError('unauthorized', 'not signed in; run `zz dashboard` to open a session');
    const found = await store.lookup(current!, key);
    if (!found) throw unbound(key);
    // A reload after the token was revoked must not show the page signed in until its first
    // API call: the same check as every API request.
    await requireLive(current!, found);
    return json(200, found);
  }

  /** Ends the session (and throws) when the token that opened it was revoked. */
  async function requireLive(
    secret: string,
    found: { token_id: string; actor: string; repo: string },
  ): Promise<void> {
    if (opts.tokenLive && !(await opts.tokenLive(found.token_id, found.actor, found.repo))) {
      await store.end(secret);
      throw new ZzError(
        'unauthorized',
        `the token ${found.token_id} of ${found.actor} that opened this dashboard session was revoked, which ends the session; run \`zz dashboard\` to sign in again`,
      );
    }
  }

  async function handle(req: Request): Promise<Response | null> {
    const path = new URL(req.url).pathname;
    if (path === '/' || path === '/index.html') {
      only(req, 'GET', 'HEAD');
      return pageResponse();
    }
    if (path.startsWith('/assets/')) {
      only(req, 'GET', 'HEAD');
      return assets.get(path.slice('/assets/'.length));
    }
    if (path === '/auth/code') return issueCode(req);
    if (path === '/auth/session') return session(req);
    return null;
  }

  async function sessionCaller(req: Request, repo: string): Promise<Caller | null> {
    const secret = cookieValue(req, cookieName);
    if (secret === null || secret === '') return null;
    requireSameOrigin(req);
    if (!(await store.lookup(secret)))
      throw new ZzError(
        'unauthorized',
        'the dashboard session has expired; run `zz dashboard` to sign in again',
      );
    const key = pageKeyOf(req);
    const found = await store.lookup(secret, key);
    if (!found) throw unbound(key);
    if (found.repo !== repo)
      throw new ZzError(
        'forbidden',
        `this dashboard session is for ${found.repo}; run \`zz dashboard\` in the other checkout`,
      );
    await requireLive(secret, found);
    return { actor: found.actor };
  }

  return { handle, sessionCaller };
}
