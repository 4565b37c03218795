// Markdown: title, first paragraph and section headings. Part of the extractive summariser (../extract.ts).

import { lineCount } from './code.js';
import {
  baseName,
  clip,
  finish,
  firstSentences,
  listOf,
  plainInline,
  plural,
  squash,
  uniq,
} from './text.js';
import { type Extract, MAX_SYMBOLS } from './types.js';

// --- Markdown ------------------------------------------------------------------------------

export interface MarkdownFacts {
  title: string | null;
  lead: string | null;
  /** Level-2 headings. */
  headings: string[];
  /** Every heading, any level, in order. */
  all: string[];
}

// Sections about the project rather than what it does: funding, people, process, legal, badges.
// Their headings are not listed and their paragraphs never become the lead.
const BOILERPLATE_HEADING =
  /\b(?:sponsors?(?:ship)?|sponsoring|backers?|donat(?:e|ions?)|funding|patreon|open ?collective|grants?|contributors?|contributing|how to (?:contribute|get involved|help)|code of conduct|licen[cs]e|security(?: policy)?|acknowledg(?:e?ments?)|thanks|credits|authors?|maintainers?|maintenance|badges?|star history|table of contents|contents|toc|changelog|support(?: the project| us)?|community|chat|discord|stargazers)\b/i;
// Lead paragraphs that are about money or people, not the software.
const BOILERPLATE_PARAGRAPH =
  /\b(?:sponsor(?:s|ed|ing)?|backers?|donat(?:e|ions?)|patreon|open ?collective|buy me a coffee|ko-fi|tidelift)\b/i;
// A line of links (navigation, badges) once the links are gone: separators only.
const LINKS = /!?\[(?:[^\]]|\][^(])*\]\([^)]*\)|<a\b[^>]*>[\s\S]*?<\/a>|<img\b[^>]*>/gi;
const isLinkLine = (l: string): boolean =>
  (l.match(LINKS)?.length ?? 0) >= 2 && /^[\s|·•,/–—-]*$/.test(l.replace(LINKS, ''));

// Bounds on what the per-line patterns see (found in review: their nested and unbounded
// classes are quadratic on a long line of "[" or a long paragraph of "[a]" lines, ~30 min of
// CPU for one 512 KiB file, on every clone that builds). Only the first paragraph and the
// headings are used, so a line is read up to MAX_LINE characters, a paragraph up to MAX_PARA,
// and the search for the lead paragraph stops after LEAD_SEARCH characters of lines.
const MAX_LINE = 2000;
const MAX_PARA = 4000;
const LEAD_SEARCH = 64 * 1024;

/** `# Title ##` → ['#', 'Title'], as /^(#{1,6})[ \t]+(.+?)[ \t#]*$/ read it, in linear time. */
function atxHeading(l: string): [string, string] | null {
  const m = /^(#{1,6})[ \t]/.exec(l);
  if (!m) return null;
  let start = m[1]!.length;
  while (start < l.length && (l[start] === ' ' || l[start] === '\t')) start++;
  if (start >= l.length) return null;
  let end = l.length;
  while (end > start && ' \t#'.includes(l[end - 1]!)) end--;
  // `.+?` takes at least one character even when the rest is all closing marks.
  return [m[1]!, l.slice(start, Math.max(end, start + 1))];
}

export function markdownFacts(src: string): MarkdownFacts {
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
  let paraRaw: string[] = [];
  let fence: string | null = null;
  let inHtmlComment = false;
  let inHtmlTag = false;
  let h1Seen = false;
  /** The level of the boilerplate section being skipped, or 0. */
  let skipLevel = 0;
  const flush = () => {
    const p = para.join(' ');
    // A paragraph of links one per line (a navigation bar) is not prose either.
    const nav = isLinkLine(paraRaw.join(' '));
    if (para.length > 0 && skipLevel === 0 && !nav && !BOILERPLATE_PARAGRAPH.test(p))
      paragraphs.push(p);
    para = [];
    paraRaw = [];
    paraChars = 0;
  };
  let leadBudget = LEAD_SEARCH;
  let paraChars = 0;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.slice(0, MAX_LINE);
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
    const h = atxHeading(l);
    const setext =
      !h &&
      l.length > 0 &&
      i + 1 < lines.length &&
      /^(=+|-+)\s*$/.test(lines[i + 1]!.slice(0, MAX_LINE).trim()) &&
      para.length === 0;
    if (h || setext) {
      flush();
      const level = h ? h[0].length : lines[i + 1]!.trim().startsWith('=') ? 1 : 2;
      const textOf = squash(plainInline(h ? h[1] : l));
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
      if (skipLevel > 0 && level <= skipLevel) skipLevel = 0;
      if (level >= 2 && BOILERPLATE_HEADING.test(textOf)) {
        skipLevel = level;
        continue;
      }
      if (level === 2 && textOf.length > 0) headings.push(clip(textOf, 60));
      continue;
    }
    if (l.length === 0) {
      flush();
      continue;
    }
    if (paragraphs.length >= 1 && fmDescription === null) continue; // only the first paragraph matters
    if (leadBudget <= 0 || paraChars > MAX_PARA) continue;
    leadBudget -= l.length + 1;
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
      isLinkLine(l) ||
      /^\[[^\]]+\]:\s/.test(l)
    )
      continue;
    if (/^(?:>\s*)?(?:`[^`]+`|\$ .*)$/.test(l)) continue; // a command line, not prose
    const quote = l.replace(/^>\s?/, '');
    para.push(quote === l ? stripped : plainInline(quote));
    paraRaw.push(l);
    paraChars += l.length + 1;
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

export function markdownSummary(path: string, src: string): Extract {
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
