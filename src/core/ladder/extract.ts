// The offline, model-free summariser behind `zz ladder build` (DESIGN §6): it reads what a
// file says about itself — a leading doc comment, the doc of the export named like the file,
// exported symbols, Markdown headings and first paragraph, manifest descriptions — and writes
// a few plain sentences. Pure: no git, no I/O, so it is cheap to test and to run over 10k files.
// Heuristics follow research/ladder-search.md §2.2; bump EXTRACT_VERSION when they change, so
// rungs written by older heuristics are regenerated.
//
// The pieces live in extract/: text helpers, comments, code by language, Markdown, manifests,
// folders and history. This module is the public face: summarizeFile and re-exports.

import {
  codeSummary,
  genericFacts,
  goFacts,
  isMinified,
  JS_EXT,
  jsFacts,
  LANGUAGE,
  lineCount,
  pythonFacts,
  rustFacts,
  shellFacts,
} from './extract/code.js';
import { leadFromComments, leadingComments } from './extract/comments.js';
import {
  dockerfileSummary,
  goModSummary,
  jsonSummary,
  licenseSummary,
  makefileSummary,
  textSummary,
  tomlSummary,
  yamlSummary,
} from './extract/manifests.js';
import { markdownSummary } from './extract/markdown.js';
import { baseName, extOf, finish, plural, skipReason } from './extract/text.js';
import type { Extract } from './extract/types.js';

export {
  EXTRACT_VERSION,
  MAX_FILE_BYTES,
  MAX_SUMMARY_CHARS,
  type ChangesetCommit,
  type DirectoryChild,
  type Extract,
  type PackageInfo,
  type ReleaseRange,
  type SkipReason,
} from './extract/types.js';
export { clip, firstSentences, skipReason } from './extract/text.js';
export { looksLikeCode } from './extract/comments.js';
export { summarizeDirectory, summarizeRepo } from './extract/folders.js';
export { summarizeChangeset, summarizeRelease } from './extract/history.js';

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
