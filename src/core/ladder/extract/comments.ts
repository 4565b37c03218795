// Leading comments and doc blocks: which are prose, and their first sentences. Part of the extractive summariser (../extract.ts).

import { firstSentences, plainInline, squash } from './text.js';

// --- comments ------------------------------------------------------------------------------

// Comment blocks that are tooling, not prose: lint pragmas, licence headers, type-checker
// switches, coverage hints, generated-file markers.
export const PRAGMA =
  /\beslint\b|prettier-ignore|@ts-|\bistanbul\b|\bc8 ignore|\bjshint\b|\bjscs\b|^\s*globals?\s|\btslint:|biome-ignore|deno-lint|\bnoinspection\b|@(?:jest|vitest)-environment|@flow\b|@jsx\b|@jsxImportSource|(?:^|\s)#?(?:end)?region\b|\bpylint:|\bnoqa\b|\bmypy:|\btype:\s*ignore|-\*-\s*coding|^\s*vim?:|\bfmt:\s*(?:off|on)|go:build|\+build\b|nolint|@refresh\b|webpackChunkName|@__PURE__/i;
export const LICENCE =
  /@license\b|@preserve\b|\bcopyright\b|\(c\)\s*\d{4}|spdx-license-identifier|licensed under|permission is hereby granted|all rights reserved|this (?:file|program|library) is (?:free software|part of)|redistribution and use|warranty|apache license|mit license|gnu (?:general|lesser)/i;
export const GENERATED =
  /@generated\b|\bauto-?generated\b|\bautomatically generated\b|\bcode generated\b|\bdo not (?:edit|modify)\b/i;

// JSDoc/TSDoc block tags end the prose; these few introduce file-level prose instead.
export const FILE_TAGS =
  /@(?:file(?:overview)?|overview|module|packageDocumentation|description|summary|remarks)\b/g;
export const BLOCK_TAG = /^@[a-zA-Z]+/;

export interface Comment {
  text: string;
  start: number;
  end: number;
}

/** A comment that starts lower-case ("returns the …") reads as a sentence once capitalised. */
export const capitalize = (t: string): string =>
  /^[a-z]{2,}\s/.test(t) && !/^(?:npm|npx|git|yarn|pnpm|node|zz)\s/.test(t)
    ? t[0]!.toUpperCase() + t.slice(1)
    : t;

/** Cleans the inside of a comment (prefix characters already removed) into prose. */
export function commentProse(raw: string): string {
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
export function usefulProse(text: string): boolean {
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
export function leadingComments(
  src: string,
  opts: { hash?: boolean; dash?: boolean } = {},
): Comment[] {
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
export function leadFromComments(comments: Comment[]): { lead: string | null; generated: boolean } {
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
export function docBefore(src: string, at: number): string | null {
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
export function lineDocBefore(src: string, at: number, mark: string): string | null {
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
