// The repository's health, from repo_state: what the daemon's syncing will not bring in. Each
// is a plain warning with what to do; a person behind the dashboard never sees the daemon's
// log, and without these a Lane not being shared looks like a quiet team.
import { html, Plain } from './ui.js';

// Spaces next to an element are written as strings: htm drops whitespace that runs into a
// line break, and the sentences read "fromorigin" otherwise.
function Refused({ r }) {
  // The daemon's own message says why and what to do (check the URL, or --allow-unrelated).
  return html`<p class="health-warning" role="alert">
    <strong
      >${'Sync with '}<code><${Plain} text=${r.remote} /></code>${' is refused. '}</strong
    >
    <${Plain} text=${r.message} />
  </p>`;
}

function Quarantined({ remote, refs }) {
  const n = refs.length;
  const zzSync = html`<code>zz sync <${Plain} text=${remote} /></code>`;
  return html`<div class="health-warning" role="alert">
    <p>
      <strong>
        ${`${n} ref${n === 1 ? '' : 's'} from `}<code><${Plain} text=${remote} /></code>
        ${' failed validation'}
      </strong>
      ${` and ${n === 1 ? 'is' : 'are'} kept aside, not merged (everything else syncs on). Run `}
      ${zzSync}
      ${" to see why; what a remote holds comes in once it passes (an unsigned op, say, once its author's key is registered with "}
      <code>zz key add</code>).
    </p>
    <ul>
      ${refs.map(
        (q) =>
          html`<li>
            <code><${Plain} text=${q.ref} /></code> (commit ${q.commit.slice(0, 10)})
          </li>`,
      )}
    </ul>
  </div>`;
}

// repo_state names the first 50 quarantined refs and counts the rest (quarantined_more).
function MoreQuarantined({ n }) {
  return html`<p class="health-warning" role="alert">
    <strong>${`${n} more ref${n === 1 ? '' : 's'} kept aside`}</strong>
    ${' (not listed here): '}<code>git for-each-ref refs/zz-quarantine/</code>${' lists them all.'}
  </p>`;
}

// Refs of ours the last sync with the authoritative remote did not push (repo_state.held_back):
// every other clone would refuse a commit on them, and nothing written after it there is
// shared either, so the team does not see this clone's later work on those refs.
function HeldBack({ refs, more }) {
  const n = refs.length + more;
  const remote = refs[0]?.remote ?? 'the remote';
  return html`<div class="health-warning" role="alert">
    <p>
      <strong>
        ${`${n} ref${n === 1 ? '' : 's'} of this clone not pushed to `}<code
          ><${Plain} text=${remote}
        /></code>
      </strong>
      ${': every other clone would refuse a commit on '}${n === 1 ? 'it' : 'them'}
      ${', and nothing written after it there is shared either. Run '}<code>zz sync</code>
      ${' to see what to do.'}
    </p>
    <ul>
      ${refs.map(
        (h) =>
          html`<li>
            <code><${Plain} text=${h.ref} /></code> (commit ${h.commit.slice(0, 10)}):
            ${' '}<${Plain} text=${h.reason} />
          </li>`,
      )}
    </ul>
  </div>`;
}

/** Nothing when all is well; otherwise one warning per refused remote and per remote with
 * quarantined refs, and one for what was held back. */
export function RepoHealth({ state }) {
  if (!state) return null;
  const refused = state.sync_refused ?? [];
  const more = state.quarantined_more ?? 0;
  const byRemote = new Map();
  for (const q of state.quarantined ?? []) {
    byRemote.set(q.remote, [...(byRemote.get(q.remote) ?? []), q]);
  }
  const held = state.held_back ?? [];
  const heldMore = state.held_back_more ?? 0;
  const anyHeld = held.length + heldMore > 0;
  if (refused.length === 0 && byRemote.size === 0 && more === 0 && !anyHeld) return null;
  return html`<section class="health" aria-label="Repository health">
    ${anyHeld && html`<${HeldBack} refs=${held} more=${heldMore} />`}
    ${refused.map((r) => html`<${Refused} r=${r} />`)}
    ${[...byRemote].map(([remote, refs]) => html`<${Quarantined} remote=${remote} refs=${refs} />`)}
    ${more > 0 && html`<${MoreQuarantined} n=${more} />`}
  </section>`;
}
