// Text bound for a terminal: every value the CLI prints may come from another user (a Lane
// title, an Ask body, a file in the repository), so control characters are shown, never
// obeyed. ESC/CSI/OSC sequences could retitle or clear a viewer's terminal, rewrite what was
// printed before (CR, backspace), ring the bell, or (bidi overrides such as U+202E) make text
// read differently from what it is. Each one is replaced by a visible escape (`\x1b`,
// `<U+202E>`). `--json` output escapes them as JSON (jsonText), the value stays exact.

// Bidi embeddings, overrides, isolates and marks; the Unicode line/paragraph separators.
const INVISIBLE = String.raw`\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069`;
// C0 controls except TAB and LF, DEL, C1 controls, and the above.
const UNSAFE = new RegExp(String.raw`[\x00-\x08\x0b-\x1f\x7f-\x9f${INVISIBLE}]`, 'g');
// What JSON.stringify leaves raw of those (it escapes C0 itself).
const JSON_UNSAFE = new RegExp(String.raw`[\x7f-\x9f${INVISIBLE}]`, 'g');

function visible(ch: string): string {
  const c = ch.codePointAt(0)!;
  return c <= 0xff
    ? `\\x${c.toString(16).padStart(2, '0')}`
    : `<U+${c.toString(16).toUpperCase()}>`;
}

/**
 * Neutralises control characters for a terminal. `multiline` keeps LF (and CR directly before
 * an LF, which only ends a line) for values printed as blocks; otherwise LF and TAB are shown
 * as escapes too, so that one value stays on one line.
 */
export function neutralize(s: string, opts: { multiline?: boolean } = {}): string {
  const out = s.replace(UNSAFE, (ch, at: number) =>
    opts.multiline && ch === '\r' && s[at + 1] === '\n' ? ch : visible(ch),
  );
  return opts.multiline ? out : out.replace(/[\t\n]/g, (ch) => (ch === '\n' ? '\\n' : '\\t'));
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
