// The Lanes board: a Lane's Asks in three columns (open, claimed, answered), filtered by mine,
// kind and holder, kept current from the event stream without a reload.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { call, coalesced, hasTool } from './api.js';
import { askIdsOf, onCommit } from './live.js';
import { byPriorityThenAge, columnOf, eachAskPage, leaseOver } from './lanes.js';
import { countdown, ErrorBox, html, Plain, useNow, VirtualList } from './ui.js';

const COLUMNS = ['open', 'claimed', 'answered'];
const ROW = 78;

function Card({ ask, now }) {
  const blocked = ask.blocked_by?.filter((b) => b.state !== 'answered') ?? [];
  return html`<a class=${`card p${ask.priority}`} href=${`#/ask/${ask.lane_id}/${ask.ask_id}`}>
    <span class="card-title"><${Plain} text=${ask.title} /></span>
    <span class="card-meta">
      <span class="prio" title="priority">P${ask.priority}</span>
      <span class="kind">${ask.kind}</span>
      ${ask.state === 'claimed' && ask.holder && html`<span class="holder">${ask.holder}</span>`}
      ${
        ask.state === 'claimed' &&
        html`<span class=${leaseOver(ask, now) ? 'lease expired' : 'lease'}>
          ${countdown(ask.lease_expires_at, now)}</span
        >`
      }
      ${ask.answer && html`<span class="outcome">${ask.answer.outcome}</span>`}
      ${ask.state === 'cancelled' && html`<span class="outcome cancelled">cancelled</span>`}
      ${
        blocked.length > 0 &&
        html`<span class="blocked" title=${blocked.map((b) => b.ask_id).join(', ')}
          >blocked by ${blocked.map((b) => b.ask_id).join(', ')}</span
        >`
      }
    </span>
  </a>`;
}

function PostAsk({ lane, onDone }) {
  const [error, setError] = useState(null);
  // `autofocus` works only once per document: focus the title ourselves when the form opens.
  const title = useRef(null);
  useEffect(() => title.current?.focus(), []);
  const [busy, setBusy] = useState(false);
  const kinds = Object.keys(lane?.ask_kinds ?? {});
  const submit = async (e) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget);
    const deps = String(f.get('depends_on') || '')
      .split(/[\s,]+/)
      .filter(Boolean);
    setBusy(true);
    setError(null);
    try {
      await call('ask_post', {
        lane_id: lane.lane_id,
        kind: String(f.get('kind')),
        title: String(f.get('title')),
        body: String(f.get('body') || ''),
        priority: Number(f.get('priority')),
        ...(deps.length ? { depends_on: deps } : {}),
      });
      onDone();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const onKeyDown = (e) => e.key === 'Escape' && onDone();
  return html`<form
    class="panel post-ask"
    onSubmit=${submit}
    onKeyDown=${onKeyDown}
    aria-label="Post an Ask"
  >
    <label>Title <input name="title" required maxlength="300" ref=${title} /></label>
    <label>Kind <input name="kind" list="ask-kinds" value="work" required /></label>
    <datalist id="ask-kinds">
      ${['work', ...kinds].map((k) => html`<option value=${k} />`)}
    </datalist>
    <label
      >Priority
      <select name="priority">
        ${[0, 1, 2, 3, 4].map((p) => html`<option value=${p} selected=${p === 2}>P${p}</option>`)}
      </select></label
    >
    <label>Depends on <input name="depends_on" placeholder="ask-… ask-…" /></label>
    <label class="wide">Body <textarea name="body" rows="4"></textarea></label>
    <div class="row">
      <button type="submit" disabled=${busy}>Post Ask</button>
      <button type="button" onClick=${onDone}>Cancel</button>
    </div>
    <${ErrorBox} error=${error} />
  </form>`;
}

export function Board({ laneId, me, lanes }) {
  const asks = useRef(new Map());
  const [version, setVersion] = useState(0);
  const [lane, setLane] = useState(null);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState(null);
  const [posting, setPosting] = useState(false);
  const [filter, setFilter] = useState({ mine: false, kind: '', holder: '' });
  const now = useNow();

  // Loads (or reloads) every page; the first small page paints the first screen.
  const reload = useRef(null);
  useEffect(() => {
    let cancelled = false;
    let running = null;
    let again = false;
    const load = async (fresh) => {
      if (running) {
        again = true;
        return running;
      }
      running = (async () => {
        const seen = new Map();
        try {
          await eachAskPage(
            laneId,
            (page, first) => {
              if (first) setLane(page.lane);
              for (const a of page.asks) seen.set(a.ask_id, a);
              if (fresh || first) {
                // Show what has arrived; on a reload keep older Asks until replaced.
                for (const a of page.asks) asks.current.set(a.ask_id, a);
                setVersion((v) => v + 1);
                setLoading(false);
              }
            },
            () => cancelled,
          );
          if (cancelled) return;
          asks.current = seen;
          setVersion((v) => v + 1);
          setError(null);
        } catch (e) {
          if (!cancelled) setError(e);
        } finally {
          setLoading(false);
          running = null;
          if (again && !cancelled) {
            again = false;
            load(false);
          }
        }
      })();
      return running;
    };
    asks.current = new Map();
    setLoading(true);
    setLane(null);
    load(true);
    reload.current = () => load(false);
    // The Asks commits touched since the last update. One update runs at a time, and one more
    // after it whatever came meanwhile (api.js coalesced): an ask_get chain per commit stacked
    // up under a burst, and an older chain answering last put back an Ask's older state.
    const touchedSince = new Set();
    let reloadAll = false;
    const update = coalesced(async () => {
      const ids = [...touchedSince];
      const whole = reloadAll;
      touchedSince.clear();
      reloadAll = false;
      if (cancelled) return;
      // With ask_get, fetch just the Asks that changed (and those they block); else re-page.
      // A load in flight read pages from before these commits: it is asked to read again.
      if (!whole && !running && ids.length > 0 && ids.length <= 20 && (await hasTool('ask_get'))) {
        try {
          for (const id of ids) {
            const r = await call('ask_get', { lane_id: laneId, ask_id: id });
            if (cancelled) return;
            const a = r.ask ?? r;
            asks.current.set(a.ask_id, a);
          }
          setVersion((v) => v + 1);
          return;
        } catch {
          /* fall back to a reload */
        }
      }
      await load(false);
    });
    const off = onCommit((commit) => {
      if (commit.ref !== `refs/zz/lanes/${laneId}`) return;
      const touched = askIdsOf(commit);
      // Asks that depend on a touched one show its state in blocked_by: refresh them too.
      for (const a of asks.current.values())
        if (a.depends_on?.some((d) => touched.has(d))) touched.add(a.ask_id);
      if (touched.size === 0) reloadAll = true;
      for (const id of touched) touchedSince.add(id);
      update();
    });
    return () => {
      cancelled = true;
      off();
    };
  }, [laneId]);

  const all = useMemo(() => [...asks.current.values()], [version]);
  const kinds = useMemo(() => [...new Set(all.map((a) => a.kind))].sort(), [all]);
  const holders = useMemo(
    () => [...new Set(all.map((a) => a.holder).filter(Boolean))].sort(),
    [all],
  );
  // Leases run out between reads: count the lapsed ones each tick (cheap) and re-sort the
  // columns only when that count moves.
  const lapsed = useMemo(
    () => all.reduce((n, a) => n + (a.state === 'claimed' && leaseOver(a, now) ? 1 : 0), 0),
    [all, now],
  );
  const columns = useMemo(() => {
    const out = { open: [], claimed: [], answered: [] };
    const at = Date.now();
    for (const a of all) {
      if (filter.mine && a.holder !== me && a.posted_by !== me) continue;
      if (filter.kind && a.kind !== filter.kind) continue;
      if (filter.holder && a.holder !== filter.holder) continue;
      out[columnOf(a, at)].push(a);
    }
    for (const c of COLUMNS) out[c].sort(byPriorityThenAge);
    return out;
  }, [all, filter, me, lapsed]);
  const summary = lanes.find((l) => l.lane_id === laneId);

  return html`<section class="board" aria-label=${`Lane ${laneId}`}>
    <header class="board-head">
      <h2><${Plain} text=${lane?.title ?? laneId} /> <small>${laneId}</small></h2>
      ${
        summary &&
        html`<span class="counts"
          >${`${summary.counts.open} open · ${summary.counts.claimed} claimed · ${summary.counts.answered} answered${summary.counts.cancelled ? ` · ${summary.counts.cancelled} cancelled` : ''}`}</span
        >`
      }
      <div class="filters" role="group" aria-label="Filters">
        <label
          ><input
            type="checkbox"
            checked=${filter.mine}
            onChange=${(e) => setFilter({ ...filter, mine: e.currentTarget.checked })}
          />
          Mine</label
        >
        <label
          >Kind
          <select
            value=${filter.kind}
            onChange=${(e) => setFilter({ ...filter, kind: e.currentTarget.value })}
          >
            <option value="">any</option>
            ${kinds.map((k) => html`<option value=${k}>${k}</option>`)}
          </select></label
        >
        <label
          >Holder
          <select
            value=${filter.holder}
            onChange=${(e) => setFilter({ ...filter, holder: e.currentTarget.value })}
          >
            <option value="">anyone</option>
            ${holders.map((k) => html`<option value=${k}>${k}</option>`)}
          </select></label
        >
        <button type="button" onClick=${() => setPosting(!posting)} aria-expanded=${posting}>
          New Ask
        </button>
      </div>
    </header>
    ${
      posting &&
      html`<${PostAsk}
        lane=${lane}
        onDone=${() => {
          setPosting(false);
          reload.current?.();
        }}
      />`
    }
    <${ErrorBox} error=${error} />
    ${
      loading && all.length === 0
        ? html`<p class="muted">Loading…</p>`
        : html`<div class="columns">
            ${COLUMNS.map(
              (c) =>
                html`<div class=${`column col-${c}`} data-state=${c}>
                  <h3>${c} <span class="n">${columns[c].length}</span></h3>
                  <${VirtualList}
                    label=${`${c} Asks`}
                    items=${columns[c]}
                    rowHeight=${ROW}
                    render=${(a) => html`<${Card} ask=${a} now=${now} />`}
                  />
                </div>`,
            )}
          </div>`
    }
  </section>`;
}
