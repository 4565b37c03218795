// Secrets out of every text zz keeps or prints that came from another machine: a model
// endpoint's error body (models/), a script's stderr (models/exec.ts), a GitHub answer
// (github/). Such a text becomes an ask_release's reason, a rung or a gh_fetch_* answer; a
// Lane's history and the Ladder sync to every remote, so a key in them is published. An
// endpoint or a proxy may echo the request's Authorization header, a base URL may carry a
// password, and an issue body may quote a token. One helper for all of them, so a shape one
// caller learns to hide is hidden for every caller. A leaf (no zod, nothing of zz): models/
// and github/ both import it.
//
// The rule for a text that is also cut short: redact first (`redactSecrets`), then cut, then
// run the backstop for the cut itself (`redactCutEnd`, or `redactCutStart` for a tail kept).

export const REDACTED = '[redacted]';

/** Shortest piece of a secret a cut may leave that the backstops take off. */
const MIN_CUT_RUN = 8;

/**
 * Each secret (4 characters or more: replacing "a" everywhere would garble the message and
 * hides nothing) as an endpoint may echo it: as is, percent-encoded (a query string it quotes)
 * and JSON-escaped, `/` as `\/` too (PHP's json_encode). Longest first, so a form containing
 * another is replaced whole.
 */
function secretForms(secrets: readonly (string | null | undefined)[]): string[] {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (!s || s.length < 4) continue;
    const json = JSON.stringify(s).slice(1, -1);
    for (const f of [s, encodeURIComponent(s), json, json.replace(/\//g, '\\/')]) forms.add(f);
  }
  return [...forms].sort((a, b) => b.length - a.length);
}

// Credentials whose value zz does not know, recognised by shape, so another identity's token
// is not kept either: GitHub's token formats; `Bearer …` (an echoed Authorization header) with
// any value but a short plain word, so "the bearer of bad news" in an issue body stays; and
// `token …` (GitHub's own Authorization scheme) only for a value that looks like a credential
// (`credentialLike`), since "token" is a common word ("the token cannot see it", "token
// authentication/authorization", "token src/core/token-store.ts").
const GITHUB_SHAPE = /\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})/g;
// zz's own tokens (core/token-store.ts: `zzt_` and 43 base64url characters), a piece of 8 or
// more too: a test command zz work ran read them from ~/.config/zz and /proc/*/environ, and its
// output went into an Ask's answer, to every member and remote. No \b: `_` and `-` are word
// and non-word characters alike, and `ZZ_TOKEN_zzt_…` must go too.
const ZZ_SHAPE = /zzt_[A-Za-z0-9_-]{8,}/g;
const BEARER = /\b(bearer)(\s+)(?![a-z]{1,15}[.:!?)]?(?:[\s"',;]|$))[^\s"',;]+/gi;
const TOKEN_WORD = /\b(token)(\s+)([A-Za-z0-9_\-.~+/]{16,}=*)/gi;
// The userinfo of a URL: `https://user:pw@host` (a password), or a credential-like user name
// alone (`https://<token>@github.com`); a plain user (`ssh://git@host`) stays.
const USERINFO = /(\/\/)([^/\s@"']+)@/g;

// Words or a path of them: each piece a word's length (≤ 20), the first of letters only. A
// random key of 16 characters or more is one long piece, or starts with a digit, or both.
const WORDS = /^[a-z]{1,20}(?:[/\-._~+][a-z0-9]{1,20})*$/i;

/** 16 characters or more, and not words joined by separators: a key, not prose or a path. */
function credentialLike(s: string): boolean {
  return s.length >= 16 && !WORDS.test(s.replace(/=+$/, ''));
}

/**
 * `text` with each secret's value (in each form of `secretForms`), GitHub and zz token shapes,
 * `Bearer …` and `token …` values and any URL userinfo replaced by `[redacted]`.
 */
export function redactSecrets(
  text: string,
  secrets: readonly (string | null | undefined)[] = [],
): string {
  let out = text;
  for (const f of secretForms(secrets)) out = out.split(f).join(REDACTED);
  return out
    .replace(GITHUB_SHAPE, REDACTED)
    .replace(ZZ_SHAPE, REDACTED)
    .replace(BEARER, `$1$2${REDACTED}`)
    .replace(TOKEN_WORD, (all, word: string, gap: string, value: string) =>
      credentialLike(value) ? `${word}${gap}${REDACTED}` : all,
    )
    .replace(USERINFO, (all, slashes: string, info: string) =>
      info.includes(':') || credentialLike(info) ? `${slashes}${REDACTED}@` : all,
    );
}

// A GitHub token shape, or a Bearer value, that a cut ended inside of: too short for the
// patterns above once cut, yet its prefix says what it was.
const CUT_SHAPE =
  /(?:zzt_[A-Za-z0-9_-]*|\bgh[pousr]_[A-Za-z0-9]*|\bgithub_pat_[A-Za-z0-9_]*|\bbearer\s+(?![a-z]{1,15}$|\[redacted\]$)[^\s"',;]+)$/i;

/**
 * A text already redacted and then cut short, with its end replaced when the cut fell inside a
 * secret: the exact-value match cannot see a key missing its last characters, so a trailing
 * run of 8 characters or more that begins some form of a secret goes, and so does a GitHub
 * token shape or `Bearer` value the cut ended in. Redact before cutting; this is the backstop
 * for the cut itself.
 */
export function redactCutEnd(
  cut: string,
  secrets: readonly (string | null | undefined)[] = [],
): string {
  let run = longestPiece(secrets, cut.length, (f, k) => cut.endsWith(f.slice(0, k)));
  const shape = CUT_SHAPE.exec(cut.slice(-200));
  if (shape && shape[0].length > run) run = shape[0].length;
  return run ? cut.slice(0, -run) + REDACTED : cut;
}

/**
 * The mirror of `redactCutEnd` for a text whose beginning was cut off (a tail kept, like the
 * last 16 KiB of a script's stderr): a leading run of 8 characters or more that ends some form
 * of a secret goes.
 */
export function redactCutStart(
  cut: string,
  secrets: readonly (string | null | undefined)[] = [],
): string {
  const run = longestPiece(secrets, cut.length, (f, k) => cut.startsWith(f.slice(-k)));
  return run ? REDACTED + cut.slice(run) : cut;
}

/** The longest k (8 or more, at most `max`) for which `at(form, k)` holds of a secret's form. */
function longestPiece(
  secrets: readonly (string | null | undefined)[],
  max: number,
  at: (form: string, k: number) => boolean,
): number {
  let run = 0;
  for (const f of secretForms(secrets)) {
    for (let k = Math.min(f.length, max); k >= MIN_CUT_RUN && k > run; k--) {
      if (at(f, k)) {
        run = k;
        break;
      }
    }
  }
  return run;
}

/**
 * `text` redacted, then cut at `max` characters (`…` marks the cut) with the backstop run on
 * the cut: the whole rule for a bounded text from another machine.
 */
export function redactAndCut(
  text: string,
  max: number,
  secrets: readonly (string | null | undefined)[] = [],
): string {
  const clean = redactSecrets(text, secrets);
  return clean.length <= max ? clean : `${redactCutEnd(clean.slice(0, max), secrets)}…`;
}
