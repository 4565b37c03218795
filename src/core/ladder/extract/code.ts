// Source files by language: exported symbols, class members, leading docs. Part of the extractive summariser (../extract.ts).

import {
  commentProse,
  docBefore,
  GENERATED,
  leadFromComments,
  leadingComments,
  LICENCE,
  lineDocBefore,
  usefulProse,
} from './comments.js';
import {
  baseName,
  finish,
  firstSentences,
  listOf,
  normName,
  plural,
  squash,
  stem,
  uniq,
} from './text.js';
import {
  classOutlines,
  readerOrder,
  topLevelFunctions,
  usedNames,
  type ClassOutline,
} from './members.js';
import { mentionedWords, mentionsLine } from './mentions.js';
import { type Extract, MAX_DETAIL_CHARS, MAX_FILE_SYMBOLS, MAX_SYMBOLS } from './types.js';

/** The words of an identifier (`parseConfigFile` → parse, Config, File). */
const NAME_WORDS = /[A-Z]?[a-z]+|[A-Z]+(?![a-z])/g;

// --- languages -----------------------------------------------------------------------------

export const LANGUAGE: Record<string, string> = {
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

export const JS_EXT = new Set(['ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs']);

export interface CodeFacts {
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
  /** Classes with their members (JS/TS), for the summary, symbols and outline. */
  classes?: ClassOutline[];
  /** Top-level functions, exported or not. */
  functions?: string[];
  /** The identifiers the body uses most (usedNames). */
  used?: string[];
}

export function namesLikeFile(path: string): Set<string> {
  const names = new Set([normName(stem(path))]);
  const s = stem(path).toLowerCase();
  if (['index', 'mod', 'main', 'lib', '__init__', 'init'].includes(s)) {
    const parts = path.split('/');
    if (parts.length >= 2) names.add(normName(parts[parts.length - 2]!));
  }
  return names;
}

export function jsFacts(path: string, src: string): CodeFacts {
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
  const { lead: top, generated } = leadFromComments(fileComments(path, src));
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
    classes: classOutlines(src),
    functions: topLevelFunctions(src),
  };
  facts.used = usedNames(src, [
    ...facts.symbols,
    ...(facts.functions ?? []),
    ...(facts.classes ?? []).flatMap((c) => c.members.map((m) => m.replace(/^#/, ''))),
  ]);
  const from = [...sources].sort((a, b) => src.indexOf(a) - src.indexOf(b));
  if (local.length > 0 && from.length > 0) facts.also = `Re-exports from ${listOf(from, 3)}.`;
  if (local.length === 0 && sources.size > 0) {
    facts.verb = `re-exporting${facts.symbols.length > 0 ? '' : ' everything'} from ${listOf(from, 3)}${facts.symbols.length > 0 ? ':' : ''}`;
  }
  return facts;
}

/**
 * The leading comments that speak for the file: a line comment glued to the constant or
 * variable right under it (no blank line between) documents that constant, not the file
 * (postcss's stringifier.js opens with "Characters that end an at-rule name…").
 */
function fileComments(path: string, src: string) {
  const comments = leadingComments(src);
  const last = comments[comments.length - 1];
  if (last && src.startsWith('//', last.start)) {
    const next = /^[ \t]*(?:export[ \t]+)?(?:const|let|var)[ \t]+([A-Za-z_$][\w$]*)/.exec(
      src.slice(last.end, last.end + 200),
    );
    if (next && !namesLikeFile(path).has(normName(next[1]!))) comments.pop();
  }
  return comments;
}

export const JS_KEYWORDS = new Set([
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
export function topLevelKeys(src: string, open: number): string[] {
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

export const TEST_FILE =
  /(?:^|\/)(?:__tests__|tests?|spec)\/|[._-](?:test|spec)s?\.[cm]?[jt]sx?$|(?:^|\/)test_[^/]*\.py$|_test\.(?:py|go)$/;

export function isTestFile(path: string): boolean {
  return TEST_FILE.test(path);
}

/** Titles of the outermost describe/test blocks (or test functions), for test files. */
export function testTitles(src: string): string[] {
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

export function pythonDocstring(src: string, from: number): string | null {
  const m =
    /^[ \t]*[rRuUbB]?("""|''')([\s\S]*?)\1|^[ \t]*[rRuU]?(["'])((?:\\.|(?!\3).){0,400})\3/m.exec(
      src.slice(from, from + 16000),
    );
  if (!m || (m.index > 0 && src.slice(from, from + m.index).trim().length > 0)) return null;
  const prose = commentProse(m[2] ?? m[4] ?? '');
  return usefulProse(prose) ? firstSentences(prose) : null;
}

export function pythonFacts(path: string, src: string): CodeFacts {
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

export function goFacts(path: string, src: string): CodeFacts {
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

export function rustFacts(path: string, src: string): CodeFacts {
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

export function shellFacts(src: string): CodeFacts {
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

export function genericFacts(ext: string, src: string): CodeFacts {
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

export function lineCount(src: string): number {
  let n = 0;
  for (let i = src.indexOf('\n'); i >= 0; i = src.indexOf('\n', i + 1)) n++;
  return src.length > 0 && !src.endsWith('\n') ? n + 1 : n;
}

export function codeSummary(
  path: string,
  src: string,
  facts: CodeFacts,
  langName: string,
): Extract {
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
  const withMembers = (facts.classes ?? []).filter((c) => c.members.length > 0);
  for (const c of withMembers.slice(0, 2)) {
    const members = readerOrder(c.members);
    parts.push(`Class ${c.name} has ${listOf(members, 10)}.`);
  }
  const e = finish(baseName(path), parts, shown);
  // Members and internal functions rank a file for the logic it holds; exports come first.
  const extra = [
    ...withMembers.flatMap((c) => readerOrder(c.members).map((m) => `${c.name}.${m}`)),
    ...(facts.functions ?? []),
  ];
  const declared = uniq([...e.symbols, ...extra]);
  // Last, the names the body uses most: what the code is about beyond what it declares.
  e.symbols = uniq([...declared, ...(facts.used ?? [])]).slice(0, MAX_FILE_SYMBOLS);
  // The words its comments and messages use beyond those its names carry (mentions.ts).
  const named = new Set(
    e.symbols.flatMap((x) => x.match(NAME_WORDS) ?? []).map((w) => w.toLowerCase()),
  );
  const detail = outline(facts, lines, isDecl ? [] : mentionedWords(src, named));
  if (detail) e.detail = detail;
  return e;
}

/** The file's outline for `ladder_read`: exports, classes with members, functions, size. */
function outline(facts: CodeFacts, lines: number, mentions: readonly string[]): string | null {
  const out: string[] = [];
  if (facts.symbols.length > 0) out.push(`Exports: ${facts.symbols.join(', ')}`);
  for (const c of facts.classes ?? []) {
    const members = readerOrder(c.members);
    out.push(`class ${c.name} (line ${c.line})${members.length ? `: ${members.join(', ')}` : ''}`);
  }
  if (facts.functions && facts.functions.length > 0)
    out.push(`Functions: ${facts.functions.join(', ')}`);
  if (facts.tests && facts.tests.length > 0) out.push(`Tests: ${facts.tests.join('; ')}`);
  if (mentions.length > 0) out.push(mentionsLine(mentions));
  if (out.length === 0) return null;
  out.push(`${plural(lines, 'line')}.`);
  return out.join('\n').slice(0, MAX_DETAIL_CHARS);
}

export function isMinified(src: string): boolean {
  if (src.length < 3000) return false;
  const lines = lineCount(src);
  return src.length / Math.max(1, lines) > 300;
}
