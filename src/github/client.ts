import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import { ZzError } from '../errors.js';
import { redactCutEnd, redactSecrets } from '../schema/redact.js';
import { writeFileAtomic } from '../local/index.js';
import { readBodyBounded, retryAfterMs } from '../models/index.js';

// The one place zz talks to GitHub: @octokit/rest with the throttling plugin (pacing), the
// request hook here waiting out primary and secondary rate limits (Retry-After honoured, each
// wait bounded, reported through onWait so a terminal can show a countdown) and the retry
// plugin (5xx and network errors retried with backoff), plus
// conditional requests: every GET answered with an ETag is cached under the user cache dir and
// asked again with If-None-Match; GitHub's 304 (free against the primary rate limit) is served
// from the cache. Octokit throws on 304, so the request hook turns it back into the cached
// answer. The cache key includes a hash of the token, so two identities never share entries.

const MAX_CACHED_BYTES = 4 * 1024 * 1024;
/** Longest rate-limit wait taken by default (the model client's bound too). */
export const DEFAULT_MAX_WAIT_SECONDS = 60;
/** GitHub's primary rate limit resets within the hour: no honest wait is longer. */
export const MAX_WAIT_SECONDS = 3660;
/** GitHub asks for at least a minute when a secondary limit gives no Retry-After. */
const SECONDARY_FALLBACK_SECONDS = 60;
const USER_AGENT = 'zz (git-native coordination; +https://github.com)';

export interface RateWait {
  kind: 'primary' | 'secondary';
  /** Seconds until the request is sent again. */
  seconds: number;
  method: string;
  url: string;
}

export interface GitHubOptions {
  token: string | null;
  /** API base (GITHUB_API_URL for GitHub Enterprise); default https://api.github.com. */
  baseUrl?: string | undefined;
  /** Directory for the ETag cache; none when omitted. */
  cacheDir?: string | undefined;
  onWait?: ((w: RateWait) => void) | undefined;
  /** How many times a rate-limited request is retried (default 3). */
  rateRetries?: number;
  /** How many times a 5xx or network failure is retried (default 3). */
  retries?: number;
  /** Milliseconds per second of wait GitHub asks for (tests make waits short; default 1000). */
  secondMs?: number;
  /**
   * Longest rate-limit wait taken (default 60 s, at most MAX_WAIT_SECONDS); a longer one is
   * a clear error naming when the limit lifts, never a silent hang or an early retry.
   */
  maxWaitSeconds?: number;
}

export interface GitHubClient {
  octokit: InstanceType<typeof Octokit>;
  baseUrl: string;
  /** Requests answered from the ETag cache (304) in this client's life. */
  stats: { requests: number; notModified: number };
  /** The text with this client's token, and anything shaped like a credential, blanked. */
  redact: (text: string) => string;
  /** A redacted text that was then cut short, with a credential the cut split taken off. */
  redactCut: (cut: string) => string;
}

// A server may echo the Authorization header in an error or in a 200 body (GITHUB_API_URL may
// name any server; a proxy may too; an issue body may quote a token): every text from an
// answer goes through redact() before it is printed or stored (schema/redact.ts: the token in
// its echoed forms, GitHub's token shapes and `Bearer …`/`token …` values, so another
// identity's token is not kept either). A text cut short runs redactCut() on the cut.
export function redactor(token: string | null): Pick<GitHubClient, 'redact' | 'redactCut'> {
  const secrets = token ? [token] : [];
  return {
    redact: (text) => redactSecrets(text, secrets),
    redactCut: (cut) => redactCutEnd(cut, secrets),
  };
}

interface CachedResponse {
  etag: string;
  status: number;
  url: string;
  headers: Record<string, string>;
  data: unknown;
}

interface HttpError {
  status: number;
  message: string;
  response?: { headers?: Record<string, string | undefined>; data?: unknown };
}

function isHttpError(e: unknown): e is HttpError {
  return typeof e === 'object' && e !== null && typeof (e as HttpError).status === 'number';
}

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

async function readCached(file: string): Promise<CachedResponse | null> {
  try {
    const c = JSON.parse(await readFile(file, 'utf8')) as CachedResponse;
    return typeof c?.etag === 'string' && typeof c.headers === 'object' ? c : null;
  } catch {
    return null;
  }
}

async function writeCached(file: string, c: CachedResponse): Promise<void> {
  const text = JSON.stringify(c);
  if (text.length > MAX_CACHED_BYTES) return;
  // Best effort: a response that could not be cached is fetched again next time.
  await writeFileAtomic(file, text, { mkdir: true }).catch(() => {});
}

const Client = Octokit.plugin(throttling, retry);

/**
 * fetch with each answer's body read here, refused past 32 MiB as it arrives (the models'
 * reader, readBodyBounded). Octokit reads a body whole before it parses it (and takes a body
 * it could not read for an empty answer), and GITHUB_API_URL may name any server: one that
 * never stops sending grew zz without bound. A refusal thrown here reaches githubError as the
 * cause of Octokit's network error.
 */
function boundedFetch(baseUrl: string): typeof fetch {
  return async (input, init) => {
    const res = await fetch(input, init);
    if (!res.body) return res;
    const bounded = new Response(await readBodyBounded(res, `GitHub at ${baseUrl}`), {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
    // Octokit reports the answer's URL (after redirects); a new Response has none of its own.
    Object.defineProperty(bounded, 'url', { value: res.url });
    return bounded;
  };
}

/** What a 403 or 429 asks zz to wait, or null when it is no rate limit (a plain refusal). */
function rateLimitOf(e: unknown, now: number): Omit<RateWait, 'method' | 'url'> | null {
  if (!isHttpError(e) || (e.status !== 403 && e.status !== 429)) return null;
  const h = e.response?.headers ?? {};
  // Retry-After first (seconds or an HTTP date, read as the model client reads it), then the
  // primary limit's reset, as GitHub's documentation orders them.
  const ra = h['retry-after'];
  const after = ra === undefined ? null : retryAfterMs(new Headers({ 'retry-after': ra }), now);
  if (after !== null) return { kind: 'secondary', seconds: Math.ceil(after / 1000) };
  const reset = Number(h['x-ratelimit-reset']);
  if (h['x-ratelimit-remaining'] === '0' && Number.isFinite(reset))
    // One second past the reset, as GitHub asks.
    return { kind: 'primary', seconds: Math.max(0, Math.ceil((reset * 1000 - now) / 1000) + 1) };
  if (e.status === 429 || /\bsecondary rate\b/i.test(e.message))
    return { kind: 'secondary', seconds: SECONDARY_FALLBACK_SECONDS };
  return null;
}

export function createGitHub(opts: GitHubOptions): GitHubClient {
  const baseUrl = (opts.baseUrl || 'https://api.github.com').replace(/\/+$/, '');
  const secondMs = opts.secondMs ?? 1000;
  const rateRetries = opts.rateRetries ?? 3;
  const maxWait = Math.min(opts.maxWaitSeconds ?? DEFAULT_MAX_WAIT_SECONDS, MAX_WAIT_SECONDS);
  // Rate limits are waited out in one place, the request hook below (rateLimited), so that
  // every wait is bounded and Retry-After is honoured on a 429 too: the throttling plugin only
  // waited on 403s it recognised, with no bound (a reset ten years away: "waiting 315360000
  // s"), and the retry plugin retried a 429 on its own backoff, ignoring Retry-After. The
  // throttling plugin still paces requests; its own retries are declined here.
  const decline = () => false;
  const octokit = new Client({
    ...(opts.token ? { auth: opts.token } : {}),
    baseUrl,
    userAgent: USER_AGENT,
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    request: { fetch: boundedFetch(baseUrl) },
    throttle: { onRateLimit: decline, onSecondaryRateLimit: decline },
    retry: {
      retries: opts.retries ?? 3,
      retryAfterBaseValue: secondMs,
      doNotRetry: [400, 401, 403, 404, 410, 422, 429, 451],
    },
  });

  const rateLimited = async <R>(send: () => Promise<R>, method: string, url: string) => {
    for (let count = 0; ; count++) {
      try {
        return await send();
      } catch (e) {
        const limit = rateLimitOf(e, Date.now());
        if (!limit) throw e;
        if (limit.seconds > maxWait) {
          const at = new Date(Date.now() + limit.seconds * 1000);
          const when = Number.isNaN(at.getTime())
            ? 'an unreadable time'
            : `${at.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
          throw new ZzError(
            'unavailable',
            `GitHub's ${limit.kind} rate limit holds until ${when} (${limit.seconds} s), longer than zz waits (${maxWait} s): run it again after then, or set ZZ_GITHUB_MAX_WAIT_S (up to ${MAX_WAIT_SECONDS}) to wait longer`,
            { retry_after_s: limit.seconds, kind: limit.kind },
          );
        }
        if (count >= rateRetries) throw e;
        opts.onWait?.({ ...limit, method, url });
        await sleep(limit.seconds * secondMs);
      }
    }
  };
  const stats = { requests: 0, notModified: 0 };
  const cacheDir = opts.cacheDir ? join(opts.cacheDir, 'github') : null;
  const identity = sha(`${baseUrl}\0${opts.token ? sha(opts.token) : 'anonymous'}`);

  octokit.hook.wrap('request', async (request, options) => {
    stats.requests++;
    const method = String(options.method ?? 'GET').toUpperCase();
    const { url } = octokit.request.endpoint(options as never);
    const send = () => rateLimited(async () => request(options), method, url);
    if (!cacheDir || method !== 'GET') return send();
    const file = join(cacheDir, `${sha(`${identity}\0${url}`).slice(0, 40)}.json`);
    const cached = await readCached(file);
    // Set on the options object itself: the plugins' hooks inside this one hold on to it, and
    // a copy passed down loses the header (measured: the request went out unconditional).
    if (cached) options.headers = { ...options.headers, 'if-none-match': cached.etag };
    try {
      const res = await send();
      const etag = res.headers.etag;
      if (typeof etag === 'string') {
        const keep: Record<string, string> = {};
        for (const h of ['link', 'etag', 'last-modified']) {
          const v = (res.headers as Record<string, unknown>)[h];
          if (typeof v === 'string') keep[h] = v;
        }
        await writeCached(file, {
          etag,
          status: res.status,
          url: res.url,
          headers: keep,
          data: res.data,
        });
      }
      return res;
    } catch (e) {
      if (cached && isHttpError(e) && e.status === 304) {
        stats.notModified++;
        return {
          status: cached.status,
          url: cached.url,
          headers: cached.headers,
          data: cached.data,
        };
      }
      throw e;
    }
  });
  return { octokit, baseUrl, stats, ...redactor(opts.token) };
}

/**
 * A GitHub failure as a ZzError a person (or agent) can act on. The token never appears: every
 * message passes through the client's redact(), whatever the server put in its answer.
 */
export function githubError(
  e: unknown,
  what: string,
  gh: Pick<GitHubClient, 'baseUrl' | 'redact' | 'redactCut'>,
): unknown {
  const err = explained(e, what, gh);
  if (!(err instanceof ZzError)) return err;
  const message = gh.redact(err.message);
  return message === err.message ? err : new ZzError(err.code, message, err.details);
}

function explained(
  e: unknown,
  what: string,
  { baseUrl, redact, redactCut }: Pick<GitHubClient, 'baseUrl' | 'redact' | 'redactCut'>,
): unknown {
  // Octokit reports a connection that never got an answer (DNS, refused, reset) as status 500
  // with no response: that is not GitHub answering 500, and is said as the network failure.
  if (!isHttpError(e) || !e.response) {
    if (e instanceof ZzError) return e;
    const cause = (e as { cause?: unknown }).cause;
    if (cause instanceof ZzError) return new ZzError(cause.code, `${cause.message} (${what})`);
    const msg = e instanceof Error ? e.message : String(e);
    return new ZzError('unavailable', `could not reach GitHub at ${baseUrl} for ${what}: ${msg}`);
  }
  // Redacted here, before the cut below can split a token the server echoed.
  const gh = redact(
    String((e.response?.data as { message?: unknown } | undefined)?.message ?? e.message),
  );
  switch (e.status) {
    case 401:
      return new ZzError(
        'unauthorized',
        `GitHub refused the token (401 ${gh}) for ${what}: set GH_TOKEN or GITHUB_TOKEN to a valid token, or run \`gh auth login\``,
      );
    case 403:
    case 429:
      return new ZzError(
        'forbidden',
        `GitHub refused ${what} (${e.status} ${gh}); if this is a rate limit, it was retried and is still in force`,
      );
    case 404:
      return new ZzError(
        'not_found',
        `GitHub has no ${what} (404) at ${baseUrl}, or the token cannot see it (private repositories need a token with repo access)`,
      );
    default:
      return new ZzError(
        'unavailable',
        redactCut(`GitHub answered ${e.status} for ${what} after retries: ${gh}`.slice(0, 500)),
      );
  }
}
