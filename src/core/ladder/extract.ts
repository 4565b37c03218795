// The offline, model-free summariser behind `zz ladder build` (DESIGN §6): it reads what a
// file says about itself — a leading doc comment, the doc of the export named like the file,
// exported symbols, Markdown headings and first paragraph, manifest descriptions — and writes
// a few plain sentences. Pure: no git, no I/O, so it is cheap to test and to run over 10k files.
// Heuristics follow research/ladder-search.md §2.2; bump EXTRACT_VERSION when they change, so
// rungs written by older heuristics are regenerated.

export const EXTRACT_VERSION = 'extract-1';

/** Larger files are not summarised (generated bundles, data dumps). */
export const MAX_FILE_BYTES = 512 * 1024;
/** Summaries are one short paragraph: enough to decide whether to open the file. */
export const MAX_SUMMARY_CHARS = 600;
const LEAD_CHARS = 280;
const MAX_SYMBOLS = 40;
const SHOWN_SYMBOLS = 8;

export interface Extract {
  title: string;
  summary: string;
  symbols: string[];
}

export type SkipReason = 'binary' | 'too_large';

export interface DirectoryChild {
  name: string;
  kind: 'file' | 'directory';
  title: string;
  summary: string;
  /** Optional ranking hints: a child's exported symbols and size in bytes. */
  symbols?: readonly string[];
  size?: number;
}

export interface PackageInfo {
  name?: string;
  description?: string;
  keywords?: readonly string[];
  version?: string;
}

export interface ReleaseRange {
  /** The previous tag, when there is one. */
  from?: string | null;
  to?: string;
}

export interface ChangesetCommit {
  oid: string;
  subject: string;
  body?: string;
  stats: { files: number; insertions: number; deletions: number };
  paths: readonly string[];
}

// --- small text helpers ---------------------------------------------------------------------

const BINARY_EXTENSIONS = new Set(
  (
    'png jpg jpeg gif bmp ico icns webp avif tif tiff psd svgz heic pdf zip gz tgz bz2 xz zst 7z rar ' +
    'jar war ear class dex so dylib dll exe bin o a lib obj wasm node woff woff2 ttf otf eot ' +
    'mp3 mp4 m4a wav ogg flac mov avi mkv webm sqlite db pyc pyo pack idx keystore p12 pfx der'
  ).split(' '),
);

/** Why a file is not summarised, or null when it is. */
export function skipReason(path: string, content: Buffer): SkipReason | null {
  if (content.length > MAX_FILE_BYTES) return 'too_large';
  if (BINARY_EXTENSIONS.has(extOf(path))) return 'binary';
  // git's own test: a NUL in the first 8000 bytes.
  if (content.subarray(0, 8000).includes(0)) return 'binary';
  return null;
}

function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? path : path.slice(i + 1);
}

function extOf(path: string): string {
  const b = baseName(path).toLowerCase();
  const i = b.lastIndexOf('.');
  return i <= 0 ? '' : b.slice(i + 1);
}

function stem(path: string): string {
  const b = baseName(path);
  const i = b.indexOf('.', 1);
  return i < 0 ? b : b.slice(0, i);
}

const normName = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');

function squash(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** Cuts at a word boundary, marking the cut. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const cut = s.slice(0, max - 1);
  const sp = cut.lastIndexOf(' ');
  return (sp > max * 0.6 ? cut.slice(0, sp) : cut).replace(/[\s,;:(–-]+$/, '') + '…';
}

const ABBREVIATIONS =
  /(?:\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|no|fig|ca|mr|mrs|dr|st|jr|inc|ltd)\.|\b[A-Z]\.|\d\.)$/i;

/** The first sentences of a text, up to about `max` characters. */
export function firstSentences(text: string, max = LEAD_CHARS, count = 2): string {
  const t = squash(text);
  if (t.length === 0) return '';
  const parts = t.split(/(?<=[.!?])\s+(?=[A-Z0-9"'(`[])/);
  const sentences: string[] = [];
  for (const p of parts) {
    const prev = sentences[sentences.length - 1];
    if (prev !== undefined && ABBREVIATIONS.test(prev))
      sentences[sentences.length - 1] = `${prev} ${p}`;
    else sentences.push(p);
  }
  let out = '';
  for (const s of sentences.slice(0, count)) {
    const next = out ? `${out} ${s}` : s;
    if (next.length > max && out) break;
    out = next;
  }
  out = clip(out, max).replace(/\s*:$/, '');
  return /[.!?…]$/.test(out) ? out : `${out}.`;
}

/** Markdown / JSDoc inline markup to plain text. */
function plainInline(s: string): string {
  return s
    .replace(
      /\{@(?:link|linkcode|linkplain)\s+([^}|\s]+)(?:[|\s]+([^}]*))?\}/g,
      (_m, target: string, label?: string) =>
        label && label.trim()
          ? label.trim()
          : target.replace(/^.*[#.](?=\w)/, (x) => (x.length > 30 ? '' : x)),
    )
    .replace(/\{@\w+\s*([^}]*)\}/g, '$1')
    .replace(/\[!\[[^\]]*\](?:\([^)]*\)|\[[^\]]*\])\](?:\([^)]*\)|\[[^\]]*\])/g, '')
    .replace(/!\[[^\]]*\](?:\([^)]*\)|\[[^\]]*\])/g, '')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\[[^\]]*\]/g, '$1')
    .replace(/<(https?:[^>]+)>/g, '$1')
    .replace(/<\/?[A-Za-z][^>]*>/g, '')
    .replace(/`+([^`]*)`+/g, '$1')
    .replace(/(\*\*|__)(.+?)\1/g, '$2')
    .replace(/(^|[\s(])[*_]([^*_\s][^*_]*?)[*_](?=[\s).,;:!?]|$)/g, '$1$2')
    .replace(/&nbsp;/g, ' ')
    .replace(/&[nm]dash;/g, '–')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>');
}

/** "a, b, c and 4 more" */
function listOf(list: readonly string[], shown = SHOWN_SYMBOLS): string {
  const items = list.map((x) => (x === 'default' ? 'a default export' : x));
  if (items.length === 0) return '';
  if (items.length === 1) return items[0]!;
  if (items.length <= shown)
    return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
  return `${items.slice(0, shown).join(', ')} and ${items.length - shown} more`;
}

function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

function uniq(items: Iterable<string>): string[] {
  return [...new Set(items)];
}

function finish(
  title: string,
  parts: Array<string | null | undefined | false>,
  symbols: string[],
): Extract {
  const summary = clip(
    squash(parts.filter((p): p is string => typeof p === 'string' && p.length > 0).join(' ')),
    MAX_SUMMARY_CHARS,
  );
  return {
    title: clip(squash(title), 300) || 'untitled',
    summary,
    symbols: symbols.slice(0, MAX_SYMBOLS),
  };
}

// --- comments ------------------------------------------------------------------------------

// Comment blocks that are tooling, not prose: lint pragmas, licence headers, type-checker
// switches, coverage hints, generated-file markers.
const PRAGMA =
  /\beslint\b|prettier-ignore|@ts-|\bistanbul\b|\bc8 ignore|\bjshint\b|\bjscs\b|^\s*globals?\s|\btslint:|biome-ignore|deno-lint|\bnoinspection\b|@(?:jest|vitest)-environment|@flow\b|@jsx\b|@jsxImportSource|(?:^|\s)#?(?:end)?region\b|\bpylint:|\bnoqa\b|\bmypy:|\btype:\s*ignore|-\*-\s*coding|^\s*vim?:|\bfmt:\s*(?:off|on)|go:build|\+build\b|nolint|@refresh\b|webpackChunkName|@__PURE__/i;
const LICENCE =
  /@license\b|@preserve\b|\bcopyright\b|\(c\)\s*\d{4}|spdx-license-identifier|licensed under|permission is hereby granted|all rights reserved|this (?:file|program|library) is (?:free software|part of)|redistribution and use|warranty|apache license|mit license|gnu (?:general|lesser)/i;
const GENERATED =
  /@generated\b|\bauto-?generated\b|\bautomatically generated\b|\bcode generated\b|\bdo not (?:edit|modify)\b/i;

// JSDoc/TSDoc block tags end the prose; these few introduce file-level prose instead.
const FILE_TAGS =
  /@(?:file(?:overview)?|overview|module|packageDocumentation|description|summary|remarks)\b/g;
const BLOCK_TAG = /^@[a-zA-Z]+/;

interface Comment {
  text: string;
  start: number;
  end: number;
}

/** A comment that starts lower-case ("returns the …") reads as a sentence once capitalised. */
const capitalize = (t: string): string =>
  /^[a-z]{2,}\s/.test(t) && !/^(?:npm|npx|git|yarn|pnpm|node|zz)\s/.test(t)
    ? t[0]!.toUpperCase() + t.slice(1)
    : t;

/** Cleans the inside of a comment (prefix characters already removed) into prose. */
function commentProse(raw: string): string {
  const lines: string[] = [];
  let fence = false;
  for (const line of raw.split('\n')) {
    const l = line.trim();
    if (/^(```|~~~)/.test(l)) {
      fence = !fence;
      continue;
    }
    if (fence) continue;
    const tagless = l.replace(FILE_TAGS, '').trim();
    if (BLOCK_TAG.test(tagless)) break; // @param, @returns, @example … end the description
    if (/^(?:example|examples|usage|e\.g\.):?$/i.test(tagless)) break;
    if (/^[-=*#~_/\\]{3,}$/.test(tagless)) continue; // separators, banners
    lines.push(tagless);
  }
  // A blank line ends the first paragraph, which is the summary of a doc comment.
  const paragraphs = lines.join('\n').split(/\n\s*\n/);
  const first = paragraphs.find((p) => p.trim().length > 0) ?? '';
  return capitalize(squash(plainInline(first)));
}

/** Punctuation-dense text is code or data, not prose. */
export function looksLikeCode(text: string): boolean {
  const letters = (text.match(/[A-Za-z]/g) ?? []).length;
  const marks = (text.match(/[{}[\]();=<>|&$\\]/g) ?? []).length;
  return marks > 2 && marks / Math.max(1, letters) > 0.08;
}

/** Prose worth using as a lead: not a pragma, licence, to-do note, separator or commented-out code. */
function usefulProse(text: string): boolean {
  if (text.length < 12 || !/[a-z]{3}/i.test(text)) return false;
  if (PRAGMA.test(text) || LICENCE.test(text)) return false;
  if (/^(?:todo|fixme|hack|xxx|note to self)\b/i.test(text)) return false;
  if (
    /^[@#]?(?:import|export|const|let|var|function|class|def|from|require|use|package|include)\b[\s({]/.test(
      text,
    )
  )
    return false;
  if (/[;{}]\s*$/.test(text) || /=>|\)\s*\{/.test(text) || looksLikeCode(text)) return false;
  return true;
}

/**
 * Comments at the top of a C-family file (`//`, `/* *\/`, `///`, `//!`), in order, stopping at
 * the first line of code.
 */
function leadingComments(src: string, opts: { hash?: boolean; dash?: boolean } = {}): Comment[] {
  const out: Comment[] = [];
  let i = 0;
  const n = Math.min(src.length, 64 * 1024);
  if (src.startsWith('#!')) i = src.indexOf('\n') < 0 ? n : src.indexOf('\n') + 1;
  while (i < n) {
    while (i < n && /\s/.test(src[i]!)) i++;
    // Directive prologues ('use strict', 'use client') sit above the file's doc comment.
    const directive = /^(['"])use [\w ]+\1;?[ \t]*(?:\n|$)/.exec(src.slice(i, i + 40));
    if (directive) {
      i += directive[0].length;
      continue;
    }
    if (src.startsWith('/*', i)) {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      const body = src
        .slice(i + 2, end < 0 ? n : end)
        .replace(/^[*!]+/, '')
        .split('\n')
        .map((l) => l.replace(/^\s*\*+ ?/, ''))
        .join('\n');
      out.push({ text: body, start: i, end: stop });
      i = stop;
      continue;
    }
    const lineMark = src.startsWith('//', i)
      ? '//'
      : opts.hash && src[i] === '#'
        ? '#'
        : opts.dash && src.startsWith('--', i)
          ? '--'
          : null;
    if (lineMark !== null) {
      const start = i;
      const lines: string[] = [];
      while (i < n && src.startsWith(lineMark, i)) {
        const eol = src.indexOf('\n', i);
        const line = src.slice(i + lineMark.length, eol < 0 ? n : eol);
        lines.push(
          line.replace(
            lineMark === '//' ? /^[/!]* ?/ : lineMark === '#' ? /^[#!]* ?/ : /^-* ?/,
            '',
          ),
        );
        i = eol < 0 ? n : eol + 1;
        // A line comment block continues only on the next line (leading spaces allowed).
        let j = i;
        while (j < n && (src[j] === ' ' || src[j] === '\t')) j++;
        if (src.startsWith(lineMark, j)) i = j;
      }
      out.push({ text: lines.join('\n'), start, end: i });
      continue;
    }
    break;
  }
  return out;
}

/** The first useful prose among the leading comments; also reports generated-file markers. */
function leadFromComments(comments: Comment[]): { lead: string | null; generated: boolean } {
  let generated = false;
  for (const c of comments) {
    if (GENERATED.test(c.text)) {
      generated = true;
      continue;
    }
    // A block that is mostly pragma or licence is skipped whole: licence headers run long.
    if (LICENCE.test(c.text) || (PRAGMA.test(c.text) && c.text.length < 200)) continue;
    const prose = commentProse(c.text);
    if (usefulProse(prose)) return { lead: firstSentences(prose), generated };
  }
  return { lead: null, generated };
}

/** The `/** … *\/` block immediately before offset `at`, as prose. */
function docBefore(src: string, at: number): string | null {
  let j = at;
  // Skip decorators and whitespace between the doc comment and the declaration.
  for (;;) {
    while (j > 0 && /\s/.test(src[j - 1]!)) j--;
    const lineStart = src.lastIndexOf('\n', j - 1) + 1;
    if (/^\s*@\w/.test(src.slice(lineStart, j)) && !src.slice(lineStart, j).includes('*/')) {
      j = lineStart;
      continue;
    }
    break;
  }
  if (!src.startsWith('*/', j - 2)) return null;
  const start = src.lastIndexOf('/**', j - 2);
  if (start < 0 || j - start > 8000) return null;
  const body = src
    .slice(start + 3, j - 2)
    .split('\n')
    .map((l) => l.replace(/^\s*\*+ ?/, ''))
    .join('\n');
  const prose = commentProse(body);
  return usefulProse(prose) ? firstSentences(prose) : null;
}

/** `///` (Rust) or `//` (Go) line docs immediately before offset `at`. */
function lineDocBefore(src: string, at: number, mark: string): string | null {
  const lines: string[] = [];
  let end = at;
  for (;;) {
    const prevEnd = src.lastIndexOf('\n', end - 1);
    if (prevEnd < 0) break;
    const prevStart = src.lastIndexOf('\n', prevEnd - 1) + 1;
    const line = src.slice(prevStart, prevEnd).trim();
    if (line.startsWith(mark) && !line.startsWith(mark + '/')) {
      lines.unshift(line.slice(mark.length).replace(/^ /, ''));
      end = prevStart;
    } else if (line.startsWith('#[') && lines.length === 0) {
      end = prevStart; // Rust attributes between doc and item
    } else break;
  }
  const prose = commentProse(lines.join('\n'));
  return usefulProse(prose) ? firstSentences(prose) : null;
}

// --- languages -----------------------------------------------------------------------------

const LANGUAGE: Record<string, string> = {
  ts: 'TypeScript',
  tsx: 'TypeScript (JSX)',
  mts: 'TypeScript',
  cts: 'TypeScript',
  js: 'JavaScript',
  jsx: 'JavaScript (JSX)',
  mjs: 'JavaScript',
  cjs: 'JavaScript',
  py: 'Python',
  go: 'Go',
  rs: 'Rust',
  rb: 'Ruby',
  java: 'Java',
  kt: 'Kotlin',
  swift: 'Swift',
  c: 'C',
  h: 'C header',
  cc: 'C++',
  cpp: 'C++',
  hpp: 'C++ header',
  cs: 'C#',
  php: 'PHP',
  scala: 'Scala',
  lua: 'Lua',
  sh: 'shell',
  bash: 'shell',
  zsh: 'shell',
  sql: 'SQL',
  css: 'CSS',
  scss: 'SCSS',
  less: 'Less',
  html: 'HTML',
  vue: 'Vue',
  svelte: 'Svelte',
};

const JS_EXT = new Set(['ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs']);

interface CodeFacts {
  lead: string | null;
  generated: boolean;
  symbols: string[];
  /** What the symbols are, for the fallback sentence ("exporting", "defining"). */
  verb: string;
  /** The symbols grouped by sort, when the language distinguishes them. */
  groups?: Array<[string, string[]]>;
  /** For test files: the suites and cases they declare. */
  tests?: string[];
  /** A last sentence to append (e.g. where else it re-exports from). */
  also?: string;
}

function namesLikeFile(path: string): Set<string> {
  const names = new Set([normName(stem(path))]);
  const s = stem(path).toLowerCase();
  if (['index', 'mod', 'main', 'lib', '__init__', 'init'].includes(s)) {
    const parts = path.split('/');
    if (parts.length >= 2) names.add(normName(parts[parts.length - 2]!));
  }
  return names;
}

function jsFacts(path: string, src: string): CodeFacts {
  const symbols: string[] = [];
  const local: string[] = [];
  const reexported: string[] = [];
  const sources = new Set<string>();
  const decls: Array<{ name: string; at: number }> = [];
  const declRe =
    /^[ \t]*export[ \t]+(?:declare[ \t]+)?(default[ \t]+)?(?:abstract[ \t]+)?(?:async[ \t]+)?(function\*?|class|const[ \t]+enum|const|let|var|interface|type|enum|namespace|module)?[ \t]*\*?[ \t]*([A-Za-z_$][\w$]*)?/gm;
  for (const m of src.matchAll(declRe)) {
    const [, isDefault, sort, ident] = m;
    let name: string | undefined;
    if (sort) name = ident ?? (isDefault ? 'default' : undefined);
    else if (isDefault)
      name =
        ident &&
        /^\s*;?\s*$/.test(
          src.slice(m.index + m[0].length, src.indexOf('\n', m.index + m[0].length) >>> 0),
        )
          ? ident
          : 'default';
    if (!name || (sort === 'type' && name === 'of')) continue;
    symbols.push(name);
    local.push(name);
    decls.push({ name, at: m.index });
  }
  for (const m of src.matchAll(
    /^[ \t]*export[ \t]+(?:type[ \t]+)?\{([^}]{0,4000})\}(?:[ \t]*from[ \t]*(['"])([^'"\n]+)\2)?/gm,
  )) {
    for (const spec of m[1]!.split(',')) {
      const parts = spec
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .trim()
        .replace(/^type\s+/, '')
        .split(/\s+as\s+/);
      const inner = (parts[0] ?? '').trim();
      let name = (parts[1] ?? parts[0] ?? '').trim().replace(/^['"]|['"]$/g, '');
      if (name === 'default' && /^[A-Za-z_$][\w$]*$/.test(inner)) name = inner;
      if (!/^[A-Za-z_$][\w$]*$/.test(name)) continue;
      symbols.push(name);
      (m[3] ? reexported : local).push(name);
    }
    if (m[3]) sources.add(m[3]);
  }
  for (const m of src.matchAll(
    /^[ \t]*export[ \t]+\*(?:[ \t]+as[ \t]+([A-Za-z_$][\w$]*))?[ \t]+from[ \t]*(['"])([^'"\n]+)\2/gm,
  )) {
    if (m[1]) symbols.push(m[1]);
    sources.add(m[3]!);
  }
  // CommonJS.
  for (const m of src.matchAll(/^[ \t]*(?:module\.)?exports\.([A-Za-z_$][\w$]*)[ \t]*=/gm)) {
    symbols.push(m[1]!);
    local.push(m[1]!);
  }
  const cjs =
    /^[ \t]*module\.exports[ \t]*=[ \t]*(?:(\{)|([A-Za-z_$][\w$]*)(?![\w$]|\s*[(.]))/m.exec(src);
  if (cjs?.[1] !== undefined) {
    for (const name of topLevelKeys(src, cjs.index + cjs[0].length - 1)) {
      symbols.push(name);
      local.push(name);
    }
  } else if (cjs?.[2] !== undefined && /^(?:function|class|async)$/.test(cjs[2])) {
    symbols.push('default');
    local.push('default');
  } else if (cjs?.[2] !== undefined && !JS_KEYWORDS.has(cjs[2])) {
    symbols.push(cjs[2]);
    local.push(cjs[2]);
    const def = new RegExp(
      `^[ \\t]*(?:function|class|const|let|var)[ \\t]+${cjs[2].replace(/\$/g, '\\$')}\\b`,
      'm',
    ).exec(src);
    if (def) decls.push({ name: cjs[2], at: def.index });
  }
  // Bundlers' CommonJS output (esbuild, tsup): __export(target, { name: () => name, … }).
  for (const m of src.matchAll(/__export\(\s*[\w$]+\s*,\s*\{/g)) {
    for (const name of topLevelKeys(src, m.index + m[0].length - 1)) {
      symbols.push(name);
      local.push(name);
    }
  }
  const { lead: top, generated } = leadFromComments(leadingComments(src));
  let lead = top;
  // Without a file comment, the doc of the export named like the file speaks for the file;
  // the doc of merely the first export is shown as that export's.
  if (lead === null) {
    const like = namesLikeFile(path);
    const named = decls.find((d) => like.has(normName(d.name)));
    lead = (named && docBefore(src, named.at)) ?? null;
    if (lead === null) {
      for (const d of decls.slice(0, 3)) {
        const doc = docBefore(src, d.at);
        if (doc) {
          lead = `${d.name === 'default' ? 'Default export' : d.name}: ${doc}`;
          break;
        }
      }
    }
  }
  const facts: CodeFacts = {
    lead,
    generated,
    symbols: uniq(symbols).filter((x) => x !== '__esModule'),
    verb: 'exporting',
  };
  const from = [...sources].sort((a, b) => src.indexOf(a) - src.indexOf(b));
  if (local.length > 0 && from.length > 0) facts.also = `Re-exports from ${listOf(from, 3)}.`;
  if (local.length === 0 && sources.size > 0) {
    facts.verb = `re-exporting${facts.symbols.length > 0 ? '' : ' everything'} from ${listOf(from, 3)}${facts.symbols.length > 0 ? ':' : ''}`;
  }
  return facts;
}

const JS_KEYWORDS = new Set([
  'function',
  'class',
  'async',
  'new',
  'require',
  'await',
  'void',
  'typeof',
  'this',
  'null',
  'undefined',
  'true',
  'false',
]);

/** The keys of the object literal whose `{` is at `open`, ignoring nested objects and strings. */
function topLevelKeys(src: string, open: number): string[] {
  const keys: string[] = [];
  let depth = 0;
  let expectKey = true;
  const end = Math.min(src.length, open + 20000);
  for (let i = open; i < end; i++) {
    const c = src[i]!;
    if (c === '/' && (src[i + 1] === '/' || src[i + 1] === '*')) {
      const close = src[i + 1] === '/' ? src.indexOf('\n', i) : src.indexOf('*/', i + 2) + 1;
      if (close <= 0) break;
      i = close;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      const close = src.indexOf(c, i + 1);
      if (close < 0) break;
      if (depth === 1 && expectKey && /^\s*:/.test(src.slice(close + 1, close + 8)))
        keys.push(src.slice(i + 1, close));
      i = close;
      continue;
    }
    if (c === '{' || c === '[' || c === '(') depth++;
    else if (c === '}' || c === ']' || c === ')') {
      if (--depth === 0) break;
    } else if (depth === 1) {
      if (c === ',') expectKey = true;
      else if (expectKey && /[A-Za-z_$]/.test(c)) {
        const m = /^[A-Za-z_$][\w$]*/.exec(src.slice(i, i + 200))!;
        keys.push(m[0]);
        expectKey = false;
        i += m[0].length - 1;
      } else if (!/\s/.test(c)) expectKey = false;
    }
  }
  return keys.filter((k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== '__proto__');
}

const TEST_FILE =
  /(?:^|\/)(?:__tests__|tests?|spec)\/|[._-](?:test|spec)s?\.[cm]?[jt]sx?$|(?:^|\/)test_[^/]*\.py$|_test\.(?:py|go)$/;

function isTestFile(path: string): boolean {
  return TEST_FILE.test(path);
}

/** Titles of the outermost describe/test blocks (or test functions), for test files. */
function testTitles(src: string): string[] {
  const titles: string[] = [];
  for (const m of src.matchAll(
    /^(?:[ \t]{0,2})(?:describe|suite|context|test|it)(?:\.\w+)*\(\s*(['"`])((?:\\.|(?!\1).){1,120})\1/gm,
  )) {
    titles.push(squash(m[2]!));
  }
  for (const m of src.matchAll(/^(?:async[ \t]+)?def[ \t]+(test_\w+)|^func[ \t]+(Test\w+)\(/gm))
    titles.push(m[1] ?? m[2]!);
  return uniq(titles);
}

function pythonDocstring(src: string, from: number): string | null {
  const m =
    /^[ \t]*[rRuUbB]?("""|''')([\s\S]*?)\1|^[ \t]*[rRuU]?(["'])((?:\\.|(?!\3).){0,400})\3/m.exec(
      src.slice(from, from + 16000),
    );
  if (!m || (m.index > 0 && src.slice(from, from + m.index).trim().length > 0)) return null;
  const prose = commentProse(m[2] ?? m[4] ?? '');
  return usefulProse(prose) ? firstSentences(prose) : null;
}

function pythonFacts(path: string, src: string): CodeFacts {
  // Skip shebang, encoding line and comments; the module docstring is the first statement.
  const comments = leadingComments(src, { hash: true });
  const afterComments =
    comments.length > 0
      ? comments[comments.length - 1]!.end
      : src.startsWith('#!')
        ? src.indexOf('\n') + 1
        : 0;
  let lead = pythonDocstring(src, afterComments);
  const fromComments = leadFromComments(comments);
  lead ??= fromComments.lead;
  const classes: string[] = [];
  const functions: string[] = [];
  const decls: Array<{ name: string; at: number }> = [];
  for (const m of src.matchAll(/^(?:async[ \t]+)?(def|class)[ \t]+([A-Za-z_]\w*)/gm)) {
    if (m[2]!.startsWith('_')) continue;
    (m[1] === 'class' ? classes : functions).push(m[2]!);
    decls.push({ name: m[2]!, at: m.index + m[0].length });
  }
  let exported: string[] | null = null;
  const all = /^__all__[ \t]*(?::[^=]*)?=[ \t]*[[(]([^\])]{0,4000})[\])]/m.exec(src);
  if (all) exported = [...all[1]!.matchAll(/["']([A-Za-z_]\w*)["']/g)].map((m) => m[1]!);
  if (lead === null) {
    const like = namesLikeFile(path);
    const named =
      decls.find((d) => like.has(normName(d.name))) ?? (decls.length === 1 ? decls[0] : undefined);
    if (named) {
      const body = src.indexOf('\n', src.indexOf(':', named.at));
      if (body > 0) lead = pythonDocstring(src, body + 1);
    }
  }
  const groups: Array<[string, string[]]> = [];
  if (!exported) {
    if (classes.length > 0) groups.push([classes.length === 1 ? 'class' : 'classes', classes]);
    if (functions.length > 0)
      groups.push([functions.length === 1 ? 'function' : 'functions', functions]);
  }
  return {
    lead,
    generated: fromComments.generated,
    symbols: uniq(exported ?? [...classes, ...functions]),
    verb: exported ? 'exporting' : 'defining',
    groups,
  };
}

function goFacts(path: string, src: string): CodeFacts {
  const comments = leadingComments(src);
  let lead: string | null = null;
  let generated = comments.some((c) => GENERATED.test(c.text));
  const pkg = /^package[ \t]+(\w+)/m.exec(src);
  if (pkg) {
    const doc = lineDocBefore(src, pkg.index, '//');
    if (doc && /^package\s/i.test(doc)) lead = doc;
    else if (doc && !LICENCE.test(doc)) lead = doc;
  }
  const symbols: string[] = [];
  const decls: Array<{ name: string; at: number }> = [];
  for (const m of src.matchAll(/^(?:func[ \t]+(?:\([^)]*\)[ \t]*)?|type[ \t]+)([A-Z]\w*)/gm)) {
    symbols.push(m[1]!);
    decls.push({ name: m[1]!, at: m.index });
  }
  if (lead === null) {
    const like = namesLikeFile(path);
    const named = decls.find((d) => like.has(normName(d.name)));
    if (named) lead = lineDocBefore(src, named.at, '//');
  }
  generated ||= /^\/\/ Code generated .* DO NOT EDIT\.$/m.test(src.slice(0, 2000));
  return { lead, generated, symbols: uniq(symbols), verb: 'exporting' };
}

function rustFacts(path: string, src: string): CodeFacts {
  const inner: string[] = [];
  for (const line of src.slice(0, 32 * 1024).split('\n')) {
    const l = line.trim();
    if (l.startsWith('//!')) inner.push(l.slice(3).replace(/^ /, ''));
    else if (inner.length > 0 || (l.length > 0 && !l.startsWith('//') && !l.startsWith('#![')))
      break;
  }
  let lead: string | null = null;
  const prose = commentProse(inner.join('\n'));
  if (usefulProse(prose)) lead = firstSentences(prose);
  lead ??= leadFromComments(leadingComments(src).filter((c) => !c.text.startsWith('/'))).lead;
  const symbols: string[] = [];
  const decls: Array<{ name: string; at: number }> = [];
  for (const m of src.matchAll(
    /^pub(?:\([^)]*\))?[ \t]+(?:async[ \t]+|const[ \t]+|unsafe[ \t]+)*(?:fn|struct|enum|trait|type|mod|const|static|union)[ \t]+([A-Za-z_]\w*)/gm,
  )) {
    symbols.push(m[1]!);
    decls.push({ name: m[1]!, at: m.index });
  }
  for (const m of src.matchAll(/#\[macro_export\]\s*macro_rules![ \t]*([A-Za-z_]\w*)/g))
    symbols.push(`${m[1]!}!`);
  if (lead === null) {
    const like = namesLikeFile(path);
    const named = decls.find((d) => like.has(normName(d.name)));
    if (named) lead = lineDocBefore(src, named.at, '///');
  }
  return {
    lead,
    generated: GENERATED.test(src.slice(0, 1000)),
    symbols: uniq(symbols),
    verb: 'exporting',
  };
}

function shellFacts(src: string): CodeFacts {
  const { lead, generated } = leadFromComments(leadingComments(src, { hash: true }));
  const symbols = uniq(
    [
      ...src.matchAll(
        /^[ \t]*(?:function[ \t]+([A-Za-z_][\w-]*)|([A-Za-z_][\w-]*)[ \t]*\(\)[ \t]*\{?)/gm,
      ),
    ].map((m) => m[1] ?? m[2]!),
  );
  return { lead, generated, symbols, verb: 'defining functions' };
}

function genericFacts(ext: string, src: string): CodeFacts {
  const { lead, generated } = leadFromComments(
    leadingComments(src, {
      hash: ['rb', 'py', 'pl', 'r', 'toml', 'yaml', 'yml', 'cmake'].includes(ext),
      dash: ext === 'sql' || ext === 'lua',
    }),
  );
  const symbols: string[] = [];
  for (const m of src.matchAll(
    /^[ \t]*(?:(?:public|export|pub|open|internal|abstract|final|sealed|static|data|inline)[ \t]+)*(?:class|interface|struct|enum|trait|protocol|object|record|module|def|func|fun|function)[ \t]+([A-Za-z_][\w]*)/gm,
  )) {
    symbols.push(m[1]!);
  }
  return { lead, generated, symbols: uniq(symbols), verb: 'defining' };
}

function lineCount(src: string): number {
  let n = 0;
  for (let i = src.indexOf('\n'); i >= 0; i = src.indexOf('\n', i + 1)) n++;
  return src.length > 0 && !src.endsWith('\n') ? n + 1 : n;
}

function codeSummary(path: string, src: string, facts: CodeFacts, langName: string): Extract {
  const lines = lineCount(src);
  const shown = facts.symbols.slice(0, MAX_SYMBOLS);
  const isDecl = /\.d\.[cm]?ts$/.test(path);
  const kind = isDecl
    ? 'Type declarations'
    : `${langName[0]!.toUpperCase()}${langName.slice(1)} module`;
  const parts: string[] = [];
  if (facts.generated) parts.push('Generated code (do not edit by hand).');
  if (facts.tests === undefined && isTestFile(path)) facts.tests = testTitles(src);
  if (facts.tests !== undefined && (facts.lead === null || facts.tests.length > 0)) {
    const subject = stem(path)
      .replace(/[._-](?:test|spec)s?$/i, '')
      .replace(/^test_/, '');
    if (facts.lead) parts.push(facts.lead);
    parts.push(
      facts.tests.length > 0
        ? `Tests for ${subject} (${plural(lines, 'line')}) covering ${listOf(facts.tests, 6)}.`
        : `Tests for ${subject}, ${plural(lines, 'line')}.`,
    );
    return finish(baseName(path), parts, facts.tests.slice(0, MAX_SYMBOLS));
  }
  if (facts.lead) {
    parts.push(facts.lead);
    if (shown.length > 0) {
      const verb =
        facts.verb === 'exporting'
          ? 'Exports'
          : facts.verb.startsWith('re-exporting')
            ? `R${facts.verb.slice(1)}`
            : 'Defines';
      parts.push(`${verb} ${listOf(shown)}.`);
    }
  } else if (facts.groups && facts.groups.length > 0) {
    parts.push(
      `${kind} defining ${facts.groups.map(([what, names]) => `${what} ${listOf(names, 6)}`).join('; ')} (${plural(lines, 'line')}).`,
    );
  } else if (shown.length > 0) {
    parts.push(`${kind} ${facts.verb} ${listOf(shown)} (${plural(lines, 'line')}).`);
  } else if (facts.verb.startsWith('re-exporting')) {
    parts.push(`${kind} ${facts.verb} (${plural(lines, 'line')}).`);
  } else {
    parts.push(`${kind}, ${plural(lines, 'line')}, with no exported declarations or doc comment.`);
  }
  if (facts.also) parts.push(facts.also);
  return finish(baseName(path), parts, shown);
}

function isMinified(src: string): boolean {
  if (src.length < 3000) return false;
  const lines = lineCount(src);
  return src.length / Math.max(1, lines) > 300;
}

// --- Markdown ------------------------------------------------------------------------------

interface MarkdownFacts {
  title: string | null;
  lead: string | null;
  /** Level-2 headings. */
  headings: string[];
  /** Every heading, any level, in order. */
  all: string[];
}

function markdownFacts(src: string): MarkdownFacts {
  let text = src.replace(/^\uFEFF/, '');
  let fmTitle: string | null = null;
  let fmDescription: string | null = null;
  const fm = /^---\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)\r?\n/.exec(text);
  if (fm) {
    fmTitle = /^title:[ \t]*["']?(.+?)["']?[ \t]*$/m.exec(fm[1]!)?.[1] ?? null;
    fmDescription = /^description:[ \t]*["']?(.+?)["']?[ \t]*$/m.exec(fm[1]!)?.[1] ?? null;
    text = text.slice(fm[0].length);
  }
  const lines = text.split(/\r?\n/);
  let title: string | null = null;
  const headings: string[] = [];
  const all: string[] = [];
  const paragraphs: string[] = [];
  let para: string[] = [];
  let fence: string | null = null;
  let inHtmlComment = false;
  let inHtmlTag = false;
  let h1Seen = false;
  const flush = () => {
    if (para.length > 0) paragraphs.push(para.join(' '));
    para = [];
  };
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const l = raw.trim();
    if (fence !== null) {
      if (l.startsWith(fence)) fence = null;
      continue;
    }
    const f = /^(```+|~~~+)/.exec(l);
    if (f) {
      flush();
      fence = f[1]!;
      continue;
    }
    if (inHtmlComment) {
      if (l.includes('-->')) inHtmlComment = false;
      continue;
    }
    if (l.startsWith('<!--')) {
      flush();
      inHtmlComment = !l.includes('-->');
      continue;
    }
    const h = /^(#{1,6})[ \t]+(.+?)[ \t#]*$/.exec(l);
    const setext =
      !h &&
      l.length > 0 &&
      i + 1 < lines.length &&
      /^(=+|-+)\s*$/.test(lines[i + 1]!.trim()) &&
      para.length === 0;
    if (h || setext) {
      flush();
      const level = h ? h[1]!.length : lines[i + 1]!.trim().startsWith('=') ? 1 : 2;
      const textOf = squash(plainInline(h ? h[2]! : l));
      if (setext) i++;
      if (textOf.length > 0) all.push(clip(textOf, 60));
      // Only the first H1 names the document; READMEs that use H1 for every section do not.
      if (level === 1 && !h1Seen) {
        h1Seen = true;
        if (
          !/^(?:table of contents|contents|toc|overview|introduction|readme|about|installation|install|usage|getting started|summary|details|description)$/i.test(
            textOf,
          )
        ) {
          title = textOf.replace(/\s*[–—-]\s*$/, '');
        }
      }
      if (level === 2 && textOf.length > 0) headings.push(clip(textOf, 60));
      continue;
    }
    if (l.length === 0) {
      flush();
      continue;
    }
    if (paragraphs.length >= 1 && fmDescription === null) continue; // only the first paragraph matters
    // Badges, images, raw HTML, tables, link-only lines and rules are not prose.
    const stripped = plainInline(l.replace(/\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)/g, '')).trim();
    if (
      /^\s*(?:[-*_]\s*){3,}$/.test(l) ||
      /^\|/.test(l) ||
      (/^<\/?[a-zA-Z]/.test(l) && stripped.length < 20)
    ) {
      flush();
      continue;
    }
    if (/^<[a-zA-Z][^>]*$/.test(l)) {
      inHtmlTag = true;
      continue;
    }
    if (inHtmlTag) {
      if (l.includes('>')) inHtmlTag = false;
      continue;
    }
    if (
      stripped.length === 0 ||
      /^(?:\[[^\]]*\]\([^)]*\)\s*)+$/.test(l) ||
      /^\[[^\]]+\]:\s/.test(l)
    )
      continue;
    if (/^(?:>\s*)?(?:`[^`]+`|\$ .*)$/.test(l)) continue; // a command line, not prose
    const quote = l.replace(/^>\s?/, '');
    para.push(quote === l ? stripped : plainInline(quote));
  }
  flush();
  const first = paragraphs.find(
    (p) => /[a-z]{3}/i.test(p) && p.replace(/[^a-z]/gi, '').length >= 12,
  );
  const leadText = fmDescription ?? first ?? null;
  return {
    title: title ?? fmTitle,
    lead: leadText ? firstSentences(plainInline(leadText), 300) : null,
    headings,
    all,
  };
}

function markdownSummary(path: string, src: string): Extract {
  const md = markdownFacts(src);
  const name = baseName(path);
  if (/^(?:changelog|changes|history|news|releases)\b/i.test(name)) {
    const versions = md.all.filter((h) => /\d+\.\d+/.test(h));
    const latest = versions[0] ?? md.headings[0];
    return finish(
      md.title && !/^change ?log$/i.test(md.title) && !/\d+\.\d+/.test(md.title) ? md.title : name,
      [
        `Changelog${versions.length > 0 ? ` covering ${plural(versions.length, 'release')}` : ''}${latest ? `; latest: ${latest}` : ''}${versions.length > 1 ? `, oldest: ${versions[versions.length - 1]}` : ''}.`,
      ],
      versions.slice(0, MAX_SYMBOLS),
    );
  }
  const sections = md.headings.slice(0, 8);
  const parts: string[] = [];
  if (md.lead) parts.push(md.lead);
  else if (md.title) parts.push(`${md.title}.`);
  if (sections.length > 0) parts.push(`Sections: ${listOf(sections)}.`);
  if (parts.length === 0) parts.push(`Markdown document, ${plural(lineCount(src), 'line')}.`);
  return finish(md.title ?? name, parts, uniq(md.headings));
}

// --- manifests and data ----------------------------------------------------------------------

function asStrings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

function packageJsonSummary(path: string, json: Record<string, unknown>): Extract {
  const name = typeof json.name === 'string' ? json.name : null;
  const description =
    typeof json.description === 'string' ? plainInline(json.description).trim() : '';
  const keywords = asStrings(json.keywords);
  const bin =
    typeof json.bin === 'string' && name
      ? [name.replace(/^@[^/]+\//, '')]
      : Object.keys((json.bin as object) ?? {});
  const scripts = Object.keys((json.scripts as object) ?? {});
  const workspaces = Array.isArray(json.workspaces)
    ? asStrings(json.workspaces)
    : asStrings((json.workspaces as { packages?: unknown })?.packages);
  const deps = Object.keys((json.dependencies as object) ?? {});
  const parts: string[] = [];
  const label = name
    ? `npm package ${name}${typeof json.version === 'string' ? ` ${json.version}` : ''}`
    : 'npm package manifest';
  parts.push(
    description
      ? `${label}: ${firstSentences(description, 300)}`
      : `${label}${json.private === true ? ' (private)' : ''}.`,
  );
  if (keywords.length > 0) parts.push(`Keywords: ${listOf(keywords, 8)}.`);
  if (bin.length > 0) parts.push(`Commands: ${listOf(bin, 6)}.`);
  if (workspaces.length > 0) parts.push(`Workspaces: ${listOf(workspaces, 6)}.`);
  if (scripts.length > 0) parts.push(`Scripts: ${listOf(scripts, 8)}.`);
  if (deps.length > 0) parts.push(`${plural(deps.length, 'dependency', 'dependencies')}.`);
  return finish(
    name ? `${name} (package.json)` : baseName(path),
    parts,
    uniq([...bin, ...scripts]),
  );
}

function tsconfigSummary(path: string, json: Record<string, unknown>): Extract {
  const co = (json.compilerOptions ?? {}) as Record<string, unknown>;
  const facts: string[] = [];
  for (const k of ['target', 'module', 'moduleResolution', 'jsx', 'outDir', 'rootDir']) {
    if (typeof co[k] === 'string') facts.push(`${k} ${co[k] as string}`);
  }
  if (co.strict === true) facts.push('strict');
  const ext = typeof json.extends === 'string' ? ` extending ${json.extends}` : '';
  const include = asStrings(json.include);
  return finish(
    baseName(path),
    [
      `TypeScript compiler configuration${ext}${facts.length > 0 ? ` (${facts.join(', ')})` : ''}.`,
      include.length > 0 ? `Includes ${listOf(include, 5)}.` : null,
    ],
    [],
  );
}

function jsonSummary(path: string, src: string): Extract {
  const name = baseName(path);
  let json: unknown;
  try {
    json = JSON.parse(src.replace(/^\uFEFF/, ''));
  } catch {
    json = undefined;
  }
  if (name === 'package.json' && json && typeof json === 'object' && !Array.isArray(json)) {
    return packageJsonSummary(path, json as Record<string, unknown>);
  }
  if (/^(?:t|j)sconfig.*\.json$/.test(name) && json && typeof json === 'object') {
    return tsconfigSummary(path, json as Record<string, unknown>);
  }
  if (/(?:package-lock|npm-shrinkwrap)\.json$/.test(name) && json && typeof json === 'object') {
    const pk = Object.keys(((json as Record<string, unknown>).packages as object) ?? {}).length;
    return finish(name, [`npm lockfile pinning ${plural(Math.max(0, pk - 1), 'package')}.`], []);
  }
  if (name.endsWith('.map') && json && typeof json === 'object' && 'mappings' in (json as object)) {
    const file = (json as { file?: unknown }).file;
    return finish(name, [`Source map${typeof file === 'string' ? ` for ${file}` : ''}.`], []);
  }
  if (json === undefined) {
    // JSON with comments (tsconfig, VS Code settings) or broken JSON: top-level keys by regex.
    const keys = uniq([...src.matchAll(/^\s{0,4}"([^"\n]{1,60})"\s*:/gm)].map((m) => m[1]!)).slice(
      0,
      12,
    );
    return finish(
      name,
      [
        keys.length > 0
          ? `JSON settings with keys ${listOf(keys)}.`
          : `JSON document, ${plural(lineCount(src), 'line')}.`,
      ],
      keys,
    );
  }
  if (Array.isArray(json))
    return finish(name, [`JSON array of ${plural(json.length, 'item')}.`], []);
  if (json === null || typeof json !== 'object')
    return finish(name, [`JSON ${typeof json} value.`], []);
  const obj = json as Record<string, unknown>;
  const keys = Object.keys(obj).map((k) => clip(k, 40));
  const lead =
    typeof obj.description === 'string' && obj.description.length > 10
      ? firstSentences(plainInline(obj.description), 300)
      : typeof obj.title === 'string'
        ? `${obj.title}.`
        : null;
  const what =
    typeof obj.$schema === 'string' && /json-schema\.org/.test(obj.$schema)
      ? 'JSON Schema'
      : 'JSON object';
  const symbols = keys.filter((k) => /^[A-Za-z_$][\w$.-]{0,39}$/.test(k)).slice(0, MAX_SYMBOLS);
  return finish(
    name,
    [lead, `${what} with ${keys.length === 0 ? 'no keys' : `keys ${listOf(keys, 10)}`}.`],
    symbols,
  );
}

function yamlSummary(path: string, src: string): Extract {
  const name = baseName(path);
  const keys = uniq(
    [...src.matchAll(/^([A-Za-z_][\w.-]*|"[^"]+"|'[^']+'):(?:\s|$)/gm)].map((m) =>
      m[1]!.replace(/^["']|["']$/g, ''),
    ),
  );
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  const title = /^name:[ \t]*["']?(.+?)["']?[ \t]*$/m.exec(src)?.[1];
  if (/(^|\/)\.github\/workflows\//.test(path)) {
    const jobs = uniq(
      [...(/^jobs:\s*\n([\s\S]*)/m.exec(src)?.[1] ?? '').matchAll(/^ {2}([A-Za-z_][\w-]*):/gm)].map(
        (m) => m[1]!,
      ),
    );
    const on = /^(?:on|"on"|'on'):[ \t]*(\[[^\]]*\]|\w+)?/m.exec(src);
    const triggers = on?.[1]
      ? on[1]
          .replace(/[[\]\s]/g, '')
          .split(',')
          .filter(Boolean)
      : uniq(
          [
            ...(/^(?:on|"on"|'on'):\s*\n((?: {2}.*\n?)*)/m.exec(src)?.[1] ?? '').matchAll(
              /^ {2}([a-z_]+):/gm,
            ),
          ].map((m) => m[1]!),
        );
    return finish(
      title ? `${title} (workflow)` : name,
      [
        `GitHub Actions workflow${title ? ` "${title}"` : ''}${triggers.length > 0 ? ` run on ${listOf(triggers, 5)}` : ''}.`,
        jobs.length > 0 ? `Jobs: ${listOf(jobs, 6)}.` : null,
      ],
      jobs,
    );
  }
  if (/^(?:pnpm-lock|yarn)\.ya?ml$/.test(name))
    return finish(name, ['Package manager lockfile.'], []);
  return finish(
    name,
    [
      lead,
      keys.length > 0
        ? `YAML with top-level keys ${listOf(keys, 10)}.`
        : `YAML document, ${plural(lineCount(src), 'line')}.`,
    ],
    keys.slice(0, MAX_SYMBOLS),
  );
}

function tomlSummary(path: string, src: string): Extract {
  const name = baseName(path);
  const tables = uniq([...src.matchAll(/^\[{1,2}([^\]\n]+)\]{1,2}/gm)].map((m) => m[1]!.trim()));
  const section = (t: string): string => {
    const m = new RegExp(
      `^\\[${t.replace(/\./g, '\\.')}\\][ \\t]*\\r?\\n([\\s\\S]*?)(?=^\\[|$(?![\\s\\S]))`,
      'm',
    ).exec(src);
    return m?.[1] ?? '';
  };
  const field = (body: string, key: string) =>
    new RegExp(`^${key}[ \\t]*=[ \\t]*["']([^"'\\n]*)["']`, 'm').exec(body)?.[1];
  for (const [table, what] of [
    ['package', 'Rust crate'],
    ['project', 'Python project'],
    ['tool.poetry', 'Python project'],
    ['workspace', 'Cargo workspace'],
  ] as const) {
    if (!tables.includes(table)) continue;
    const body = section(table);
    const pname = field(body, 'name');
    const description = field(body, 'description');
    const members =
      table === 'workspace'
        ? [
            ...(/members\s*=\s*\[([^\]]*)\]/.exec(body)?.[1] ?? '').matchAll(/["']([^"']+)["']/g),
          ].map((m) => m[1]!)
        : [];
    return finish(
      pname ? `${pname} (${name})` : name,
      [
        `${what}${pname ? ` ${pname}` : ''}${description ? `: ${firstSentences(description, 300)}` : '.'}`,
        members.length > 0 ? `Members: ${listOf(members, 6)}.` : null,
        `Sections: ${listOf(tables, 8)}.`,
      ],
      tables,
    );
  }
  if (name === 'Cargo.lock' || name === 'poetry.lock' || name === 'uv.lock') {
    return finish(
      name,
      [`Lockfile pinning ${plural((src.match(/^\[\[package\]\]/gm) ?? []).length, 'package')}.`],
      [],
    );
  }
  const keys = uniq([...src.matchAll(/^([A-Za-z_][\w-]*)[ \t]*=/gm)].map((m) => m[1]!));
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    name,
    [
      lead,
      tables.length > 0
        ? `TOML with sections ${listOf(tables, 8)}.`
        : keys.length > 0
          ? `TOML with keys ${listOf(keys, 8)}.`
          : 'TOML document.',
    ],
    uniq([...tables, ...keys]),
  );
}

function goModSummary(src: string): Extract {
  const mod = /^module[ \t]+(\S+)/m.exec(src)?.[1];
  const go = /^go[ \t]+(\S+)/m.exec(src)?.[1];
  const requires =
    (src.match(/^\t[^\s/]+\.[^\s]+ v\S+/gm) ?? []).length +
    (src.match(/^require[ \t]+\S+ v/gm) ?? []).length;
  return finish(
    'go.mod',
    [
      `Go module ${mod ?? '(unnamed)'}${go ? ` for Go ${go}` : ''}, requiring ${plural(requires, 'module')}.`,
    ],
    mod ? [mod] : [],
  );
}

function dockerfileSummary(path: string, src: string): Extract {
  const from = uniq([...src.matchAll(/^FROM[ \t]+(?:--\S+[ \t]+)*(\S+)/gim)].map((m) => m[1]!));
  const expose = uniq(
    [...src.matchAll(/^EXPOSE[ \t]+(.+)$/gim)].flatMap((m) => m[1]!.trim().split(/\s+/)),
  );
  const entry = /^(?:ENTRYPOINT|CMD)[ \t]+(.+)$/gim.exec(src)?.[1];
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    baseName(path),
    [
      lead,
      `Container image built from ${listOf(from, 4) || 'scratch'}${from.length > 1 ? ' (multi-stage)' : ''}.`,
      expose.length > 0 ? `Exposes ${listOf(expose, 4)}.` : null,
      entry ? `Runs ${clip(entry.replace(/[[\]"]/g, '').replace(/,\s*/g, ' '), 80)}.` : null,
    ],
    [],
  );
}

function makefileSummary(path: string, src: string): Extract {
  const targets = uniq(
    [...src.matchAll(/^([A-Za-z][\w.-]*)[ \t]*:(?!=)/gm)].map((m) => m[1]!),
  ).filter((t) => !t.startsWith('.'));
  const { lead } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    baseName(path),
    [
      lead,
      targets.length > 0 ? `Make targets: ${listOf(targets, 10)}.` : 'Makefile with no targets.',
    ],
    targets,
  );
}

const LICENSE_NAMES: Array<[RegExp, string]> = [
  [/\bMIT License\b|Permission is hereby granted, free of charge/i, 'MIT'],
  [/Apache License,?\s+Version 2\.0/i, 'Apache-2.0'],
  [/GNU AFFERO GENERAL PUBLIC LICENSE/i, 'AGPL'],
  [/GNU LESSER GENERAL PUBLIC LICENSE/i, 'LGPL'],
  [/GNU GENERAL PUBLIC LICENSE[\s\S]{0,200}Version 3/i, 'GPL-3.0'],
  [/GNU GENERAL PUBLIC LICENSE[\s\S]{0,200}Version 2/i, 'GPL-2.0'],
  [/Mozilla Public License,? (?:v\.|Version) 2\.0/i, 'MPL-2.0'],
  [/ISC License|Permission to use, copy, modify, and\/or distribute/i, 'ISC'],
  [
    /Redistribution and use in source and binary forms[\s\S]{0,2000}Neither the name/i,
    'BSD-3-Clause',
  ],
  [/Redistribution and use in source and binary forms/i, 'BSD-2-Clause'],
  [/This is free and unencumbered software released into the public domain/i, 'Unlicense'],
];

function licenseSummary(path: string, src: string): Extract {
  const name = LICENSE_NAMES.find(([re]) => re.test(src.slice(0, 20000)))?.[1];
  const holder = /copyright\s+(?:\(c\)\s*)?([^\n]{3,80})/i.exec(src)?.[1]?.trim();
  return finish(
    baseName(path),
    [
      `${name ? `${name} licence` : 'Licence'} text${holder ? ` (copyright ${holder.replace(/\.$/, '')})` : ''}.`,
    ],
    name ? [name] : [],
  );
}

function textSummary(path: string, src: string): Extract {
  const t = src.trimStart();
  // Dotfiles and extensionless configs are often JSON, YAML or key=value files.
  if (/^[{[]/.test(t)) {
    try {
      JSON.parse(t);
      return jsonSummary(path, src);
    } catch {
      // not JSON after all
    }
  }
  const lines = t.split('\n').filter((l) => l.trim().length > 0 && !/^\s*[#;]/.test(l));
  if (lines.length > 0 && lines.every((l) => /^\s*(?:[\w.-]+\s*[:=]|-\s|\[[^\]]+\]\s*$)/.test(l))) {
    const keys = uniq(
      lines.map((l) => /^([\w.-]+)\s*[:=]/.exec(l)?.[1]).filter((k): k is string => !!k),
    );
    return finish(
      baseName(path),
      [`Settings file with keys ${listOf(keys, 10)}.`],
      keys.slice(0, MAX_SYMBOLS),
    );
  }
  const para = src
    .split(/\r?\n\s*\r?\n/)
    .map((p) => squash(p))
    .find((p) => /[a-z]{3}/i.test(p) && p.length >= 12 && !looksLikeCode(p));
  return finish(
    baseName(path),
    [para ? firstSentences(para, 300) : `Text file, ${plural(lineCount(src), 'line')}.`],
    [],
  );
}

// --- public API ----------------------------------------------------------------------------

/**
 * A title, a summary of a few sentences and the exported symbols of one file, or null when the
 * file is binary or larger than MAX_FILE_BYTES (see skipReason for which).
 */
export function summarizeFile(path: string, content: Buffer): Extract | null {
  if (skipReason(path, content) !== null) return null;
  const src = content
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .replace(/\r\n/g, '\n');
  const name = baseName(path);
  const lower = name.toLowerCase();
  const ext = extOf(path);
  if (src.trim().length === 0) return finish(name, ['Empty file.'], []);
  if (/^(?:licen[cs]e|copying|unlicense)(?:[.-].*)?$/i.test(name) && !JS_EXT.has(ext))
    return licenseSummary(path, src);
  if (['md', 'markdown', 'mdx', 'mdown'].includes(ext)) return markdownSummary(path, src);
  if (
    ext === 'json' ||
    ext === 'jsonc' ||
    ext === 'json5' ||
    ext === 'map' ||
    ext === 'webmanifest'
  )
    return jsonSummary(path, src);
  if (ext === 'yml' || ext === 'yaml') return yamlSummary(path, src);
  if (ext === 'toml' || lower === 'cargo.lock' || lower === 'poetry.lock' || lower === 'uv.lock')
    return tomlSummary(path, src);
  if (lower === 'go.mod') return goModSummary(src);
  if (lower === 'go.sum')
    return finish(
      name,
      [
        `Go module checksums for ${plural(src.split('\n').filter((l) => l.includes(' h1:') && !l.includes('/go.mod ')).length, 'module version')}.`,
      ],
      [],
    );
  if (lower === 'dockerfile' || lower.startsWith('dockerfile.') || ext === 'dockerfile')
    return dockerfileSummary(path, src);
  if (lower === 'makefile' || lower === 'gnumakefile' || ext === 'mk')
    return makefileSummary(path, src);
  if (lower === 'yarn.lock' || lower === 'pnpm-lock.yaml')
    return finish(name, ['Package manager lockfile.'], []);

  let shebangLang: string | null = null;
  if (src.startsWith('#!')) {
    const first = src.slice(0, src.indexOf('\n') < 0 ? src.length : src.indexOf('\n'));
    if (/\b(?:ba|z|k|da)?sh\b/.test(first)) shebangLang = 'sh';
    else if (/\bnode\b|\bdeno\b|\bbun\b|\btsx\b/.test(first)) shebangLang = 'js';
    else if (/\bpython/.test(first)) shebangLang = 'py';
  }
  const lang = LANGUAGE[ext] ? ext : shebangLang;
  if (lang !== null && JS_EXT.has(lang)) {
    if (isMinified(src)) {
      return finish(
        name,
        [`Minified ${LANGUAGE[lang]} bundle (${Math.round(src.length / 1024)} KB).`],
        [],
      );
    }
    return codeSummary(path, src, jsFacts(path, src), LANGUAGE[lang]!);
  }
  if (lang === 'py') return codeSummary(path, src, pythonFacts(path, src), 'Python');
  if (lang === 'go') return codeSummary(path, src, goFacts(path, src), 'Go');
  if (lang === 'rs') return codeSummary(path, src, rustFacts(path, src), 'Rust');
  if (lang === 'sh' || lang === 'bash' || lang === 'zsh')
    return codeSummary(path, src, shellFacts(src), 'shell script');
  if (lang !== null && LANGUAGE[lang])
    return codeSummary(path, src, genericFacts(lang, src), LANGUAGE[lang]!);
  if (['txt', 'text', 'rst', 'adoc', ''].includes(ext)) return textSummary(path, src);
  const { lead, generated } = leadFromComments(leadingComments(src, { hash: true }));
  return finish(
    name,
    [
      generated ? 'Generated file.' : null,
      lead ?? `${ext.toUpperCase()} file, ${plural(lineCount(src), 'line')}.`,
    ],
    [],
  );
}

// Meta documents say little about what a folder does.
const META_DOC =
  /^(?:changelog|changes|history|news|code_of_conduct|contributing|security|support|authors|contributors|maintainers|licen[cs]e|copying|notice|funding|codeowners|\.[\w.-]+|.*\.lock|package-lock\.json|yarn\.lock|pnpm-lock\.yaml|go\.sum)(?:\.\w+)?$/i;
const README = /^readme(?:\.\w+)?$/i;
// Summaries that only restate the file's shape rank below ones written from its docs.
const SHAPE_ONLY =
  /^(?:[\w#+() ]+ module|Type declarations|Minified|Empty file|JSON |YAML |TOML |Text file|Markdown document|[A-Z]+ file,)/;

function childScore(c: DirectoryChild): number {
  let s = 0;
  if (c.kind === 'directory') s += 3;
  if (!SHAPE_ONLY.test(c.summary)) s += 2;
  s += Math.min(3, (c.symbols?.length ?? 0) / 3);
  if (c.size !== undefined) s += Math.min(2, Math.log10(1 + c.size / 1000));
  if (/^(?:index|main|mod|lib|__init__|cli|server|app)\.\w+$/i.test(c.name)) s += 1;
  if (/(?:^|[._-])(?:test|spec)s?(?:[._-]|$)|\.d\.ts$|\.min\.js$/i.test(c.name)) s -= 2;
  return s;
}

function oneLiner(summary: string, max = 110): string {
  return firstSentences(summary, max, 1).replace(/\.$/, '');
}

function census(children: readonly DirectoryChild[]): string {
  const files = children.filter((c) => c.kind === 'file');
  const dirs = children.filter((c) => c.kind === 'directory');
  const exts = new Map<string, number>();
  for (const f of files) {
    const e = extOf(f.name) || baseName(f.name);
    exts.set(e, (exts.get(e) ?? 0) + 1);
  }
  const topExts = [...exts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 3)
    .map(([e, n]) =>
      `${n} .${e}`.replace(/^(\d+) \.(\w+)$/, (m, n2: string, e2: string) =>
        exts.size === 1 ? `.${e2}` : m,
      ),
    );
  const parts: string[] = [];
  if (files.length > 0)
    parts.push(
      `${plural(files.length, 'file')}${exts.size > 0 ? ` (${topExts.join(', ')}${exts.size > 3 ? ', …' : ''})` : ''}`,
    );
  if (dirs.length > 0) {
    const names = dirs.map((d) => `${d.name}/`);
    parts.push(
      `${plural(dirs.length, 'folder')} (${names.slice(0, 6).join(' ')}${names.length > 6 ? ' …' : ''})`,
    );
  }
  return parts.length > 0 ? `${parts.join(' and ')}.` : 'Empty.';
}

function keyLines(
  children: readonly DirectoryChild[],
  max: number,
  skip: ReadonlySet<string> = new Set(),
): string[] {
  return (
    children
      .filter(
        (c) =>
          !META_DOC.test(c.name) &&
          !README.test(c.name) &&
          !skip.has(c.name) &&
          c.summary.trim().length > 0,
      )
      .map((c, i) => ({ c, s: childScore(c), i }))
      .sort((a, b) => b.s - a.s || a.i - b.i)
      .slice(0, max)
      // A folder contributes its first line (lead and census), never its own list of children.
      .map(
        ({ c }) =>
          `- ${c.name}${c.kind === 'directory' ? '/' : ''}: ${oneLiner(c.kind === 'directory' ? c.summary.split('\n')[0]! : c.summary)}`,
      )
  );
}

function leadOf(readme?: { summary: string } | null, pkg?: PackageInfo | null): string | null {
  if (pkg?.description && pkg.description.trim().length > 0)
    return firstSentences(plainInline(pkg.description), 220);
  if (readme?.summary && readme.summary.trim().length > 0) {
    // A README summary ends with its "Sections: …" list; the folder lead is its first sentences.
    return firstSentences(readme.summary.replace(/\s*Sections:.*$/s, ''), 220);
  }
  return null;
}

function assemble(lead: string | null, count: string, lines: string[]): string {
  let head = [lead, count].filter(Boolean).join(' ');
  head = clip(head, MAX_SUMMARY_CHARS - 60);
  const out = [head];
  let len = head.length;
  for (const l of lines) {
    if (len + 1 + l.length > MAX_SUMMARY_CHARS) break;
    out.push(l);
    len += 1 + l.length;
  }
  return out.join('\n');
}

/**
 * A folder: its README's or package's description first, a count of what it holds, then one
 * line for each of its most telling children (never their own child lists).
 */
export function summarizeDirectory(
  path: string,
  children: readonly DirectoryChild[],
  readme?: { summary: string } | null,
  pkg?: PackageInfo | null,
): Extract {
  const name = baseName(path.replace(/\/+$/, '')) || path;
  const summary = assemble(
    leadOf(readme, pkg),
    census(children),
    keyLines(children, 5, pkg ? new Set(['package.json']) : undefined),
  );
  return { title: clip(`${name}/`, 300), summary, symbols: [] };
}

/** The repository: README lead (or package description), top-level census and key folders. */
export function summarizeRepo(
  readme: { title?: string | null; summary: string } | null | undefined,
  topChildren: readonly DirectoryChild[],
  pkg?: PackageInfo | null,
  name?: string,
): Extract {
  const title = name ?? readme?.title ?? pkg?.name ?? 'repository';
  const lead = leadOf(readme, pkg) ?? (readme?.title ? `${readme.title}.` : null);
  const keywords =
    pkg?.keywords && pkg.keywords.length > 0 ? `Keywords: ${listOf([...pkg.keywords], 6)}.` : null;
  const summary = assemble(
    [lead, keywords].filter(Boolean).join(' ') || null,
    census(topChildren),
    keyLines(topChildren, 6, pkg ? new Set(['package.json']) : undefined),
  );
  return {
    title: clip(title, 300),
    summary,
    symbols: [...(pkg?.keywords ?? [])].slice(0, MAX_SYMBOLS),
  };
}

const CC_TYPES: Record<string, string> = {
  feat: 'Features',
  feature: 'Features',
  fix: 'Fixes',
  bugfix: 'Fixes',
  perf: 'Performance',
  security: 'Security',
  refactor: 'Refactoring',
  docs: 'Docs',
  doc: 'Docs',
  test: 'Tests',
  tests: 'Tests',
  build: 'Build',
  ci: 'CI',
  chore: 'Chores',
  style: 'Style',
  revert: 'Reverts',
  deps: 'Dependencies',
};
const SECTION_ORDER = [
  'Breaking',
  'Features',
  'Fixes',
  'Performance',
  'Security',
  'Other',
  'Refactoring',
  'Docs',
  'Tests',
  'Build',
  'CI',
  'Dependencies',
  'Reverts',
  'Style',
  'Chores',
];

/** A tag: its commits grouped by conventional-commit type (feat, fix, …), newest kept. */
export function summarizeRelease(
  tag: string,
  commits: ReadonlyArray<{ subject: string }>,
  range?: ReleaseRange | string | null,
): Extract {
  const from =
    typeof range === 'string' ? (range.includes('..') ? range.split('..')[0] : null) : range?.from;
  const groups = new Map<string, string[]>();
  let merges = 0;
  for (const c of commits) {
    const subject = squash(c.subject ?? '');
    if (/^Merge (?:pull request|branch|remote-tracking branch|tag)\b/.test(subject)) {
      merges++;
      continue;
    }
    const m = /^(\w+)(?:\(([^)]*)\))?(!)?:\s*(.+)$/.exec(subject);
    const type = m ? CC_TYPES[m[1]!.toLowerCase()] : undefined;
    const section = m?.[3] || /BREAKING CHANGE/.test(subject) ? 'Breaking' : (type ?? 'Other');
    const text = m && (type || m[3]) ? `${m[2] ? `${m[2]}: ` : ''}${m[4]}` : subject;
    if (text.length === 0) continue;
    const list = groups.get(section) ?? [];
    list.push(clip(text.replace(/\.$/, ''), 80));
    groups.set(section, list);
  }
  const n = commits.length;
  const head = `${tag}: ${plural(n, 'commit')}${from ? ` since ${from}` : ''}${merges > 0 ? ` (${plural(merges, 'merge')})` : ''}.`;
  const lines: string[] = [];
  for (const section of SECTION_ORDER) {
    const items = groups.get(section);
    if (!items || items.length === 0) continue;
    const shown = items.slice(0, section === 'Chores' || section === 'Style' ? 0 : 4);
    lines.push(
      shown.length > 0
        ? `${section}: ${shown.join('; ')}${items.length > shown.length ? `; and ${items.length - shown.length} more` : ''}.`
        : `${section}: ${plural(items.length, 'commit')}.`,
    );
  }
  return { title: clip(tag, 300), summary: assemble(head, '', lines), symbols: [] };
}

function topDirs(paths: readonly string[], max = 3): string {
  const counts = new Map<string, number>();
  for (const p of paths) {
    const parts = p.split('/');
    const dir =
      parts.length <= 1 ? '(root)' : parts.slice(0, Math.min(2, parts.length - 1)).join('/');
    counts.set(dir, (counts.get(dir) ?? 0) + 1);
  }
  const sorted = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  const shown = sorted.slice(0, max).map(([d, k]) => `${d} (${k})`);
  return `${shown.join(', ')}${sorted.length > max ? `, and ${plural(sorted.length - max, 'other place')}` : ''}`;
}

/** A commit proposed or landed: subject, first body paragraph, where it touches, issues it cites. */
export function summarizeChangeset(commit: ChangesetCommit): Extract {
  const subject = squash(commit.subject ?? '') || `commit ${commit.oid.slice(0, 10)}`;
  const body = (commit.body ?? '')
    .split('\n')
    .filter(
      (l) => !/^[A-Z][\w-]*:\s/.test(l.trim()) || /^(?:Note|Why|Because|Context):/i.test(l.trim()),
    ) // trailers
    .filter((l) => !/^```/.test(l.trim()))
    .join('\n');
  const para = body
    .split(/\n\s*\n/)
    .map((p) => squash(plainInline(p)))
    .find((p) => /[a-z]{3}/i.test(p) && !/^(?:\{|\[|diff --git)/.test(p));
  const { files, insertions, deletions } = commit.stats;
  const issues = uniq(
    [...`${subject}\n${commit.body ?? ''}`.matchAll(/(?:^|[\s(])#(\d{1,7})\b/g)].map(
      (m) => `#${m[1]}`,
    ),
  );
  const parts = [
    /[.!?]$/.test(subject) ? subject : `${subject}.`,
    para ? firstSentences(para, 220) : null,
    `${plural(files, 'file')} changed (+${insertions} −${deletions})${commit.paths.length > 0 ? `, in ${topDirs(commit.paths)}` : ''}.`,
    issues.length > 0 ? `References ${listOf(issues, 5)}.` : null,
  ];
  return finish(subject, parts, []);
}
