import { useColor, type CliIO } from './io.js';

// Human output: compact tables for lists, key: value for objects. Colour only on a TTY and
// never with NO_COLOR. `--json` bypasses all of this.

export interface Out {
  write(s: string): void;
}

export interface Style {
  color: boolean;
}

const bold = (s: string, st: Style) => (st.color ? `\x1b[1m${s}\x1b[22m` : s);
const dim = (s: string, st: Style) => (st.color ? `\x1b[2m${s}\x1b[22m` : s);

const PREFERRED: Record<string, string[]> = {
  lanes: ['lane_id', 'title', 'counts', 'coordinators'],
  asks: ['ask_id', 'kind', 'state', 'priority', 'holder', 'title'],
  follow_ups: ['ask_id', 'kind', 'state', 'title'],
  hits: ['repo', 'path', 'kind', 'score', 'summary'],
  rungs: ['path', 'kind', 'stale', 'summary'],
  commits: ['oid', 'author', 'message'],
  events: ['time', 'lane_id', 'op', 'actor', 'ask_id'],
  history: ['time', 'op', 'actor', 'ask_id'],
  files: ['path', 'status'],
};

function cell(v: unknown): string {
  if (v === null || v === undefined) return '-';
  if (typeof v === 'string') return v.split('\n')[0]!;
  if (Array.isArray(v)) return v.map(cell).join(', ');
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    if ('name' in o && 'email' in o) return String(o.name);
    return Object.entries(o)
      .filter(([, x]) => typeof x !== 'object')
      .map(([k, x]) => `${k}=${String(x)}`)
      .join(' ');
  }
  return String(v);
}

function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

export function table(rows: Array<Record<string, unknown>>, cols: string[], st: Style): string {
  if (rows.length === 0) return dim('(none)', st) + '\n';
  const cells = rows.map((r) =>
    cols.map((c) =>
      truncate(cell(r[c]), c === 'title' || c === 'summary' || c === 'message' ? 60 : 44),
    ),
  );
  const widths = cols.map((c, i) => Math.max(c.length, ...cells.map((r) => r[i]!.length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [bold(line(cols.map((c) => c.toUpperCase())), st), ...cells.map(line)].join('\n') + '\n';
}

export function formatResult(result: unknown, st: Style): string {
  if (result === null || typeof result !== 'object') return String(result) + '\n';
  const o = result as Record<string, unknown>;
  let out = '';
  const scalars: string[] = [];
  for (const [k, v] of Object.entries(o)) {
    if (Array.isArray(v) && v.every((x) => x && typeof x === 'object')) {
      const rows = v as Array<Record<string, unknown>>;
      const cols = (
        PREFERRED[k] ??
        Object.keys(rows[0] ?? {})
          .filter((c) => typeof rows[0]![c] !== 'object')
          .slice(0, 6)
      ).filter((c) => rows.length === 0 || c in rows[0]!);
      out += `${bold(k, st)} (${rows.length})\n${table(rows, cols, st)}`;
    } else if (v && typeof v === 'object' && !Array.isArray(v)) {
      out += `${bold(k, st)}\n`;
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) {
        if (k2 === 'history') continue;
        out += `  ${k2}: ${cell(v2)}\n`;
      }
    } else {
      scalars.push(`${k}: ${cell(v)}`);
    }
  }
  return (scalars.length ? scalars.join('\n') + '\n' : '') + out;
}

export function print(io: CliIO, result: unknown, json: boolean): void {
  if (json) io.stdout(JSON.stringify(result, null, 2) + '\n');
  else io.stdout(formatResult(result, { color: useColor(io) }));
}
