// Text bound for a terminal: every value the CLI prints may come from another user (a Lane
// title, an Ask body, a file in the repository), so control characters are shown, never
// obeyed. ESC/CSI/OSC sequences could retitle or clear a viewer's terminal, rewrite what was
// printed before (CR, backspace), ring the bell, or (bidi overrides such as U+202E) make text
// read differently from what it is. Each one is replaced by a visible escape (`\x1b`,
// `<U+202E>`); the set and neutralize() live in schema/control-chars.ts, which the daemon,
// `zz mcp` and the dashboard share. `--json` output escapes them as JSON (jsonText), the value
// stays exact.

import { INVISIBLE_CLASS, neutralize } from '../schema/control-chars.js';

export { neutralize };

// What JSON.stringify leaves raw of the set (it escapes C0 itself).
const JSON_UNSAFE = new RegExp(String.raw`[\x7f-\x9f${INVISIBLE_CLASS}]`, 'g');

/**
 * One line for a terminal or a log, control characters neutralised in the whole line (not
 * part by part, where a caller could forget the part that came from elsewhere): the one way
 * a long-running command's lines (zz serve's log) are written.
 */
export function lineWriter(
  write: (s: string) => void,
): (line: string, opts?: { multiline?: boolean }) => void {
  return (line, opts) => write(neutralize(line, opts) + '\n');
}

/**
 * A template for one line of a terminal's text: each inserted value is neutralised as one
 * line (a newline shown as `\n`), the literal parts are this program's. Text of several lines
 * is such lines joined: neutralising the whole text with its newlines kept let a newline in a
 * value (a git config user.email) forge a line of its own (`acting as: …`).
 */
export function oneLine(parts: TemplateStringsArray, ...values: unknown[]): string {
  let out = parts[0]!;
  values.forEach((v, i) => (out += neutralize(String(v)) + parts[i + 1]!));
  return out;
}

/**
 * `--json` output: JSON.stringify escapes C0 controls only; C1 controls and bidi marks are
 * escaped as well (`\u009b`, `\u202e`), so that JSON on a terminal is as safe as text. It
 * parses to the same value.
 */
export function jsonText(v: unknown, indent = 2): string {
  return JSON.stringify(v, null, indent || undefined).replace(
    JSON_UNSAFE,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

// Columns a character takes on a terminal: none for combining marks and variation selectors,
// two for East Asian wide and fullwidth characters and emoji shown as pictures, one for the
// rest. Tables padded by string length came out of line on a real repository's paths
// (`examples/downloads/files/CCTV大赛上海分赛区.txt`, prettier's `ignored/😁.js`) and authors
// (`刘星`). Control characters never reach it: neutralize() has made them visible escapes.
const ZERO_WIDTH = /[\p{Mn}\p{Me}\u200b]/u;
const WIDE =
  /[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{20000}-\u{3fffd}\p{Emoji_Presentation}]/u;

function charWidth(ch: string): number {
  if (ZERO_WIDTH.test(ch)) return 0;
  return WIDE.test(ch) ? 2 : 1;
}

/** The columns `s` takes on a terminal. */
export function displayWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch);
  return w;
}

/** The longest start of `s` that fits in `max` columns (a wide character is never split). */
function fitStart(s: string, max: number): string {
  let w = 0;
  let end = 0;
  for (const ch of s) {
    w += charWidth(ch);
    if (w > max) break;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** The longest end of `s` that fits in `max` columns. */
function fitEnd(s: string, max: number): string {
  const chars = [...s];
  let w = 0;
  let start = chars.length;
  while (start > 0 && w + charWidth(chars[start - 1]!) <= max) w += charWidth(chars[--start]!);
  return chars.slice(start).join('');
}

/**
 * `s` in at most `max` columns, a cut marked with `…`: at the end, or for a path in the
 * middle, so that the file's own name stays in view (search hits under one deep folder all
 * read `tests/integration/cli/special-characters-in…` when cut at the end).
 */
export function fitColumns(s: string, max: number, where: 'end' | 'middle' = 'end'): string {
  if (displayWidth(s) <= max) return s;
  // A name too long to keep whole (`_changesets/<40 hex>`) is known by its start, as a
  // commit's hash is: cut at the end.
  const name = displayWidth(s.slice(s.lastIndexOf('/') + 1));
  if (where === 'end' || name > max - 5) return fitStart(s, max - 1) + '…';
  const head = fitStart(s, Math.min(Math.floor((max - 1) / 3), max - 1 - name));
  return head + '…' + fitEnd(s, max - 1 - displayWidth(head));
}

/** `s` padded with spaces to `width` columns. */
export function padColumns(s: string, width: number): string {
  return s + ' '.repeat(Math.max(0, width - displayWidth(s)));
}
