// The page's one way to the daemon: the same tool routes every client uses, authenticated by
// the HttpOnly session cookie together with the session's page key (the page never sees a
// token). The key comes in sign-in's JSON body and is kept in sessionStorage, which only this
// origin (port included) can read, unlike the cookie, which every port on this host receives
// and can overwrite; the daemon refuses the cookie without it. Errors keep the API's own words.

export class ApiError extends Error {
  constructor(message, code, status, details) {
    super(message);
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

const signedOut = new Set();
/** Calls f(error) when a call is refused as not signed in; returns the unsubscribe. */
export function onSignedOut(f) {
  signedOut.add(f);
  return () => signedOut.delete(f);
}

let repoKey = null;
export const setRepo = (key) => (repoKey = key);
export const repo = () => repoKey;

const KEY = 'zz_session_key';
// This load's copy: where storage is refused (a privacy mode) the page signs in for this load
// only, instead of never (every request went without its key).
let loaded = null;
/** The session's page key, or null when this page has not signed in (this tab, this origin). */
export function sessionKey() {
  try {
    return sessionStorage.getItem(KEY) ?? loaded;
  } catch {
    return loaded;
  }
}
function setSessionKey(key) {
  loaded = key || null;
  try {
    if (key) sessionStorage.setItem(KEY, key);
    else sessionStorage.removeItem(KEY);
  } catch {
    // Storage refused: `loaded` holds it for this load.
  }
}

async function send(path, init = {}) {
  let res;
  const key = sessionKey();
  const headers = { ...init.headers, ...(key ? { 'x-zz-session': key } : {}) };
  try {
    res = await fetch(path, { credentials: 'same-origin', cache: 'no-store', ...init, headers });
  } catch {
    throw new ApiError('cannot reach the zz daemon (is `zz serve` running?)', 'unavailable', 0);
  }
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new ApiError(
      body?.error ?? `HTTP ${res.status}`,
      body?.code ?? 'internal',
      res.status,
      body?.details,
    );
    // The session ended under the page (revoked, expired, or refused: two session cookies).
    if (res.status === 401 && !path.startsWith('/auth/')) for (const f of signedOut) f(err);
    throw err;
  }
  return body;
}

const postJson = (path, value, method = 'POST') =>
  send(path, {
    method,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(value),
  });

/** Calls a tool on the session's repository; resolves to its result. */
export async function call(tool, args = {}) {
  const body = await postJson(`/api/repos/${repoKey}/tools/${tool}`, args);
  return body.result;
}

/**
 * Every item of a paged list tool (`key` names its list), read page by page by next_cursor:
 * the sidebar shows every Lane and the Ladder view every rung, while one answer holds at most a
 * page. `limit` is each page's size (null: the tool's own, e.g. ladder_tree's 4 MiB).
 */
export async function callAll(tool, key, args = {}, limit = 1000) {
  const page = limit === null ? {} : { limit };
  let r = await call(tool, { ...args, ...page });
  const items = [...r[key]];
  while (r.next_cursor) {
    r = await call(tool, { ...args, ...page, cursor: r.next_cursor });
    items.push(...r[key]);
  }
  return { ...r, [key]: items };
}

/**
 * `read` (async, handling its own errors) run at most once at a time: a call while it runs
 * asks for one more run after it, however many calls come meanwhile. A burst of commits then
 * costs two reads, not one each stacked on the daemon, and the last run starts after the last
 * call, so what it shows is the latest state; runs answer in the order they started.
 */
export function coalesced(read) {
  let running = false;
  let again = false;
  const run = () => {
    running = true;
    Promise.resolve()
      .then(read)
      .catch(() => {})
      .finally(() => {
        running = false;
        if (again) {
          again = false;
          run();
        }
      });
  };
  return () => {
    if (running) again = true;
    else run();
  };
}

/**
 * The session this page is signed in as. A 401 forgets the page key: the session ended, or the
 * cookie beside it is another session's (set from another port); only a new sign-in helps.
 */
export const getSession = () =>
  send('/auth/session').catch((e) => {
    if (e.status === 401) setSessionKey(null);
    throw e;
  });
/**
 * Trades a login code for a session and keeps its page key; `confirmed` says the person chose
 * to sign in as the code's actor (asked whenever it is not the one this page is signed in as).
 */
export async function redeemCode(code, confirmed = false) {
  const body = await postJson('/auth/session', { code, ...(confirmed ? { switch: true } : {}) });
  const { session_key: key, ...session } = body;
  setSessionKey(key);
  return session;
}
export const endSession = () =>
  send('/auth/session', { method: 'DELETE' }).finally(() => setSessionKey(null));

let toolNames = null;
/** Whether the daemon serves a tool (newer tools are used when present). */
export async function hasTool(name) {
  toolNames ??= send('/api/tools').then(
    (b) => new Set(b.tools.map((t) => t.name)),
    () => new Set(),
  );
  return (await toolNames).has(name);
}
