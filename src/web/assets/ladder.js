// The Ladder: the rung tree (folders open on demand, stale rungs marked), one rung with its
// anchor commit, and search across every repository the daemon serves.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { call, callAll } from './api.js';
import { onCommit } from './live.js';
import { ErrorBox, html, Plain } from './ui.js';

function buildTree(rungs) {
  const root = { name: '', path: '', rung: null, children: new Map() };
  for (const r of rungs) {
    let node = root;
    const parts = r.path.split('/');
    parts.forEach((part, i) => {
      const path = parts.slice(0, i + 1).join('/');
      if (!node.children.has(part))
        node.children.set(part, { name: part, path, rung: null, children: new Map() });
      node = node.children.get(part);
    });
    node.rung = r;
  }
  return root;
}

function staleCount(node) {
  let n = node.rung?.stale ? 1 : 0;
  for (const c of node.children.values()) n += staleCount(c);
  return n;
}

function TreeNode({ node, selected, depth }) {
  const [open, setOpen] = useState(depth < 1);
  const kids = [...node.children.values()].sort(
    (a, b) => (b.children.size > 0) - (a.children.size > 0) || a.name.localeCompare(b.name),
  );
  const stale = useMemo(() => staleCount(node), [node]);
  const label = html`<a
      href=${`#/ladder/${encodeURIComponent(node.path)}`}
      class=${selected === node.path ? 'selected' : ''}
      >${node.name}</a
    >${node.rung?.stale && html` <span class="stale" title="anchor differs from the branch head">stale</span>`}${
      !node.rung?.stale &&
      stale > 0 &&
      html` <span class="stale-count" title="stale rungs below">${stale} stale</span>`
    }`;
  if (kids.length === 0) return html`<li class="leaf">${label}</li>`;
  return html`<li>
    <button
      type="button"
      class="twisty"
      aria-expanded=${open}
      aria-label=${`${open ? 'Collapse' : 'Expand'} ${node.path}`}
      onClick=${() => setOpen(!open)}
    >
      ${open ? '▾' : '▸'}
    </button>
    ${label}
    ${
      open &&
      html`<ul>
        ${kids.map((k) => html`<${TreeNode} key=${k.path} node=${k} selected=${selected} depth=${depth + 1} />`)}
      </ul>`
    }
  </li>`;
}

function Rung({ path }) {
  const [rung, setRung] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setRung(null);
    setError(null);
    call('ladder_read', { path, limit: 20000 }).then(setRung, setError);
  }, [path]);
  if (error) return html`<${ErrorBox} error=${error} />`;
  if (!rung) return html`<p class="muted">Loading ${path}…</p>`;
  const r = rung.rung;
  return html`<article class="rung panel" aria-label=${`Rung ${path}`}>
    <h3><${Plain} text=${r.title} /> <small>${r.kind}</small></h3>
    <p class="card-meta">
      <code>${r.path}</code>
      ${r.anchor && html`<span>anchored at <code title=${r.anchor.commit}>${r.anchor.commit.slice(0, 12)}</code></span>`}
      ${
        rung.stale
          ? html`<span class="stale">stale: the branch has moved since</span>`
          : html`<span class="fresh">current</span>`
      }
      <span>by ${r.author}</span>
    </p>
    <p><${Plain} text=${r.summary} /></p>
    ${r.detail && html`<pre class="body"><${Plain} text=${r.detail} /></pre>`}
  </article>`;
}

function Search({ repo }) {
  const [hits, setHits] = useState(null);
  const [error, setError] = useState(null);
  const submit = async (e) => {
    e.preventDefault();
    const q = String(new FormData(e.currentTarget).get('q') || '').trim();
    if (!q) return;
    setError(null);
    try {
      setHits((await call('ladder_search', { query: q, limit: 20 })).hits);
    } catch (err) {
      setError(err);
    }
  };
  return html`<form class="search" role="search" onSubmit=${submit}>
      <input
        name="q"
        type="search"
        placeholder="Search the Ladders you may read"
        aria-label="Search the Ladder"
      />
      <button type="submit">Search</button>
    </form>
    <${ErrorBox} error=${error} />
    ${
      hits &&
      html`<ol class="hits" aria-label="Search results">
        ${hits.length === 0 && html`<li class="muted">no matches</li>`}
        ${hits.map(
          (hit) =>
            html`<li>
              <span class="repo">${hit.repo}</span>
              ${
                // A session reads only its own repository: another one's hit shows what the
                // search returned (opening its path here would show this repository's rung).
                hit.repo === repo
                  ? html`<a href=${`#/ladder/${encodeURIComponent(hit.path)}`}>${hit.path}</a>`
                  : html`<code>${hit.path}</code>`
              }
              —
              <${Plain} text=${hit.title} />${hit.stale && html` <span class="stale">stale</span>`}
              <div class="muted"><${Plain} text=${hit.summary} /></div>
              ${
                hit.repo !== repo &&
                hit.anchor &&
                html`<div class="muted">
                  anchored at
                  <code title=${hit.anchor.commit}>${hit.anchor.commit.slice(0, 12)}</code>
                  · open it from a dashboard of ${hit.repo}
                </div>`
              }
            </li>`,
        )}
      </ol>`
    }`;
}

export function LadderView({ path, repo }) {
  const [tree, setTree] = useState(null);
  const [error, setError] = useState(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    // A Ladder past one page (4 MiB) comes in several; a newer read (the Ladder moved) wins.
    let current = true;
    callAll('ladder_tree', 'rungs', {}, null).then(
      (t) => current && setTree(t),
      (e) => current && setError(e),
    );
    return () => (current = false);
  }, [tick]);
  useEffect(() => onCommit((c) => c.ref === 'refs/zz/ladder' && setTick((t) => t + 1)), []);
  const root = useMemo(() => (tree ? buildTree(tree.rungs) : null), [tree]);
  return html`<section class="ladder" aria-label="Ladder">
    <${Search} repo=${repo} />
    <${ErrorBox} error=${error} />
    <div class="split">
      <nav class="tree" aria-label="Ladder tree">
        ${!root && !error && html`<p class="muted">Loading the Ladder…</p>`}
        ${root && root.children.size === 0 && html`<p class="muted">No Ladder yet: run <code>zz ladder build</code>.</p>`}
        ${
          root &&
          html`<ul>
            ${[...root.children.values()].map(
              (k) => html`<${TreeNode} key=${k.path} node=${k} selected=${path} depth=${0} />`,
            )}
          </ul>`
        }
      </nav>
      <div class="detail">
        ${path ? html`<${Rung} path=${path} />` : html`<p class="muted">Pick a rung.</p>`}
      </div>
    </div>
  </section>`;
}
