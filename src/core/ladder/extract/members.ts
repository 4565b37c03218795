// Classes and their members, and top-level functions, of a JavaScript or TypeScript file. Part
// of the extractive summariser (../extract.ts). A file that is one big class (a client, a
// parser) says what it does through its methods, not its one export: `retry`, `timeout` and
// `json` must reach the rung, or a search for them misses the file that holds the logic.
//
// A scanner, not a parser: it tracks braces outside strings, template literals and comments,
// and reads a member from each line that starts at the class body's own depth. Regular
// expression literals are not recognised (a `{` inside one can shift the depth); the scan is
// bounded and a confused class only yields fewer or odd names, never an error.

import { lineExec, lineStartMatches, literalMatches } from './scan.js';

const MAX_SCAN = 600_000;
const MAX_NAMES_SCAN = 48 * 1024;
const MAX_FUNCTIONS_SCAN = 256 * 1024;
const MAX_CLASSES = 24;
const MAX_MEMBERS = 80;

export interface ClassOutline {
  name: string;
  /** 1-based line of the class head. */
  line: number;
  /** Member names in source order, private ones marked `#`; no constructor. */
  members: string[];
}

export const CLASS_HEAD =
  /^[ \t]*(?:export[ \t]+)?(?:default[ \t]+)?(?:declare[ \t]+)?(?:abstract[ \t]+)?class[ \t]+([A-Za-z_$][\w$]*)[^{;]{0,400}?\{|^[ \t]*(?:export[ \t]+)?(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)[ \t]*=[ \t]*class\b[^{;]{0,400}?\{/gm;

const MEMBER =
  /^[ \t]*(?:@[\w.]+(?:\([^)]*\))?[ \t]+)*(?:(?:public|private|protected|static|readonly|async|override|abstract|declare|accessor)[ \t]+)*(?:(?:get|set)[ \t]+(?=[#\w$]))?(?:\*[ \t]*)?(#?[A-Za-z_$][\w$]*)[ \t]*[?!]?[ \t]*(?:[(<:=;]|$)/;

const NOT_MEMBERS = new Set(['constructor', 'return', 'if', 'for', 'while', 'switch', 'else']);

/** Index just past the string, template or comment starting at `i`, or -1 when not at one. */
function skipNonCode(src: string, i: number): number {
  const c = src[i];
  if (c === '/' && src[i + 1] === '/') {
    const e = src.indexOf('\n', i);
    return e < 0 ? src.length : e;
  }
  if (c === '/' && src[i + 1] === '*') {
    const e = src.indexOf('*/', i + 2);
    return e < 0 ? src.length : e + 2;
  }
  if (c === '"' || c === "'" || c === '`') {
    for (let j = i + 1; j < src.length; j++) {
      const d = src[j];
      if (d === '\\') j++;
      else if (d === c) return j + 1;
      else if (d === '\n' && c !== '`') return j;
    }
    return src.length;
  }
  return -1;
}

/** Members of the class body whose `{` is at `open`, and the index of its closing `}`. */
function scanBody(src: string, open: number): { members: string[]; end: number } {
  const members: string[] = [];
  let depth = 0;
  const end = Math.min(src.length, open + MAX_SCAN);
  // Jump from one character that matters to the next; everything else is skipped by the regex.
  const special = /[{}\n/"'`]/g;
  special.lastIndex = open;
  for (let m = special.exec(src); m && m.index < end; m = special.exec(src)) {
    const i = m.index;
    const c = m[0];
    if (c === '/' || c === '"' || c === "'" || c === '`') {
      const skip = skipNonCode(src, i);
      if (skip >= 0) special.lastIndex = Math.max(skip, i + 1);
      continue;
    }
    if (c === '{') depth++;
    else if (c === '}') {
      if (--depth === 0) return { members, end: i };
    } else if (depth === 1 && members.length < MAX_MEMBERS) {
      const lineEnd = src.indexOf('\n', i + 1);
      const line = src.slice(i + 1, lineEnd < 0 ? end : Math.min(lineEnd, i + 400));
      const mm = MEMBER.exec(line);
      if (mm) {
        // `#x` and `private x` are kept with a `#` mark until readerOrder() sorts them last.
        const name = /^[ \t]*(?:\w+[ \t]+)*private[ \t]/.test(line) ? `#${mm[1]!}` : mm[1]!;
        if (!NOT_MEMBERS.has(name.replace(/^#/, '')) && !members.includes(name)) members.push(name);
      }
    }
  }
  return { members, end };
}

/** Every class of the file (top-level or not) with its members, in source order. */
export function classOutlines(src: string): ClassOutline[] {
  const out: ClassOutline[] = [];
  if (!src.includes('class')) return out;
  let from = 0;
  let lineAt = 0;
  let line = 1;
  // CLASS_HEAD as a global exec loop, found through lineExec (its literal: `class`).
  for (let m = lineExec(src, CLASS_HEAD, 'class'); m && out.length < MAX_CLASSES;) {
    let at = m.index + m[0].length;
    if (m.index >= from) {
      const open = m.index + m[0].length - 1;
      const { members, end } = scanBody(src, open);
      for (let k = src.indexOf('\n', lineAt); k >= 0 && k < m.index; k = src.indexOf('\n', k + 1)) {
        line++;
        lineAt = k + 1;
      }
      out.push({ name: (m[1] ?? m[2])!, line, members });
      from = open + 1;
      // Classes nested in this one are found by continuing after its head, not its end.
      at = Math.min(open + 1, end);
    }
    m = lineExec(src, CLASS_HEAD, 'class', at);
  }
  return out;
}

// At column 0, starting with one of `edafclv` (export, default, async, function, const, let, var).
export const TOP_LEVEL_FUNCTION =
  /^(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\*?[ \t]+([A-Za-z_$][\w$]*)|^(?:export[ \t]+)?(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)[ \t]*=[ \t]*(?:async[ \t]+)?(?:function\b|\([^)]{0,200}\)[ \t]*(?::[^=\n]{0,100})?=>|[A-Za-z_$][\w$]*[ \t]*=>)/gm;
export const NAMED_FUNCTION = /\bfunction\*?[ \t]+([A-Za-z_$][\w$]*)[ \t]*\(/g;

/** Functions declared at the top level (column 0), exported or not, then named ones nested. */
export function topLevelFunctions(source: string): string[] {
  const src = source.length > MAX_FUNCTIONS_SCAN ? source.slice(0, MAX_FUNCTIONS_SCAN) : source;
  const names: string[] = [];
  for (const m of lineStartMatches(src, TOP_LEVEL_FUNCTION, 'edafclv')) {
    const name = (m[1] ?? m[2])!;
    if (!names.includes(name)) names.push(name);
  }
  // Then named functions anywhere (`self.requiredArguments = function requiredArguments(…)`
  // inside a factory): a compiled or factory-style module defines its API this way.
  for (const m of literalMatches(src, NAMED_FUNCTION, 'function')) {
    if (names.length >= 120) break;
    if (!names.includes(m[1]!)) names.push(m[1]!);
  }
  return names;
}

/** Public members first (source order), then `_`/`#`/private ones, unmarked. */
export function readerOrder(members: readonly string[]): string[] {
  const hidden = (n: string) => n.startsWith('_') || n.startsWith('#');
  const names = [...members.filter((n) => !hidden(n)), ...members.filter(hidden)];
  return [...new Set(names.map((n) => n.replace(/^#/, '')))];
}

// Names too common in JavaScript to say anything about one file.
const COMMON = new Set(
  (
    'const function return this require module exports undefined null true false async await ' +
    'class new typeof instanceof throw error object array string number promise symbol ' +
    'prototype length push call apply bind options value values key keys type self that else ' +
    'void delete default import export from case break continue switch while super extends ' +
    'static public private protected readonly interface implements catch finally yield ' +
    'boolean unknown never any let var for if try get set has args arg opts data result ' +
    'name index item list map node test expect describe assert strict use math json console'
  ).split(' '),
);

/**
 * The identifiers a file uses most (declared or not), for search: a file that calls
 * `onSecondaryRateLimit` ten times is about secondary rate limits even when it exports only
 * `throttling`. Counted over the code (comments dropped); the most frequent `max` not in
 * `exclude`, each used at least twice.
 */
export function usedNames(src: string, exclude: Iterable<string>, max = 16): string[] {
  const skip = new Set([...exclude].map((s) => s.toLowerCase()));
  const counts = new Map<string, number>();
  // One pass over the start of the file (its vocabulary shows early): comments are matched
  // and dropped (prose and lint pragmas are not names the code uses), identifiers counted.
  // Each distinct name is judged once, after counting (not once per use: that showed in
  // profiles of a 2,000-file build).
  const text = src.length > MAX_NAMES_SCAN ? src.slice(0, MAX_NAMES_SCAN) : src;
  for (const w of text.match(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|[A-Za-z_$][\w$]{3,47}/g) ?? []) {
    if (w.charCodeAt(0) === 47 /* '/' */) continue;
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  // A compound name says more than a short one used as often: weigh by its word count.
  const words = (w: string) => w.match(/[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+/g)?.length ?? 1;
  const weighed: Array<[string, number]> = [];
  for (const [w, n] of counts) {
    if (n < 2) continue;
    const lower = w.toLowerCase();
    if (COMMON.has(lower) || skip.has(lower) || /^[A-Z0-9_$]+$/.test(w)) continue;
    weighed.push([w, n * words(w)]);
  }
  return weighed
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, max)
    .map(([w]) => w);
}
