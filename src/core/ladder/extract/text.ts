// Small text helpers: names, clipping, first sentences, lists. Part of the extractive summariser (../extract.ts).

import {
  type Extract,
  LEAD_CHARS,
  MAX_FILE_BYTES,
  MAX_SUMMARY_CHARS,
  MAX_SYMBOLS,
  SHOWN_SYMBOLS,
  type SkipReason,
} from './types.js';

// --- small text helpers ---------------------------------------------------------------------

export const BINARY_EXTENSIONS = new Set(
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

export function baseName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? path : path.slice(i + 1);
}

export function extOf(path: string): string {
  const b = baseName(path).toLowerCase();
  const i = b.lastIndexOf('.');
  return i <= 0 ? '' : b.slice(i + 1);
}

export function stem(path: string): string {
  const b = baseName(path);
  const i = b.indexOf('.', 1);
  return i < 0 ? b : b.slice(0, i);
}

export const normName = (s: string): string => s.toLowerCase().replace(/[^a-z0-9]/g, '');

export function squash(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}

/** Cuts at a word boundary, marking the cut. */
export function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  const cut = s.slice(0, max - 1);
  const sp = cut.lastIndexOf(' ');
  return (sp > max * 0.6 ? cut.slice(0, sp) : cut).replace(/[\s,;:(–-]+$/, '') + '…';
}

export const ABBREVIATIONS =
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
export function plainInline(s: string): string {
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
export function listOf(list: readonly string[], shown = SHOWN_SYMBOLS): string {
  const items = list.map((x) => (x === 'default' ? 'a default export' : x));
  if (items.length === 0) return '';
  if (items.length === 1) return items[0]!;
  if (items.length <= shown)
    return `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
  return `${items.slice(0, shown).join(', ')} and ${items.length - shown} more`;
}

export function plural(n: number, word: string, many = `${word}s`): string {
  return `${n} ${n === 1 ? word : many}`;
}

export function uniq(items: Iterable<string>): string[] {
  return [...new Set(items)];
}

export function finish(
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
