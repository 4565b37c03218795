import { ERROR_CODES } from '../errors.js';

// What the CLI tells a user about its own command line: the exit codes (read from the one
// error table in errors.ts), and yargs' parse failures rewritten in the CLI's words — a
// missing flag named as the flag, an unknown flag with the nearest known one.

/** What each exit code means to a script; the error codes behind it come from ERROR_CODES. */
const EXIT_MEANING: Record<number, string> = {
  0: 'success',
  1: 'internal error (a bug in zz; the message says where)',
  2: 'invalid command line or arguments',
  3: 'not authenticated or not allowed',
  4: 'not found',
  5: 'conflict: changed, claimed or locked by someone else; read again and retry',
  6: 'not a usable repository, or a precondition failed',
  7: 'unavailable: daemon unreachable, disk full or read-only',
  8: 'git failed',
  9: 'the Lane is closed: it hands out no new work (zz work)',
};

export interface ExitCodeRow {
  exit: number;
  meaning: string;
  codes: string[];
}

export function exitCodeTable(): ExitCodeRow[] {
  const byExit = new Map<number, string[]>([[0, []]]);
  for (const [code, { exit }] of Object.entries(ERROR_CODES)) {
    byExit.set(exit, [...(byExit.get(exit) ?? []), code]);
  }
  return [...byExit.entries()]
    .sort(([a], [b]) => a - b)
    .map(([exit, codes]) => ({ exit, meaning: EXIT_MEANING[exit] ?? 'error', codes }));
}

/** The table as a Markdown table (README) or aligned text (`zz help exit-codes`). */
export function exitCodesText(markdown = false): string {
  const rows = exitCodeTable();
  if (markdown) {
    return [
      '| exit | meaning | error codes |',
      '| --- | --- | --- |',
      ...rows.map(
        (r) => `| ${r.exit} | ${r.meaning} | ${r.codes.map((c) => `\`${c}\``).join(', ')} |`,
      ),
    ].join('\n');
  }
  return rows
    .map(
      (r) => `  ${r.exit}  ${r.meaning}${r.codes.length ? `\n     (${r.codes.join(', ')})` : ''}`,
    )
    .join('\n');
}

/** One line for the foot of `zz --help`. */
export function exitCodesEpilogue(): string {
  return (
    'Exit codes: ' +
    exitCodeTable()
      .map((r) => `${r.exit} ${r.meaning.split(/[:;(,]/)[0]!.trim()}`)
      .join(', ') +
    '. More: zz help exit-codes'
  );
}

/**
 * `--lane_id x` read as `--lane-id x`: the tool flags are kebab-case and the schema's
 * snake_case names are accepted too, without yargs aliases (which doubled every line of
 * `--help` and of completion). Only flag names change, never values, and nothing after `--`.
 */
export function kebabFlags(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((a, i) =>
    (end < 0 || i < end) && /^--[a-z0-9]+(_[a-z0-9]+)+(=|$)/.test(a)
      ? a.replace(/^--[^=]+/, (name) => name.replace(/_/g, '-'))
      : a,
  );
}

/**
 * `--args-file -` and `--body-file -` (stdin) as `--…-file=-`: yargs reads a lone `-` after a
 * flag as no value and a stray positional, so the spaced form was refused ("unknown argument
 * -") while the documented spelling is the spaced one.
 */
export function stdinDashes(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if ((end < 0 || i < end) && /^--[a-z0-9-]+-file$/.test(a) && argv[i + 1] === '-') {
      out.push(`${a}=-`);
      i++;
    } else out.push(a);
  }
  return out;
}

function distance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** Commands left out of `zz help` (describe: false), never suggested: `hook` is git's. */
const HIDDEN_COMMANDS: ReadonlySet<string> = new Set(['hook']);

/** The candidate nearest to `word` within a few edits (a transposition counts as two), or null. */
export function nearest(word: string, candidates: readonly string[]): string | null {
  let best: string | null = null;
  let bestD = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const c of candidates) {
    const d = distance(word, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

/** The flags typed (`--name` or `--name=…`) that the command does not know. */
function unknownTyped(flags: readonly string[], typed: readonly string[]): string[] {
  const known = new Set(flags);
  return typed
    .filter((t) => t.startsWith('--') && t.length > 2)
    .map((t) => t.slice(2).split('=')[0]!)
    .filter((n) => !known.has(n) && !(n.startsWith('no-') && known.has(n.slice(3))));
}

function unknownFlags(names: readonly string[], flags: readonly string[]): string {
  return names
    .map((n) => {
      const hint = nearest(n, flags);
      return `unknown flag --${n}${hint ? `; did you mean --${hint}?` : ''}`;
    })
    .join('; ');
}

/**
 * Where to find the value a missing flag wants: `zz work` without `--lane` (or `zz ask claim`
 * without `--ask-id`) named the flag, and the user had to guess how to learn the ids.
 */
const LISTED_BY: Readonly<Record<string, string>> = {
  '--lane': 'zz lane list names the Lanes',
  '--lane-id': 'zz lane list names the Lanes',
  '--ask-id': 'zz ask list names the Asks',
};

/**
 * yargs' failure messages in the CLI's words. `flags` are the options the command knows
 * (for did-you-mean), `typed` the arguments as given: unknown names are reported as typed,
 * never as an alias yargs derived, and a misspelt flag is named before the required flag it
 * left missing. `choices`: each flag's allowed words, to point a word at the flag that takes it.
 */
export function rewriteParseFailure(
  msg: string,
  flags: readonly string[],
  typed: readonly string[],
  choices: Readonly<Record<string, readonly string[]>> = {},
): string {
  const missing = /^Missing required arguments?: (.+)$/.exec(msg);
  if (missing) {
    const misspelt = unknownTyped(flags, typed);
    if (misspelt.length) return unknownFlags(misspelt, flags);
    const names = missing[1]!.split(', ').map((n) => `--${n}`);
    const where = [...new Set(names.map((n) => LISTED_BY[n]).filter((w) => w !== undefined))];
    return `missing required flag${names.length > 1 ? 's' : ''} ${names.join(', ')}${where.map((w) => `; ${w}`).join('')}`;
  }
  const unknown = /^Unknown arguments?: (.+)$/.exec(msg);
  if (unknown) {
    const misspelt = unknownTyped(flags, typed);
    if (misspelt.length) return unknownFlags(misspelt, flags);
    const words = unknown[1]!.split(', ').filter((n) => typed.includes(n));
    return `unknown argument${words.length > 1 ? 's' : ''} ${(words.length ? words : [unknown[1]!]).join(', ')}`;
  }
  const didYouMean = /^Did you mean (.+)\?$/.exec(msg);
  if (didYouMean) {
    // yargs suggests any command within 3 edits, hidden ones included: `zz frob` got "did you
    // mean hook?" (a command for git's hooks, not in `zz help`) and lost the word typed. The
    // suggestion stands only where nearest() agrees and the command is listed; the word is
    // the typed one yargs measured (within its 3 edits of the suggestion).
    const suggestion = didYouMean[1]!;
    const words = typed.filter((t) => !t.startsWith('-') && t !== suggestion);
    const near = HIDDEN_COMMANDS.has(suggestion)
      ? undefined
      : words.find((t) => nearest(t, [suggestion]));
    if (near) return `unknown command ${near}; did you mean ${suggestion}?`;
    const word = words.find((t) => distance(t, suggestion) <= 3);
    return `unknown command${word ? ` ${word}` : ''}; \`zz help\` lists the commands`;
  }
  const notChoice = /^Invalid values?:\s*Argument: (\S+), Given: (.+), Choices: (.+)$/s.exec(msg);
  if (notChoice) {
    const [, flag, given, allowed] = notChoice as unknown as [string, string, string, string];
    // `--order newest`: the word belongs to another flag of this command (--direction).
    const word = given.trim().replace(/^"(.*)"$/, '$1');
    const other = Object.entries(choices).find(([f, cs]) => f !== flag && cs.includes(word));
    return `--${flag} must be one of ${allowed.trim()} (got ${given.trim()})${other ? `; did you mean --${other[0]} ${word}?` : ''}`;
  }
  return msg;
}
