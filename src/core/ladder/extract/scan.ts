// Fast, exact stand-ins for `src.matchAll(re)` over whole files. Part of the extractive
// summariser (../extract.ts).
//
// Why: a line-anchored multiline RegExp (`/^[ \t]*export…/gm`) is tried by V8 at every
// character of the file; over a 2,000-file build (16 MB of source) each such pattern cost
// ~40 ms, and jsFacts runs seven. Here the file is searched with indexOf for a literal every
// match must contain (`export`), and the pattern runs (sticky) only at the start of a line
// holding it: the same matches, in the same order, at a few percent of the cost.
//
// Hazard: exactness rests on each caller's promise about its pattern (see each function) and on
// `^` meaning "after \n". A file with \r, U+2028 or U+2029 (which `^` also honours) takes the
// plain RegExp path instead. test/core/extract-scan.test.ts compares both paths on random text.

const sticky = new WeakMap<RegExp, RegExp>();
const global = new WeakMap<RegExp, RegExp>();

function variant(cache: WeakMap<RegExp, RegExp>, re: RegExp, flag: 'y' | 'g'): RegExp {
  let v = cache.get(re);
  if (!v) {
    v = new RegExp(re.source, re.flags.replace(/[gy]/g, '') + flag);
    cache.set(re, v);
  }
  return v;
}

let lastSrc: string | undefined;
let lastOther = false;

/** Whether `^` in a multiline RegExp would see line starts other than after \n in `src`. */
function otherLineBreaks(src: string): boolean {
  // Asked once per match, about the same file: remembered for the last file asked about.
  if (src !== lastSrc) {
    lastSrc = src;
    lastOther = src.includes('\r') || src.includes('\u2028') || src.includes('\u2029');
  }
  return lastOther;
}

/** `re` (any flags) run at exactly `at`. */
function execAt(re: RegExp, src: string, at: number): RegExpExecArray | null {
  const s = variant(sticky, re, 'y');
  s.lastIndex = at;
  return s.exec(src);
}

/** `re` (any flags) as a global search from `from`: the leftmost match at or after it. */
function execFrom(re: RegExp, src: string, from: number): RegExpExecArray | null {
  const g = variant(global, re, 'g');
  g.lastIndex = from;
  return g.exec(src);
}

/**
 * The first match of the multiline `re` at or after `from`, where every match of `re` starts
 * at a line start and has `literal` on its first line (e.g. `/^[ \t]*export[ \t]+…/m` and
 * `export`). Same result as `re.lastIndex = from; re.exec(src)` with a global `re`.
 */
export function lineExec(
  src: string,
  re: RegExp,
  literal: string,
  from = 0,
): RegExpExecArray | null {
  if (otherLineBreaks(src)) return execFrom(re, src, from);
  for (let k = src.indexOf(literal, from); k >= 0;) {
    // Back to the line's start (a loop: lastIndexOf showed in profiles, erratically slow).
    let lineStart = k;
    while (lineStart > 0 && src.charCodeAt(lineStart - 1) !== 10) lineStart--;
    if (lineStart >= from) {
      const m = execAt(re, src, lineStart);
      if (m) return m;
    }
    // No match starts on this line: its other occurrences of `literal` need no look.
    const eol = src.indexOf('\n', k);
    if (eol < 0) return null;
    k = src.indexOf(literal, eol + 1);
  }
  return null;
}

/** Every match of `re` as `src.matchAll(re)` gives them, under lineExec's promise. */
export function lineMatches(src: string, re: RegExp, literal: string): RegExpExecArray[] {
  const out: RegExpExecArray[] = [];
  for (let m = lineExec(src, re, literal); m;) {
    out.push(m);
    // As matchAll does: resume after the match, one further after an empty one.
    m = lineExec(src, re, literal, m.index + Math.max(1, m[0].length));
  }
  return out;
}

/**
 * Every match of `re` as `src.matchAll(re)` gives them, where every match of `re` starts at a
 * line start (no indent) with one of the characters of `first` (e.g. `/^(?:export |const )…/m`
 * and `ec`).
 */
export function lineStartMatches(src: string, re: RegExp, first: string): RegExpExecArray[] {
  if (otherLineBreaks(src)) return [...src.matchAll(variant(global, re, 'g'))];
  const out: RegExpExecArray[] = [];
  let from = 0;
  for (let at = 0; at < src.length;) {
    if (at >= from && first.includes(src[at]!)) {
      const m = execAt(re, src, at);
      if (m) {
        out.push(m);
        from = m.index + Math.max(1, m[0].length);
      }
    }
    const eol = src.indexOf('\n', at);
    if (eol < 0) break;
    at = eol + 1;
  }
  return out;
}

/**
 * Every match of `re` as `src.matchAll(re)` gives them, where every match of `re` starts with
 * `literal` (e.g. `/\bfunction[ \t]+(\w+)/g` and `function`).
 */
export function literalMatches(src: string, re: RegExp, literal: string): RegExpExecArray[] {
  const out: RegExpExecArray[] = [];
  for (let k = src.indexOf(literal); k >= 0;) {
    const m = execAt(re, src, k);
    if (m) out.push(m);
    k = src.indexOf(literal, m ? m.index + Math.max(1, m[0].length) : k + 1);
  }
  return out;
}
