// Characters that are shown, never obeyed, wherever text from another user (a Lane title, an
// Ask body, a file in the repository, a quarantine reason naming another machine's actor)
// meets a screen: the CLI's terminal output, the daemon's and `zz mcp`'s log lines, and the
// dashboard, which is served this set (web/static.ts) rather than keeping a copy of its own.
// ESC/CSI/OSC sequences could retitle or clear a viewer's terminal, rewrite what was printed
// before (CR, backspace) or ring the bell; bidi controls (U+202E) and marks make text read
// differently from what it is ("Trojan Source"); U+2028/U+2029 break a line where none shows.
// No zod here: the CLI's fast path imports this file.

/** Bidi embeddings, overrides, isolates and marks; the Unicode line/paragraph separators. */
export const INVISIBLE_CLASS = String.raw`\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069`;
/** The whole set, as the body of a RegExp character class: C0 controls except TAB and LF, DEL,
 * C1 controls, and INVISIBLE_CLASS. */
export const UNSAFE_CLASS = String.raw`\x00-\x08\x0b-\x1f\x7f-\x9f` + INVISIBLE_CLASS;

const UNSAFE = new RegExp(`[${UNSAFE_CLASS}]`, 'g');

function visible(ch: string): string {
  const c = ch.codePointAt(0)!;
  return c <= 0xff
    ? `\\x${c.toString(16).padStart(2, '0')}`
    : `<U+${c.toString(16).toUpperCase()}>`;
}

/**
 * Neutralises control characters for a terminal or a log: each is replaced by a visible
 * escape (`\x1b`, `<U+202E>`). `multiline` keeps LF (and CR directly before an LF, which only
 * ends a line) for values printed as blocks; otherwise LF and TAB are shown as escapes too, so
 * that one value stays on one line.
 */
export function neutralize(s: string, opts: { multiline?: boolean } = {}): string {
  const out = s.replace(UNSAFE, (ch, at: number) =>
    opts.multiline && ch === '\r' && s[at + 1] === '\n' ? ch : visible(ch),
  );
  return opts.multiline ? out : out.replace(/[\t\n]/g, (ch) => (ch === '\n' ? '\\n' : '\\t'));
}
