import { useColor, type CliIO } from './io.js';
import { displayWidth, fitColumns, jsonText, neutralize, padColumns } from './terminal.js';
import { TOOL_RENDERERS } from './render-tools.js';

// Human output: compact tables for lists, `key: value` for objects, multi-line values as
// indented blocks, shown whole. A table cell holds one line: a value cut to fit is marked
// with `…` and a note under the table says how to see it whole. Every value passes through
// neutralize() (control characters shown, never obeyed). Colour only on a TTY and never with
// NO_COLOR. `--json` bypasses all of this.

export interface Style {
  color: boolean;
  /** stdout is a terminal (io.isTTY): else a file's content goes out exact (render-tools.ts). */
  tty?: boolean;
}

const bold = (s: string, st: Style) => (st.color ? `\x1b[1m${s}\x1b[22m` : s);
const dim = (s: string, st: Style) => (st.color ? `\x1b[2m${s}\x1b[22m` : s);

const PREFERRED: Record<string, string[]> = {
  lanes: ['lane_id', 'title', 'counts', 'closed', 'coordinators'],
  agents: ['name', 'actor', 'tokens', 'created_at', 'last_used_at', 'stored_here'],
  tokens: ['id', 'actor', 'name', 'created_at', 'last_used_at', 'active'],
  asks: ['ask_id', 'lane_id', 'kind', 'state', 'priority', 'holder', 'title'],
  follow_ups: ['ask_id', 'kind', 'state', 'title'],
  hits: ['repo', 'path', 'kind', 'score', 'summary'],
  rungs: ['path', 'kind', 'stale', 'summary'],
  commits: ['oid', 'author', 'message'],
  events: ['time', 'lane_id', 'op', 'actor', 'ask_id'],
  history: ['time', 'op', 'actor', 'ask_id'],
  files: ['path', 'status'],
};

/** Continuation fields and the flag that passes them back. */
const MORE: Record<string, string> = {
  next_offset: '--offset',
  next_cursor: '--cursor',
  next_asks_cursor: '--asks-cursor',
  next_history_cursor: '--history-cursor',
  next_asks_offset: '--asks-offset',
  next_history_offset: '--history-offset',
  next_dependents_offset: '--dependents-offset',
};

/** Columns whose values are paths: cut in the middle, keeping the file's name. */
const PATH_COLUMNS = new Set(['path']);

/** A value on one line, neutralised; `cut` is set when a line break forced a cut. */
function cell(
  v: unknown,
  max: number,
  where: 'end' | 'middle' = 'end',
): { text: string; cut: boolean } {
  let s: string;
  let cut = false;
  if (v === null || v === undefined) s = '-';
  else if (typeof v === 'string') {
    const nl = v.indexOf('\n');
    s = nl < 0 ? v : v.slice(0, nl);
    cut = nl >= 0 && nl < v.length - 1;
  } else if (Array.isArray(v)) s = v.length ? v.map((x) => cell(x, Infinity).text).join(', ') : '-';
  else if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    // A person shows as their name; a closure ({by, at, reason}) as when it happened.
    s =
      'name' in o && 'email' in o
        ? String(o.name)
        : 'by' in o && 'at' in o
          ? String(o.at)
          : Object.entries(o)
              .filter(([, x]) => typeof x !== 'object')
              .map(([k, x]) => `${k}=${String(x)}`)
              .join(' ') || '-';
  } else s = String(v);
  s = neutralize(s);
  if (displayWidth(s) > max) return { text: fitColumns(s, max, where), cut: true };
  return { text: cut ? s + ' …' : s, cut };
}

export function table(rows: Array<Record<string, unknown>>, cols: string[], st: Style): string {
  if (rows.length === 0) return dim('(none)', st) + '\n';
  let cut = false;
  const cells = rows.map((r) =>
    cols.map((c) => {
      const wide = ['title', 'summary', 'message', 'counts'].includes(c);
      const x = cell(r[c], wide ? 60 : 44, PATH_COLUMNS.has(c) ? 'middle' : 'end');
      cut ||= x.cut;
      return x.text;
    }),
  );
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => displayWidth(r[i]!))));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => padColumns(v, widths[i]!))
      .join('  ')
      .trimEnd();
  const note = cut ? dim('(… marks a value cut to fit; --json prints every value whole)', st) : '';
  return (
    [
      bold(line(cols.map((c) => c.toUpperCase())), st),
      ...cells.map(line),
      ...(note ? [note] : []),
    ].join('\n') + '\n'
  );
}

const isRows = (v: unknown): v is Array<Record<string, unknown>> =>
  Array.isArray(v) &&
  v.length > 0 &&
  v.every((x) => x !== null && typeof x === 'object' && !Array.isArray(x));

/** A multi-line string as an indented block under `key: |`, every line kept. */
function block(key: string, v: string, pad: string): string {
  const body = neutralize(v.endsWith('\n') ? v.slice(0, -1) : v, { multiline: true });
  return `${pad}${key}: |\n${body
    .split('\n')
    .map((l) => `${pad}  ${l}`)
    .join('\n')}\n`;
}

/**
 * Fields a person reading the page does not need as lines of their own: where the next page
 * starts (the hint under the page names the flag and value, and says nothing when there is
 * none: `next_cursor: -` above every list, and `zz git log`'s cursor of 150 characters printed
 * twice, read as noise in a first hour), and a count of more items when there are none
 * (`corrupt_more: 0`). `--json` keeps them all.
 */
const CONTINUATION = new Set([...Object.keys(MORE), 'lanes_next_cursor']);
const unsaid = (k: string, v: unknown, top: boolean) =>
  (top && CONTINUATION.has(k)) || (k.endsWith('_more') && v === 0);

function render(o: Record<string, unknown>, st: Style, pad: string): string {
  const scalars: string[] = [];
  let out = '';
  for (const [k, v] of Object.entries(o)) {
    if (unsaid(k, v, pad === '')) continue;
    const key = neutralize(k);
    if (isRows(v) || (Array.isArray(v) && v.length === 0 && k in PREFERRED)) {
      const rows = v as Array<Record<string, unknown>>;
      const cols = (
        PREFERRED[k] ??
        Object.keys(rows[0] ?? {})
          .filter((c) => typeof rows[0]![c] !== 'object')
          .slice(0, 6)
      ).filter((c) => rows.length === 0 || rows.some((r) => c in r));
      const t = table(rows, cols, st);
      out += `${pad}${bold(key, st)} (${rows.length})\n${pad ? t.replace(/^/gm, pad) : t}`;
    } else if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) {
      out += `${pad}${bold(key, st)}\n${render(v as Record<string, unknown>, st, pad + '  ')}`;
    } else if (typeof v === 'string' && v.replace(/\n$/, '').includes('\n')) {
      out += block(key, v, pad);
    } else {
      scalars.push(`${pad}${key}: ${cell(v, Infinity).text}`);
    }
  }
  return (scalars.length ? scalars.join('\n') + '\n' : '') + out;
}

/** Hints for paged results: which flag continues where this answer stopped. */
function moreHints(o: Record<string, unknown>, st: Style): string {
  const has = (k: string) => o[k] !== null && o[k] !== undefined;
  // A cursor holds its place while others write (ask_list's does); its offset twin does not,
  // and is named only where there is no cursor (ask_get's history and dependents have none:
  // a hint-less next_history_offset, left out above the page, was a page lost without a word).
  const twin = (k: string) => k.replace(/_offset$/, '_cursor');
  const hints = Object.entries(MORE)
    .filter(([k]) => has(k) && !(k.endsWith('_offset') && has(twin(k))))
    .map(([k, flag]) => `${flag} ${neutralize(String(o[k]))}`);
  // repo_state lists the first page of Lanes; its cursor continues in `zz lane list`.
  const lanes = has('lanes_next_cursor')
    ? dim(`(more Lanes: zz lane list --cursor ${neutralize(String(o.lanes_next_cursor))})`, st) +
      '\n'
    : '';
  return (
    (hints.length ? dim(`(more: pass ${hints.join(' or ')} for the next page)`, st) + '\n' : '') +
    lanes
  );
}

export function formatResult(result: unknown, st: Style): string {
  if (result === null || typeof result !== 'object') return neutralize(String(result)) + '\n';
  const o = result as Record<string, unknown>;
  return render(o, st, '') + moreHints(o, st);
}

/**
 * Prints a tool's result: JSON with `--json`; else the tool's own text form when it has one
 * (a file as its text, a diff as hunks), else the generic form above.
 */
export function print(io: CliIO, result: unknown, json: boolean, tool?: string): void {
  if (json) return io.stdout(jsonText(result) + '\n');
  const st = { color: useColor(io), tty: io.isTTY };
  const own = tool ? TOOL_RENDERERS[tool] : undefined;
  if (own && result && typeof result === 'object') {
    const r = own(result as Record<string, unknown>, st);
    const raw = r.raw && io.stdoutBytes ? r.raw : null;
    if (raw) io.stdoutBytes!(raw.bytes);
    else io.stdout(r.stdout);
    const note = raw ? raw.note : r.note;
    if (note) io.stderr(note);
    return;
  }
  io.stdout(formatResult(result, st));
}

export const NO_LADDER_HINT =
  'zz: this repository has no Ladder yet; build it with `zz ladder build`\n';

/** An empty answer that may mean there is no Ladder at all (then the CLI says how to build it). */
export function mayLackLadder(
  tool: string,
  args: Record<string, unknown>,
  result: Record<string, unknown>,
): boolean {
  if (args.repo !== undefined) return false;
  if (tool === 'ladder_search') return Array.isArray(result.hits) && result.hits.length === 0;
  return tool === 'ladder_tree' && result.revision === null;
}

export const NOT_INITIALISED_HINT =
  'zz: zz is not initialised in this checkout; run `zz init` (in a clone it adopts the zz state already on the remote)\n';

/**
 * An empty list of Lanes or Asks that may mean zz was never initialised here (a fresh clone of
 * a repository whose state is on the remote): then the CLI says so rather than let "(none)"
 * pass for the answer.
 */
export function mayLackInit(tool: string, result: Record<string, unknown>): boolean {
  const list = tool === 'lane_list' ? result.lanes : tool === 'ask_list' ? result.asks : null;
  return Array.isArray(list) && list.length === 0;
}
