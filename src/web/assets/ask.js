// One Ask: body and payload, its history, what blocks it and what it blocks, its holder's
// lease, the changeset diff per file and hunk, and the actions its viewer may take. Opening it
// is one ask_get (the Ask, a page of what it blocks, a page of its history), never the Lane.
import { useEffect, useState } from 'preact/hooks';
import { call } from './api.js';
import { askIdsOf, onCommit } from './live.js';
import { ago, countdown, ErrorBox, hasInvisible, html, Plain, useNow } from './ui.js';

/** Asks it blocks and history entries per request: a page, not the Lane. */
export const DETAIL_PAGE = 100;

/**
 * The Ask with the first page of the Asks that depend on it and of its history: one bounded
 * request (ask_get), however long the Lane. The rest comes a page at a time, on request.
 */
async function loadAsk(laneId, askId) {
  const r = await call('ask_get', {
    lane_id: laneId,
    ask_id: askId,
    include_dependents: true,
    include_history: true,
    limit: DETAIL_PAGE,
  });
  return {
    ask: r.ask,
    blocks: r.dependents,
    nextBlocks: r.next_dependents_offset,
    history: r.history,
    nextHistory: r.next_history_offset,
  };
}

/** The next page of one list ('dependents' or 'history'), from `offset`. */
async function morePage(laneId, askId, list, offset) {
  const r = await call('ask_get', {
    lane_id: laneId,
    ask_id: askId,
    [`include_${list}`]: true,
    [`${list}_offset`]: offset,
    limit: DETAIL_PAGE,
  });
  return { items: r[list], next: r[`next_${list}_offset`] };
}

function MoreButton({ next, label, onMore, busy }) {
  if (next === null || next === undefined) return null;
  return html`<p>
    <button type="button" class="more" disabled=${busy} onClick=${onMore}>${label}</button>
  </p>`;
}

function AskLink({ a }) {
  return html`<a class="dep" href=${`#/ask/${a.lane_id ?? ''}/${a.ask_id}`}>
    <code>${a.ask_id}</code> ${a.title ? html`<span><${Plain} text=${a.title} /></span>` : ''}
    <span class=${`state s-${a.state}`}>${a.state}${a.outcome ? ` (${a.outcome})` : ''}</span>
  </a>`;
}

function DependencyGraph({ ask, blocks, more }) {
  const by = (ask.blocked_by ?? []).map((b) => ({ ...b, lane_id: ask.lane_id }));
  const deps = (ask.depends_on ?? []).filter((d) => !by.some((b) => b.ask_id === d));
  return html`<section class="graph" aria-label="Dependencies">
    <div class="graph-col">
      <h4>Blocked by</h4>
      ${by.length === 0 && deps.length === 0 && html`<p class="muted">nothing</p>`}
      ${by.map((b) => html`<${AskLink} a=${b} />`)}
      ${deps.map(
        (d) => html`<${AskLink} a=${{ ask_id: d, lane_id: ask.lane_id, state: 'answered' }} />`,
      )}
    </div>
    <div class="graph-arrow" aria-hidden="true">→</div>
    <div class="graph-col graph-self"><${AskLink} a=${ask} /></div>
    <div class="graph-arrow" aria-hidden="true">→</div>
    <div class="graph-col">
      <h4>Blocks</h4>
      ${blocks.length === 0 && html`<p class="muted">nothing</p>`}
      ${blocks.map((b) => html`<${AskLink} a=${b} />`)} ${more}
    </div>
  </section>`;
}

function Diff({ changesetId }) {
  const [diff, setDiff] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    // Another changeset (the page moved to another Ask): the last one's diff or error goes, and
    // its answer, if it lands late, is dropped rather than shown under this header.
    let current = true;
    setDiff(null);
    setError(null);
    call('git_diff', { commit: `refs/zz/changesets/${changesetId}` }).then(
      (d) => current && setDiff(d),
      (e) => current && setError(e),
    );
    return () => {
      current = false;
    };
  }, [changesetId]);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!diff) return html`<p class="muted">Loading the diff…</p>`;
  return html`<div class="diff">
    ${diff.files.map(
      (f) =>
        html`<details open class="diff-file">
          <summary><code>${f.path}</code> <span class="muted">${f.status}</span></summary>
          ${f.binary && html`<p class="muted">binary file</p>`}
          ${
            f.hunks.some((hk) => hk.lines.some(hasInvisible)) &&
            html`<p class="bidi-warning" role="note">
              This file has invisible bidirectional or line-breaking characters (marked ⟨U+…⟩): the
              code may run in an order other than it reads.
            </p>`
          }
          ${f.hunks.map(
            (hk) =>
              html`<pre
                class="hunk"
              ><span class="hunk-head">@@ -${hk.old_start},${hk.old_lines} +${hk.new_start},${hk.new_lines} @@</span>
${hk.lines.map(
                (l) =>
                  html`<span class=${l[0] === '+' ? 'add' : l[0] === '-' ? 'del' : 'ctx'}
                    ><${Plain} text=${l} />
                  </span>`,
              )}</pre>`,
          )}
        </details>`,
    )}
    ${diff.truncated && html`<p class="muted">(diff truncated)</p>`}
  </div>`;
}

export function AskView({ laneId, askId, me }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [actionError, setActionError] = useState(null);
  const [tick, setTick] = useState(0);
  const [busy, setBusy] = useState(false);
  const now = useNow();
  useEffect(() => {
    let live = true;
    loadAsk(laneId, askId).then(
      (d) => live && (setData(d), setError(null)),
      (e) => live && setError(e),
    );
    const off = onCommit((c) => {
      if (c.ref === `refs/zz/lanes/${laneId}` && askIdsOf(c).size > 0) setTick((t) => t + 1);
    });
    return () => {
      live = false;
      off();
    };
  }, [laneId, askId, tick]);

  const release = async () => {
    setActionError(null);
    try {
      await call('ask_release', { lane_id: laneId, ask_id: askId });
      setTick((t) => t + 1);
    } catch (e) {
      setActionError(e);
    }
  };

  // The next page of what it blocks or of its history, added below what is shown.
  // One page at a time: a second click while one loads would add the same page twice.
  const more = (list, items, next) => async () => {
    if (busy) return;
    setBusy(true);
    setActionError(null);
    try {
      const page = await morePage(laneId, askId, list, data[next]);
      setData((d) => ({ ...d, [items]: [...d[items], ...page.items], [next]: page.next }));
    } catch (e) {
      setActionError(e);
    } finally {
      setBusy(false);
    }
  };

  if (error) return html`<section class="ask"><${ErrorBox} error=${error} /></section>`;
  if (!data) return html`<section class="ask"><p class="muted">Loading ${askId}…</p></section>`;
  const { ask, blocks, history } = data;
  const changeset = ask.answer?.changeset_id ?? ask.payload?.changeset_id ?? null;
  return html`<section class="ask" aria-label=${`Ask ${askId}`}>
    <p><a href=${`#/lane/${laneId}`}>← ${laneId}</a></p>
    <h2><${Plain} text=${ask.title} /></h2>
    <p class="card-meta">
      <code>${ask.ask_id}</code>
      <span class=${`state s-${ask.state}`}>${ask.state}</span>
      <span class="prio">P${ask.priority}</span>
      <span class="kind">${ask.kind}</span>
      <span>posted by ${ask.posted_by} ${ago(ask.posted_at, now)}</span>
      ${ask.state === 'claimed' && ask.holder && html`<span class="holder">held by ${ask.holder}</span>`}
      ${ask.state === 'claimed' && html`<span class="lease">${countdown(ask.lease_expires_at, now)}</span>`}
    </p>
    ${
      ask.state === 'claimed' &&
      ask.holder === me &&
      html`<p><button type="button" onClick=${release}>Release my claim</button></p>`
    }
    <${ErrorBox} error=${actionError} />
    ${ask.body && html`<pre class="body"><${Plain} text=${ask.body} /></pre>`}
    ${
      Object.keys(ask.payload ?? {}).length > 0 &&
      html`<details open>
        <summary>Payload</summary>
        <pre class="payload"><${Plain} text=${JSON.stringify(ask.payload, null, 2)} /></pre>
      </details>`
    }
    ${
      ask.cancelled &&
      html`<div class="panel answer">
        <strong>cancelled</strong> by ${ask.cancelled.by}, ${ago(ask.cancelled.at, now)}
        ${ask.cancelled.reason && html`<pre><${Plain} text=${ask.cancelled.reason} /></pre>`}
      </div>`
    }
    ${
      ask.answer &&
      html`<div class="panel answer">
        <strong>${ask.answer.outcome}</strong>
        ${` by ${ask.answer.answered_by}, ${ago(ask.answer.answered_at, now)}`}
        ${ask.answer.result && html`<pre><${Plain} text=${ask.answer.result} /></pre>`}
      </div>`
    }
    <h3>Dependencies</h3>
    <${DependencyGraph}
      ask=${ask}
      blocks=${blocks}
      more=${html`<${MoreButton}
        next=${data.nextBlocks}
        label="More it blocks"
        busy=${busy}
        onMore=${more('dependents', 'blocks', 'nextBlocks')}
      />`}
    />
    ${
      changeset &&
      html`<h3>Changeset <code>${changeset}</code></h3>
        <${Diff} changesetId=${changeset} />`
    }
    <h3>History</h3>
    <ol class="history">
      ${history.map(
        (hi) =>
          html`<li>
            <time datetime=${hi.time} title=${hi.time}>${ago(hi.time, now)}</time>
            <strong>${hi.op}</strong> by ${hi.actor}
            ${hi.revision && html`<code class="muted">${hi.revision.slice(0, 10)}</code>`}
            ${hi.rejected && html`<span class="rejected">${refusal(hi.rejected)}</span>`}
          </li>`,
      )}
    </ol>
    <${MoreButton}
      next=${data.nextHistory}
      label="More history"
      busy=${busy}
      onMore=${more('history', 'history', 'nextHistory')}
    />
  </section>`;
}

/** Why the fold refused an op that arrived by sync (DESIGN §7): the loser sees the winner. */
function refusal(r) {
  if (r.reason === 'claim_lost') return `claim lost to ${r.winner ?? 'another holder'}`;
  if (r.reason === 'lane_closed')
    return `refused: the lane was closed first by ${r.closed_by ?? 'a coordinator'}`;
  if (r.reason === 'conflicting_answer')
    return `conflicting answer: sent to ${r.resolve_ask_id ?? 'a resolve_conflict Ask'}`;
  return `refused: ${String(r.reason).replace(/_/g, ' ')}${r.winner ? ` (held by ${r.winner})` : ''}`;
}
