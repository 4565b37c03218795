import { setTimeout as sleep } from 'node:timers/promises';
import { ZzError } from '../errors.js';
import { redactCutEnd, redactSecrets } from '../schema/redact.js';
import { redactError } from './redact.js';

// One POST of JSON to a model endpoint, with the retry policy every HTTP adapter shares:
// 408/429/5xx and network failures are retried with exponential backoff and full jitter;
// a Retry-After (seconds or HTTP date) or retry-after-ms header longer than that backoff sets
// the wait instead, and is honoured in full — a wait longer than `maxDelayMs` is a clear
// failure, never an early retry that the endpoint would refuse again. Each attempt has its own timeout. Response bodies of
// errors are quoted (bounded) in the message; request headers (the API key) never are, and
// every message (a thrown error, a retry's reason) is redacted of `secrets` (redact.ts), since
// an endpoint may echo the key back in its error body.

export interface HttpCallOptions {
  timeoutMs: number;
  maxRetries: number;
  baseDelayMs: number;
  maxDelayMs: number;
  signal?: AbortSignal;
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
  /** Who we are talking to, for messages: `openai:gpt-4o at http://…`. */
  label: string;
  /** Values to take out of every message: the API key. */
  secrets?: readonly (string | undefined)[];
}

const MAX_RESPONSE_BYTES = 32 * 1024 * 1024;

export function retryAfterMs(headers: Headers, now = Date.now()): number | null {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const ra = headers.get('retry-after');
  if (ra === null) return null;
  if (/^\d+(\.\d+)?$/.test(ra.trim())) return Math.ceil(Number(ra) * 1000);
  const at = Date.parse(ra);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

const retryable = (status: number) => status === 408 || status === 429 || status >= 500;

export async function postJson(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  opts: HttpCallOptions,
): Promise<unknown> {
  const secrets = opts.secrets ?? [];
  const onRetry = opts.onRetry;
  try {
    return await attempts(url, headers, body, {
      ...opts,
      ...(onRetry
        ? { onRetry: (i) => onRetry({ ...i, reason: redactSecrets(i.reason, secrets) }) }
        : {}),
    });
  } catch (e) {
    throw redactError(e, secrets);
  }
}

async function attempts(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  opts: HttpCallOptions,
): Promise<unknown> {
  const payload = JSON.stringify(body);
  const secrets = opts.secrets ?? [];
  for (let attempt = 0; ; attempt++) {
    opts.signal?.throwIfAborted();
    const timeout = AbortSignal.timeout(opts.timeoutMs);
    const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
    let failure: string;
    let wait: number | null = null;
    let answering = false;
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
        body: payload,
        signal,
        // Never followed: fetch keeps custom headers (x-api-key) on a redirect to another
        // origin, dropping only Authorization, so following would hand Anthropic's key to
        // whatever host the answer names. Every redirect is refused, same origin included: an
        // API endpoint has no reason to redirect a POST, and the error names where it points so
        // the user can set the base URL to it.
        redirect: 'manual',
      });
      answering = true;
      if (res.status >= 300 && res.status < 400) {
        await res.body?.cancel();
        const to = res.headers.get('location');
        throw new ZzError(
          'unavailable',
          `${opts.label} redirected the request (HTTP ${res.status}` +
            `${to ? ` to ${quote(to, 200, secrets)}` : ''}); zz does not follow a model endpoint's ` +
            `redirects, which would send the API key on: set the base URL to the final address`,
          { status: res.status },
        );
      }
      const text = await readBounded(res, opts.label);
      if (res.ok) {
        try {
          return JSON.parse(text) as unknown;
        } catch {
          throw new ZzError(
            'unavailable',
            `${opts.label} answered with invalid JSON: ${quote(text, 300, secrets)}`,
          );
        }
      }
      // Redacted before errorText unescapes the JSON and again (quote) before it is cut:
      // a key cut short by the cut no longer matches in full (redact.ts redactCutEnd).
      failure = `HTTP ${res.status}: ${quote(errorText(redactSecrets(text, secrets)), 300, secrets)}`;
      if (!retryable(res.status)) {
        const code = res.status === 401 || res.status === 403 ? 'unauthorized' : 'unavailable';
        throw new ZzError(code, `${opts.label} refused the request (${failure})`, {
          status: res.status,
        });
      }
      wait = retryAfterMs(res.headers);
    } catch (e) {
      if (e instanceof ZzError) throw e;
      if (opts.signal?.aborted) throw opts.signal.reason ?? e;
      failure = timeout.aborted
        ? `no answer within ${opts.timeoutMs} ms`
        : answering
          ? `the answer was cut off: ${causeOf(e)}`
          : `could not connect: ${causeOf(e)}`;
    }
    if (attempt >= opts.maxRetries) {
      throw new ZzError(
        'unavailable',
        `${opts.label} failed after ${attempt + 1} attempt${attempt ? 's' : ''}: ${failure}`,
      );
    }
    const backoff = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
    // The server's wait may lengthen ours, never shorten it: `retry-after-ms: 0` or a
    // Retry-After date already past would otherwise retry at once, every attempt.
    const delayMs = Math.max(wait ?? 0, Math.round(Math.random() * backoff));
    if (delayMs > opts.maxDelayMs) {
      throw new ZzError(
        'unavailable',
        `${opts.label} asked to retry after ${Math.round(delayMs / 1000)} s (${failure}); ` +
          `that is longer than the ${Math.round(opts.maxDelayMs / 1000)} s zz waits`,
      );
    }
    opts.onRetry?.({ attempt: attempt + 1, delayMs, reason: failure });
    await sleep(delayMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
  }
}

async function readBounded(res: Response, label: string): Promise<string> {
  return (await readBodyBounded(res, label)).toString('utf8');
}

/**
 * An HTTP answer's body, refused past 32 MiB as it arrives (`label` names the sender in the
 * error): the models' calls and GitHub's (github/client.ts) read through this one reader.
 */
export async function readBodyBounded(res: Response, label: string): Promise<Buffer> {
  const len = Number(res.headers.get('content-length') ?? 0);
  if (len > MAX_RESPONSE_BYTES) {
    await res.body?.cancel();
    throw new ZzError(
      'unavailable',
      `${label} sent a response of ${len} bytes; the limit is 32 MiB`,
    );
  }
  // Chunk by chunk: a chunked body has no length to refuse up front, and one that never ends
  // would otherwise be held whole (GiBs on loopback) until the call's timeout.
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (res.body) {
    for await (const chunk of res.body) {
      size += chunk.length;
      // Leaving the loop (the throw) cancels the stream, which closes the connection.
      if (size > MAX_RESPONSE_BYTES)
        throw new ZzError('unavailable', `${label} sent more than 32 MiB`);
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks);
}

/** The human part of an OpenAI/Anthropic error body, else the body itself. */
function errorText(text: string): string {
  try {
    const j = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof j.error === 'string') return j.error;
    if (typeof j.error?.message === 'string') return j.error.message;
    if (typeof j.message === 'string') return j.message;
  } catch {
    /* not JSON: quote it as is */
  }
  return text;
}

/**
 * `text` on one line, cut at `max` characters. With `secrets` (redact.ts) it is redacted before
 * the cut, and a secret the cut split is taken off its end.
 */
export function quote(text: string, max = 300, secrets?: readonly (string | undefined)[]): string {
  const flat = (secrets ? redactSecrets(text, secrets) : text).replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max);
  return `${secrets ? redactCutEnd(cut, secrets) : cut}…`;
}

function causeOf(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  if (cause?.code) return cause.code;
  return e instanceof Error ? (cause?.message ?? e.message) : String(e);
}
