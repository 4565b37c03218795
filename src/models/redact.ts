import { ZzError } from '../errors.js';
import { redactSecrets } from '../schema/redact.js';

// Secrets out of every text a model adapter builds. An error from an endpoint is printed by
// `zz work` and stored as the reason of an ask_release, in the Lane's history, which syncs to
// every remote: an API key in it is published. An endpoint may echo the request's
// Authorization or x-api-key header in its error body, and a base URL may carry a password,
// so every adapter error passes through `redactSecrets` (schema/redact.ts, shared with
// github/; http-call.ts postJson does it for the HTTP adapters; exec.ts with the keys in the
// script's environment, `envSecrets`), a quoted body is redacted before it is cut (http-call.ts
// quote) and a base URL with credentials is refused before any request is made.

/**
 * The secrets in a child process's environment: values of 8 characters or more of variables
 * named like keys (`…_API_KEY`, `…_TOKEN`, `…PASSWORD`, anything with SECRET). Shorter values
 * are left alone — a `GIT_TOKEN=1` would otherwise blank every "1" in the message.
 */
export function envSecrets(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([k, v]) => /(_API_KEY|_TOKEN|PASSWORD)$|SECRET/i.test(k) && v && v.length >= 8)
    .map(([, v]) => v!);
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
