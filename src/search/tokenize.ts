// Tokenizing shared by indexing and querying. The default minisearch tokenizer keeps
// `parseConfigFile` whole, so a search for "config" would miss the file that defines it;
// identifiers are therefore indexed whole *and* as their camelCase / snake_case parts.

// Words too common in summaries to help ranking; dropping them also keeps shards small
// (every posting costs memory and load time).
const STOP_WORDS = new Set([
  'a',
  'an',
  'and',
  'are',
  'as',
  'at',
  'be',
  'by',
  'for',
  'from',
  'has',
  'have',
  'in',
  'is',
  'it',
  'its',
  'of',
  'on',
  'or',
  'that',
  'the',
  'this',
  'to',
  'was',
  'were',
  'will',
  'with',
]);

// Hashes, base64 blobs and minified code produce long "words" nobody searches for.
const MAX_TERM_LENGTH = 48;

// Separators: anything that is not a letter, digit, `_` or `$` (kept so that `snake_case`
// and `$ref` survive as identifiers).
const SEPARATORS = /[^\p{L}\p{N}_$]+/u;
const PATH_SEPARATORS = /[^\p{L}\p{N}$]+/u;
// Parts of an identifier: acronyms (`HTTP` in `HTTPServer`), capitalised or lower words with
// trailing digits (`utf8`, `V2`), bare numbers.
const WORD_PARTS = /\p{Lu}{2,}(?=\p{Lu}\p{Ll}|\d|$)|\p{Lu}?\p{Ll}+\d*|\p{Lu}+\d*|\d+/gu;

/** The lower-case parts of one identifier (`parseConfigFile` → parse, config, file). */
export function splitIdentifier(token: string): string[] {
  const parts: string[] = [];
  for (const piece of token.split(/[_$]+/)) {
    if (piece.length === 0) continue;
    const words = piece.match(WORD_PARTS);
    if (words === null) {
      parts.push(piece.toLowerCase());
      continue;
    }
    for (const w of words) parts.push(w.toLowerCase());
  }
  return parts;
}

const trimMarks = (t: string): string => t.replace(/^[_$]+|[_$]+$/g, '');

function keep(term: string): boolean {
  return term.length > 1 && term.length <= MAX_TERM_LENGTH && !STOP_WORDS.has(term);
}

/**
 * Index-time terms of a text: every token lower-cased, plus its identifier parts when it has
 * more than one. Paths additionally split on `.`, `_` and `-` (already separators here).
 */
export function indexTerms(text: string, field?: string): string[] {
  const out: string[] = [];
  const tokens = text.split(field === 'path' ? PATH_SEPARATORS : SEPARATORS);
  for (const token of tokens) {
    const whole = trimMarks(token.toLowerCase());
    if (whole.length === 0) continue;
    if (keep(whole)) out.push(whole);
    const parts = splitIdentifier(token);
    if (parts.length > 1) for (const p of parts) if (keep(p)) out.push(p);
  }
  return out;
}

/** One query token: its whole form and, for identifiers, the parts that must all match. */
export interface QueryToken {
  whole: string;
  parts: string[];
}

/** Query-time tokens, stop words dropped unless nothing else is left. */
export function queryTokens(text: string): QueryToken[] {
  const all: QueryToken[] = [];
  for (const token of text.split(SEPARATORS)) {
    const whole = trimMarks(token.toLowerCase());
    if (whole.length === 0 || whole.length > MAX_TERM_LENGTH) continue;
    const parts = splitIdentifier(token).filter((p) => p.length > 1 && !STOP_WORDS.has(p));
    all.push({ whole, parts: parts.length > 1 ? parts : [] });
  }
  const useful = all.filter((t) => t.whole.length > 1 && !STOP_WORDS.has(t.whole));
  return useful.length > 0 ? useful : all;
}
