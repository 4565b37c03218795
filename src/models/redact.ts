import { ZzError } from '../errors.js';

// Secrets out of every text a model adapter builds. An error from an endpoint is printed by
// `zz work` and stored as the reason of an ask_release, in the Lane's history, which syncs to
// every remote: an API key in it is published. An endpoint may echo the request's
// Authorization or x-api-key header in its error body, and a base URL may carry a password,
// so every adapter error passes through `redactSecrets` (http-call.ts postJson does it for the
// HTTP adapters) and a base URL with credentials is refused before any request is made.

const REDACTED = '[redacted]';

/**
 * `text` with each secret's value, any `Bearer …` token and any URL userinfo (`//user:pw@`)
 * replaced. Secrets shorter than 4 characters are left alone: replacing "a" everywhere would
 * garble the message and hides nothing.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const s of secrets) {
    if (s && s.length >= 4) out = out.split(s).join(REDACTED);
  }
  return out
    .replace(/\b(bearer)\s+[^\s"',;]+/gi, `$1 ${REDACTED}`)
    .replace(/(\/\/)[^/\s@"']*@/g, `$1${REDACTED}@`);
}

/** The same error with its message redacted (a ZzError keeps its code and details). */
export function redactError(e: unknown, secrets: readonly (string | undefined)[]): unknown {
  if (e instanceof ZzError) {
    const message = redactSecrets(e.message, secrets);
    return message === e.message ? e : new ZzError(e.code, message, e.details);
  }
  if (e instanceof Error && !(e.name === 'AbortError' || e.name === 'TimeoutError')) {
    const message = redactSecrets(e.message, secrets);
    if (message !== e.message) return new Error(message);
  }
  return e;
}

/**
 * A model endpoint's base URL from `variable` (trailing slashes dropped), or the default.
 * A URL with a user name or password is refused: fetch would refuse it anyway, and the
 * password would then be in every message that names the endpoint.
 */
export function endpointBase(variable: string, raw: string | undefined, fallback: string): string {
  const base = (raw || fallback).replace(/\/+$/, '');
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new ZzError(
      'invalid_argument',
      `${variable} is not a URL: ${JSON.stringify(redactSecrets(base, []).slice(0, 200))}`,
    );
  }
  if (url.username || url.password) {
    const key = variable.replace(/_BASE_URL$/, '_API_KEY');
    throw new ZzError(
      'invalid_argument',
      `${variable} must not carry a user name or password; put the key in ${key} instead`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ZzError('invalid_argument', `${variable} must be an http:// or https:// URL`);
  }
  return base;
}
