// Directories and the repository, from their children and README. Part of the extractive summariser (../extract.ts).

import { baseName, clip, extOf, firstSentences, listOf, plainInline, plural } from './text.js';
import {
  type DirectoryChild,
  type Extract,
  MAX_SUMMARY_CHARS,
  MAX_SYMBOLS,
  type PackageInfo,
} from './types.js';

// Meta documents say little about what a folder does.
export const META_DOC =
  /^(?:changelog|changes|history|news|code_of_conduct|contributing|security|support|authors|contributors|maintainers|licen[cs]e|copying|notice|funding|codeowners|\.[\w.-]+|.*\.lock|package-lock\.json|yarn\.lock|pnpm-lock\.yaml|go\.sum)(?:\.\w+)?$/i;
export const README = /^readme(?:\.\w+)?$/i;
// Summaries that only restate the file's shape rank below ones written from its docs.
export const SHAPE_ONLY =
  /^(?:[\w#+() ]+ module|Type declarations|Minified|Empty file|JSON |YAML |TOML |Text file|Markdown document|[A-Z]+ file,)/;

export function childScore(c: DirectoryChild): number {
  let s = 0;
  if (c.kind === 'directory') s += 3;
  if (!SHAPE_ONLY.test(c.summary)) s += 2;
  s += Math.min(3, (c.symbols?.length ?? 0) / 3);
  if (c.size !== undefined) s += Math.min(2, Math.log10(1 + c.size / 1000));
  if (/^(?:index|main|mod|lib|__init__|cli|server|app)\.\w+$/i.test(c.name)) s += 1;
  if (/(?:^|[._-])(?:test|spec)s?(?:[._-]|$)|\.d\.ts$|\.min\.js$/i.test(c.name)) s -= 2;
  return s;
}

export function oneLiner(summary: string, max = 110): string {
  return firstSentences(summary, max, 1).replace(/\.$/, '');
}

export function census(children: readonly DirectoryChild[]): string {
  const files = children.filter((c) => c.kind === 'file');
  const dirs = children.filter((c) => c.kind === 'directory');
  // Files by extension (`.ts`), or by name when they have none (`.editorconfig`, `Makefile`):
  // the label is written as is, so a dotfile never gains a second dot.
  const exts = new Map<string, number>();
  for (const f of files) {
    const e = extOf(f.name);
    const label = e ? `.${e}` : baseName(f.name);
    exts.set(label, (exts.get(label) ?? 0) + 1);
  }
  const topExts = [...exts]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .slice(0, 3)
    .map(([label, n]) => (exts.size === 1 ? label : `${n} ${label}`));
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

export function keyLines(
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

export function leadOf(
  readme?: { summary: string } | null,
  pkg?: PackageInfo | null,
): string | null {
  if (pkg?.description && pkg.description.trim().length > 0)
    return firstSentences(plainInline(pkg.description), 220);
  if (readme?.summary && readme.summary.trim().length > 0) {
    // A README summary ends with its "Sections: …" list; the folder lead is its first sentences.
    return firstSentences(readme.summary.replace(/\s*Sections:.*$/s, ''), 220);
  }
  return null;
}

export function assemble(lead: string | null, count: string, lines: string[]): string {
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
