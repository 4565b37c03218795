// The repository's event stream (server-sent events of commits on refs/zz/*). EventSource
// retries by itself after a dropped connection, resuming from Last-Event-ID; when the daemon
// answers with an error instead (it was restarting), the browser gives up, so we open a new
// stream ourselves after a pause, from the last cursor we saw — unless the session has ended
// (the daemon closes a revoked caller's stream), which the status then says.
// EventSource sends no headers: the session's page key rides in the session_key query
// parameter (the daemon logs paths only, never a query).
import { getSession, sessionKey } from './api.js';

const listeners = new Set();
const healthListeners = new Set();
const statusListeners = new Set();
let source = null;
let lastId = null;
let status = 'connecting';
let retryTimer = null;

function setStatus(s) {
  status = s;
  for (const f of statusListeners) f(s);
}

export function connect(repoKey) {
  if (source) source.close();
  clearTimeout(retryTimer);
  const query = new URLSearchParams();
  if (lastId) query.set('cursor', lastId);
  const key = sessionKey();
  if (key) query.set('session_key', key);
  const qs = query.toString();
  const url = `/api/repos/${repoKey}/events` + (qs ? `?${qs}` : '');
  const es = new EventSource(url, { withCredentials: true });
  source = es;
  es.addEventListener('open', () => setStatus('live'));
  es.addEventListener('commit', (e) => {
    if (e.lastEventId) lastId = e.lastEventId;
    let data;
    try {
      data = JSON.parse(e.data);
    } catch {
      return;
    }
    for (const f of listeners) f(data);
  });
  // The repository's health (repo_state.quarantined, sync_refused) changed: no commit says so.
  es.addEventListener('health', () => {
    for (const f of healthListeners) f();
  });
  es.addEventListener('error', () => {
    if (es !== source) return;
    if (es.readyState === EventSource.CLOSED) {
      setStatus('reconnecting');
      retryTimer = setTimeout(async () => {
        // Refused because the session ended (its tokens revoked, or expired)? Then say so
        // and stop: retrying would never succeed.
        const status = await getSession().then(
          () => 200,
          (e) => e.status,
        );
        if (es !== source) return;
        if (status === 401) setStatus('signed out');
        else connect(repoKey);
      }, 1000);
    } else setStatus('reconnecting');
  });
}

/** Calls f({ref, revision, ops}) for every commit; returns the unsubscribe function. */
export function onCommit(f) {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** Calls f() whenever the daemon says repo_state's health changed; returns the unsubscribe. */
export function onHealth(f) {
  healthListeners.add(f);
  return () => healthListeners.delete(f);
}

export function onStatus(f) {
  statusListeners.add(f);
  f(status);
  return () => statusListeners.delete(f);
}

/** The Ask ids a commit's ops touched. */
export function askIdsOf(commit) {
  const ids = new Set();
  for (const op of commit.ops ?? []) {
    for (const v of [op.args?.ask_id, op.out?.ask_id, op.ask_id])
      if (typeof v === 'string') ids.add(v);
  }
  return ids;
}
