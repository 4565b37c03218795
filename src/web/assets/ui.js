// Shared pieces: the html tag, a virtualised list, times and error boxes.
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { INVISIBLE_CLASS, UNSAFE_CLASS } from './control-chars.js';

export const html = htm.bind(h);

/** A clock that ticks once a second while mounted (lease countdowns). */
export function useNow(ms = 1000) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function countdown(iso, now) {
  if (!iso) return '';
  const s = Math.round((Date.parse(iso) - now) / 1000);
  if (s <= 0) return 'lease expired';
  const m = Math.floor(s / 60);
  if (m >= 60) return `${Math.floor(m / 60)}h ${m % 60}m left`;
  return m > 0 ? `${m}m ${String(s % 60).padStart(2, '0')}s left` : `${s}s left`;
}

export function ago(iso, now = Date.now()) {
  if (!iso) return 'never';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

// Characters shown as marks, never as themselves: the set the CLI neutralises, served by the
// daemon from its one definition (control-chars.js is generated from
// src/schema/control-chars.ts), less TAB and LF, which lay text out here. Bidirectional
// controls reorder the text after them on screen: in a diff a reviewer would read code in an
// order other than the one that runs ("Trojan Source"), in a body a name other than the
// file's; bidi marks (U+200E/F, U+061C) shift it less visibly, U+2028/U+2029 break a line where
// none shows, and control characters hide or garble what follows.
const MARKED = new RegExp(`[${UNSAFE_CLASS}]`);
const MARKED_SPLIT = new RegExp(`([${UNSAFE_CLASS}])`);

const INVISIBLE = new RegExp(`[${INVISIBLE_CLASS}]`);

/** Whether text has bidi controls or marks, or line separators (a diff warns of them). */
export const hasInvisible = (text) => INVISIBLE.test(text);

/** Text with each such character replaced by a visible mark (e.g. ⟨U+202E⟩). */
export function Plain({ text }) {
  if (!MARKED.test(text)) return text;
  const parts = text.split(MARKED_SPLIT);
  return parts.map((part, i) => {
    if (i % 2 === 0) return part;
    // A CR directly before an LF, or ending the text (a diff's line), only ends a line.
    const next = parts[i + 1];
    if (part === '\r' && (next.startsWith('\n') || (next === '' && i + 2 === parts.length)))
      return part;
    const code = `U+${part.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
    return html`<mark class="bidi" title="invisible or control character ${code}">⟨${code}⟩</mark>`;
  });
}

export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message ?? String(error)}</p>`;
}

/**
 * Renders only the rows in view (plus a margin) of a long list of fixed-height rows, so a
 * column of thousands of Asks costs as much as one screenful.
 */
export function VirtualList({ items, rowHeight, render, label, overscan = 6 }) {
  const box = useRef(null);
  const [top, setTop] = useState(0);
  const [height, setHeight] = useState(600);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const measure = () => setHeight(el.clientHeight || 600);
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
  const last = Math.min(items.length, Math.ceil((top + height) / rowHeight) + overscan);
  const rows = [];
  for (let i = first; i < last; i++) {
    rows.push(
      html`<li
        key=${i}
        class="vrow"
        style=${{ top: `${i * rowHeight}px`, height: `${rowHeight}px` }}
      >
        ${render(items[i], i)}
      </li>`,
    );
  }
  return html`<div class="vlist" ref=${box} onScroll=${(e) => setTop(e.currentTarget.scrollTop)}>
    <ul aria-label=${label} style=${{ height: `${items.length * rowHeight}px` }}>
      ${rows}
    </ul>
  </div>`;
}
