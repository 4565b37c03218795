// The dashboard shell: sign-in (trading the one-time code in the URL fragment for a session
// cookie and page key, after the person confirms whom it signs in as, then wiping the
// fragment), hash routes, the Lane list and the live-stream status.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  call,
  callAll,
  coalesced,
  endSession,
  getSession,
  onSignedOut,
  redeemCode,
  sessionKey,
  setRepo,
} from './api.js';
import { AgentsView } from './agents.js';
import { AskView } from './ask.js';
import { Board } from './board.js';
import { RepoHealth } from './health.js';
import { LadderView } from './ladder.js';
import { connect, onCommit, onHealth, onStatus } from './live.js';
import { ErrorBox, html, Plain } from './ui.js';

function parseRoute(hash) {
  let parts;
  try {
    parts = hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  } catch {
    // A malformed escape (#/lane/%E0): nothing it could name exists.
    return { view: 'notfound' };
  }
  if (parts[0] === 'lane' && parts[1]) return { view: 'lane', laneId: parts[1] };
  if (parts[0] === 'ask' && parts[1] && parts[2])
    return { view: 'ask', laneId: parts[1], askId: parts[2] };
  if (parts[0] === 'ladder') return { view: 'ladder', path: parts.slice(1).join('/') || null };
  if (parts[0] === 'agents') return { view: 'agents' };
  return { view: 'lanes' };
}

function useRoute() {
  const [route, setRoute] = useState(parseRoute(location.hash));
  useEffect(() => {
    const f = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', f);
    return () => removeEventListener('hashchange', f);
  }, []);
  return route;
}

function LiveStatus() {
  const [s, setS] = useState('connecting');
  useEffect(() => onStatus(setS), []);
  return html`<span class=${`live live-${s.replace(/ /g, '-')}`} role="status" aria-live="polite"
    >${s}</span
  >`;
}

function LaneList({ lanes, current }) {
  if (lanes.length === 0) return html`<p class="muted">No Lanes yet.</p>`;
  return html`<ul class="lanes">
    ${lanes.map(
      (l) =>
        html`<li>
          <a
            href=${`#/lane/${l.lane_id}`}
            aria-current=${l.lane_id === current ? 'page' : undefined}
          >
            <span class="lane-title"><${Plain} text=${l.title} /></span>
            <span class="counts">${l.counts.open}/${l.counts.claimed}/${l.counts.answered}</span>
          </a>
        </li>`,
    )}
  </ul>`;
}

function Shell({ session }) {
  const route = useRoute();
  const [lanes, setLanes] = useState([]);
  const [repoState, setRepoState] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let timer = null;
    let healthTimer = null;
    // One lane_list read (of every page) at a time, and one more after it whatever came
    // meanwhile: under a burst of commits each read used to start beside the ones still
    // running, each listing every Lane, and they stacked up on the daemon. Reads run one
    // after the other, so each answer is newer than the one shown.
    const refreshLanes = coalesced(() =>
      callAll('lane_list', 'lanes').then(
        (r) => (setLanes(r.lanes), setError(null)),
        (e) => setError(e),
      ),
    );
    // The repository's health (refused remotes, quarantined refs) changes without a Lane
    // commit (a refused sync, a ref kept aside): the daemon says so with a health event.
    // Only the latest read is shown: an earlier one answered late must not bring back a warning.
    let healthReads = 0;
    const refreshHealth = () => {
      const n = ++healthReads;
      call('repo_state').then(
        (s) => n === healthReads && setRepoState(s),
        () => {},
      );
    };
    refreshLanes();
    refreshHealth();
    const off = onCommit((c) => {
      if (!c.ref.startsWith('refs/zz/lanes/')) return;
      clearTimeout(timer);
      timer = setTimeout(refreshLanes, 150);
    });
    const offHealth = onHealth(() => {
      clearTimeout(healthTimer);
      healthTimer = setTimeout(refreshHealth, 150);
    });
    // Once the stream is live, health events follow from it: read the health again, as it may
    // have changed before (and after a reconnect Lane counts may have moved while we were away).
    let wasLive = false;
    const offStatus = onStatus((s) => {
      if (s === 'live') refreshHealth();
      if (s === 'live' && wasLive) refreshLanes();
      if (s === 'live') wasLive = true;
      if (s === 'signed out')
        setError({
          message:
            'Signed out: this dashboard session has ended (the token that opened it was revoked, or it expired); run `zz dashboard` to sign in again.',
        });
    });
    const offSignedOut = onSignedOut((e) =>
      setError({ message: `Signed out, sign in again: ${e.message}` }),
    );
    return () => (
      off(),
      offHealth(),
      offStatus(),
      offSignedOut(),
      clearTimeout(timer),
      clearTimeout(healthTimer)
    );
  }, []);
  const laneId =
    route.view === 'lane' || route.view === 'ask'
      ? route.laneId
      : route.view === 'lanes'
        ? (lanes.find((l) => l.lane_id !== '_repo') ?? lanes[0])?.lane_id
        : null;
  const signOut = async () => {
    await endSession().catch(() => {});
    location.reload();
  };
  let main;
  if (route.view === 'ask')
    main = html`<${AskView} laneId=${route.laneId} askId=${route.askId} me=${session.actor} />`;
  else if (route.view === 'ladder')
    main = html`<${LadderView} path=${route.path} repo=${session.repo} />`;
  else if (route.view === 'agents') main = html`<${AgentsView} me=${session.actor} />`;
  else if (route.view === 'notfound')
    main = html`<p class="muted" role="alert">
      Nothing here: this address is not one the dashboard knows. <a href="#/">Back to the Lanes</a>
    </p>`;
  else if (laneId)
    main = html`<${Board} key=${laneId} laneId=${laneId} me=${session.actor} lanes=${lanes} />`;
  else main = html`<p class="muted">No Lanes yet: post one with <code>zz lane propose</code>.</p>`;
  const tab = (view, href, label) =>
    html`<a
      href=${href}
      aria-current=${route.view === view || (view === 'lanes' && (route.view === 'lane' || route.view === 'ask')) ? 'page' : undefined}
      >${label}</a
    >`;
  return html`<header class="top">
      <h1><a href="#/">zz</a> <small>${session.repo}</small></h1>
      <nav aria-label="Views">
        ${tab('lanes', '#/', 'Lanes')} ${tab('ladder', '#/ladder', 'Ladder')}
        ${tab('agents', '#/agents', 'Agents')}
      </nav>
      <span class="me">${session.actor}</span>
      <${LiveStatus} />
      <button type="button" class="link" onClick=${signOut}>Sign out</button>
    </header>
    <div class="layout">
      ${
        (route.view === 'lanes' || route.view === 'lane' || route.view === 'ask') &&
        html`<aside class="side" aria-label="Lanes">
          <${LaneList} lanes=${lanes} current=${laneId} />
        </aside>`
      }
      <main>
        <${RepoHealth} state=${repoState} />
        <${ErrorBox} error=${error} />
        ${main}
      </main>
    </div>`;
}

function SignedOut({ error }) {
  return html`<main class="signed-out">
    <h1>zz dashboard</h1>
    <${ErrorBox} error=${error} />
    <p>
      Run <code>zz dashboard</code> in your checkout to sign in; it prints a link that works once.
    </p>
  </main>`;
}

/**
 * Asks whether to sign in as the code's actor (switching from `now` when signed in); resolves
 * true to go ahead. Asked signed out too: any page can open a link with its own code.
 */
function confirmSignIn(root, { signed_in_as: now, code_signs_in_as: next }) {
  const who = html`<strong><${Plain} text=${next.actor} /></strong>`;
  // htm drops whitespace that holds a line break, so the sentences (each on one line, where
  // prettier cannot wrap them) are joined by explicit spaces: "…repo.Go ahead" otherwise.
  const sentences = [
    html`This link signs in as ${who} on <${Plain} text=${next.repo} />.`,
    now && html`This browser is signed in as <strong><${Plain} text=${now.actor} /></strong>.`,
    html`Go ahead only if you ran <code>zz dashboard</code> for this link yourself.`,
  ].filter(Boolean);
  return new Promise((resolve) =>
    render(
      html`<main class="signed-out switch" role="dialog" aria-labelledby="switch-title">
        <h1 id="switch-title">${now ? 'Switch dashboard session?' : html`Sign in as ${who}?`}</h1>
        <p>${sentences.map((sentence, i) => [i ? ' ' : '', sentence])}</p>
        ${
          now
            ? html`<button type="button" onClick=${() => resolve(false)} autofocus>
                  Stay signed in as <${Plain} text=${now.actor} />
                </button>
                <button type="button" class="link" onClick=${() => resolve(true)}>
                  Switch to <${Plain} text=${next.actor} />
                </button>`
            : html`<button type="button" onClick=${() => resolve(true)}>
                  Sign in as <${Plain} text=${next.actor} />
                </button>
                <button type="button" class="link" onClick=${() => resolve(false)}>Cancel</button>`
        }
      </main>`,
      root,
    ),
  );
}

async function start() {
  const root = document.getElementById('app');
  // Preact 11 renders beside existing children: drop the boot message first.
  root.textContent = '';
  const m = /^#code=([A-Za-z0-9_-]+)$/.exec(location.hash);
  let loginError = null;
  if (m) {
    // Wipe the code from the address bar and history before anything else can see it.
    history.replaceState(null, '', location.pathname);
    try {
      await redeemCode(m[1]);
    } catch (e) {
      // Not signed in here as the code's actor: any page can open a link with its own code
      // (login CSRF), so the person chooses. Declining leaves the code unused; it expires
      // within a minute.
      if (e.code === 'conflict' && e.details?.code_signs_in_as) {
        const go = await confirmSignIn(root, e.details);
        render(null, root);
        if (go) await redeemCode(m[1], true).catch((e2) => (loginError = e2));
      } else loginError = e;
    }
  }
  let session = null;
  const hadKey = sessionKey() !== null;
  try {
    session = await getSession();
  } catch (e) {
    // A page that held a session key was signed in: say why it no longer is (ended, revoked,
    // or its cookie replaced from another port). A page that never signed in just shows how.
    if (!loginError && (e.code !== 'unauthorized' || hadKey)) loginError = e;
  }
  if (!session) {
    render(html`<${SignedOut} error=${loginError} />`, root);
    return;
  }
  setRepo(session.repo);
  connect(session.repo);
  render(html`<${Shell} session=${session} />`, root);
}

start();
