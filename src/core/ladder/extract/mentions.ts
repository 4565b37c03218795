// The words a code file's prose uses: its comments and its messages (string literals with a
// space in them, such as `'invalid increment argument'` or `'Did you mean %s?'`). Part of the
// extractive summariser (../extract.ts). Names already reach a rung through its symbols; this
// is the other half of what `git grep` sees and a summary leaves out: semver's SemVer class
// says "increment" only in comments and errors, yargs's validation says "did you mean" only
// in a message. The words go to the file's outline (`detail`, one "Mentions:" line) and from
// there into the search index (search-sync.ts), not into the summary or the symbols.

const MAX_SCAN = 48 * 1024;
export const MAX_MENTIONS = 24;
const PREFIX = 'Mentions: ';

// Comments (line, block, hash) and quoted strings; a template literal is read as a string.
const PROSE =
  /\/\*[\s\S]*?\*\/|\/\/[^\n]*|(?<![\w$])#[ \t][^\n]*|'(?:[^'\\\n]|\\.){0,400}'|"(?:[^"\\\n]|\\.){0,400}"|`(?:[^`\\]|\\.){0,400}`/g;
const DIRECTIVE = /^['"]use (?:strict|client|server)['"]$/;
const WORD = /[A-Za-z][a-z]{3,23}(?![\w$])/g;

// English glue, words every program's comments use, and licence boilerplate (a licence
// header says nothing about what the file does).
const STOP = new Set(
  (
    'about above after again against also although always another anything around because been ' +
    'before being below between both cannot could does doing done down during each either else ' +
    'enough even ever every first from further given gives going have having here however into ' +
    'itself just keep kept last later least less like likely made make makes many might more ' +
    'most much must need needs never next none nothing once only other others otherwise ours ' +
    'over perhaps rather really same see seen should since some something still such than that ' +
    'their them then there these they thing things this those though through thus together too ' +
    'under unless until upon used uses using very want wants well were what whatever when where ' +
    'whether which while whose will with within without would your yours note todo fixme hack ' +
    'true false null undefined return returns param params type types default example ' +
    'function functions value values object string number boolean array const self eslint ' +
    'disable enable line next ignore istanbul prettier copyright license licensed licence ' +
    'permission hereby granted software warranty rights reserved redistribution provided ' +
    'including limited merchantability fitness purpose liability authors holders notice ' +
    'conditions distribute sublicense furnished portions substantial express implied http https'
  ).split(' '),
);

/**
 * The words of a file's comments and messages, most used first (ties: first seen), at most
 * `max`, leaving out those in `exclude` (lower-case: the words its names already carry).
 */
export function mentionedWords(
  src: string,
  exclude: ReadonlySet<string>,
  max = MAX_MENTIONS,
): string[] {
  const text = src.length > MAX_SCAN ? src.slice(0, MAX_SCAN) : src;
  const counts = new Map<string, number>();
  for (const m of text.matchAll(PROSE)) {
    const chunk = m[0];
    const quoted = chunk[0] === "'" || chunk[0] === '"' || chunk[0] === '`';
    // A string without a space is a key, a path or a name, not a message.
    if (quoted && (!chunk.includes(' ') || DIRECTIVE.test(chunk))) continue;
    // Skip URLs and the rest of a licence comment.
    if (/\bcopyright\b|permission is hereby granted|spdx-license/i.test(chunk)) continue;
    for (const w of chunk.replace(/https?:\/\/\S+/g, ' ').match(WORD) ?? []) {
      const lower = w.toLowerCase();
      if (STOP.has(lower) || exclude.has(lower)) continue;
      counts.set(lower, (counts.get(lower) ?? 0) + 1);
    }
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, max)
    .map(([w]) => w);
}

/** The outline line that carries the mentions. */
export const mentionsLine = (words: readonly string[]): string => `${PREFIX}${words.join(', ')}`;

/** The mentions of a file rung, read back from its outline (`detail`); [] when it has none. */
export function mentionsOf(detail: string | undefined): string[] {
  if (!detail) return [];
  const at = detail.indexOf(`\n${PREFIX}`);
  const start = detail.startsWith(PREFIX) ? 0 : at < 0 ? -1 : at + 1;
  if (start < 0) return [];
  const end = detail.indexOf('\n', start);
  return detail
    .slice(start + PREFIX.length, end < 0 ? detail.length : end)
    .split(', ')
    .filter((w) => /^[a-z]{4,24}$/.test(w));
}
