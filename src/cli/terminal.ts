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
