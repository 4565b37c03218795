// Agents and tokens: who holds a token here, when each was last used, and (for owners)
// revoking them; granting ownership. Both go through the tools, so a refusal is the API's.
import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { ago, ErrorBox, html, useNow } from './ui.js';

function GrantRole({ onDone }) {
  const [error, setError] = useState(null);
  const [done, setDone] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    setError(null);
    setDone(null);
    try {
      const r = await call('role_grant', {
        grantee: String(f.get('grantee')),
        role: 'owner',
        revoke: f.get('revoke') === 'on',
      });
      setDone(`Owners now: ${r.owners.join(', ')}`);
      onDone();
    } catch (err) {
      setError(err);
    }
  };
  return html`<form class="panel grant" onSubmit=${submit} aria-label="Grant a role">
    <h3>Grant or revoke ownership</h3>
    <label>Actor <input name="grantee" required placeholder="someone@example.com" /></label>
    <label><input type="checkbox" name="revoke" /> revoke instead</label>
    <button type="submit">Apply</button>
    ${done && html`<p class="ok" role="status">${done}</p>`}
    <${ErrorBox} error=${error} />
  </form>`;
}

export function AgentsView({ me }) {
  const [data, setData] = useState(null);
  const [state, setState] = useState(null);
  const [error, setError] = useState(null);
  const [actionError, setActionError] = useState(null);
  const [tick, setTick] = useState(0);
  const now = useNow(10_000);
  useEffect(() => {
    call('token_list').then(setData, setError);
    call('repo_state').then(setState, () => {});
  }, [tick]);
  const revoke = async (t) => {
    setActionError(null);
    try {
      await call('token_revoke', { actor: t.actor, name: t.name });
      setTick((x) => x + 1);
    } catch (e) {
      setActionError(e);
    }
  };
  return html`<section class="agents" aria-label="Agents and tokens">
    <h2>Agents and tokens</h2>
    ${
      state &&
      html`<p class="muted">
        You are <strong>${me}</strong>${state.roles.owner ? ' (owner)' : ''} on ${state.repo}.
      </p>`
    }
    <${ErrorBox} error=${error} />
    <${ErrorBox} error=${actionError} />
    ${
      data &&
      html`<table class="tokens">
        <thead>
          <tr>
            <th>Actor</th>
            <th>Token</th>
            <th>Created</th>
            <th>Last used</th>
            <th></th>
          </tr>
        </thead>
        <tbody>
          ${data.tokens.map(
            (t) =>
              html`<tr class=${t.active ? 'active' : ''}>
                <td>
                  <span
                    class=${t.active ? 'dot on' : 'dot'}
                    aria-label=${t.active ? 'active' : 'idle'}
                  ></span
                  >${t.actor}
                </td>
                <td>${t.name}</td>
                <td>${ago(t.created_at, now)}</td>
                <td>${ago(t.last_used_at, now)}</td>
                <td>
                  ${
                    data.all &&
                    html`<button
                      type="button"
                      class="danger"
                      onClick=${() => revoke(t)}
                      aria-label=${`Revoke ${t.actor} ${t.name}`}
                    >
                      Revoke
                    </button>`
                  }
                </td>
              </tr>`,
          )}
        </tbody>
      </table>`
    }
    <${GrantRole} onDone=${() => setTick((x) => x + 1)} />
  </section>`;
}
