import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LadderSearch, type IndexRung } from '../../src/search/index.js';

// How ladder search ranks file rungs for a reader's wording (bench/quality.ts measures it on
// real packages): rungs with every word first, then those missing one, then any word; a word
// is judged rare or common within the repository searched, not across every indexed one.

const oid = (n: number): string => n.toString(16).padStart(40, '0');
const file = (path: string, summary: string, symbols: string[] = []): IndexRung => ({
  path,
  kind: 'file',
  title: path.split('/').pop()!,
  summary,
  symbols,
  anchor: { commit: oid(1), oid: oid(2) },
});

const CLI: IndexRung[] = [
  file('lib/util/wrap.js', 'JavaScript module, 27 lines.', ['width', 'margin']),
  file('lib/elements/text.js', 'Text prompt with a cursor.', ['TextPrompt', 'render']),
  file('lib/elements/date.js', 'Date prompt.', ['DatePrompt']),
  ...Array.from({ length: 40 }, (_, i) => file(`lib/parts/part${i}.js`, `Part ${i}.`)),
];
// Another repository where "wrap" is in every rung, and "long" in two.
const OTHER: IndexRung[] = Array.from({ length: 12 }, (_, i) =>
  file(`src/wrap-${i}.js`, `Wrap helper ${i}${i < 2 ? ' for long lines' : ''}.`, [`wrap${i}`]),
);
const PARSER: IndexRung[] = [
  file('lib/parser.js', 'Parser turning tokens into an abstract syntax tree.', ['Parser']),
  file('lib/stringify.js', 'Stringify a parsed css tree back to text.', ['stringify']),
  file('lib/tokenize.js', 'Splits css source into tokens.', ['tokenizer']),
  file('lib/list.js', 'Splits comma separated values.', ['comma', 'space']),
  file('functions/inc.js', 'JavaScript module exporting inc (21 lines).', ['inc', 'version']),
  file('classes/node.js', 'Class Node has clone and remove.', ['Node', 'clone']),
  file('lib/rule.js', 'Class Rule has append.', ['Rule']),
];

let dir: string;
let ls: LadderSearch;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'zz-rank-'));
  ls = new LadderSearch({ cacheDir: dir, persistDelayMs: 60_000 });
  await ls.setRepo('npm/prompts', oid(10), CLI);
  await ls.setRepo('npm/other', oid(11), OTHER);
  await ls.setRepo('npm/postcss', oid(12), PARSER);
});
afterAll(async () => {
  await ls.close();
  await rm(dir, { recursive: true, force: true });
});

const paths = (query: string, repo: string) =>
  ls.search({ query, repo, kind: 'file' }).hits.map((h) => h.path);

describe('ladder search ranking', () => {
  it('judges a word rare within the repository searched', () => {
    // Counted over every repository, "wrap" is common and "long" rare; in npm/prompts "long"
    // is absent and "wrap" names one file, which must not be lost for it.
    expect(paths('wrap long', 'npm/prompts')).toEqual(['lib/util/wrap.js']);
    expect(paths('wrap long text', 'npm/prompts')).toEqual(
      expect.arrayContaining(['lib/util/wrap.js', 'lib/elements/text.js']),
    );
  });

  it('lists rungs missing a word below the rungs that have them all', () => {
    const hits = paths('parse css tree', 'npm/postcss');
    // Only stringify.js has all three words; the parser, missing "css", follows it.
    expect(hits[0]).toBe('lib/stringify.js');
    expect(hits).toContain('lib/parser.js');
    expect(hits.indexOf('lib/parser.js')).toBeGreaterThan(0);
  });

  it('matches a long word to the abbreviation code uses for it, not to a longer head', () => {
    // "increment" → `inc`; "classes" must not reach "Class" (a head of five letters).
    expect(paths('increment', 'npm/postcss')).toEqual(['functions/inc.js']);
    expect(paths('classes', 'npm/postcss')).toEqual(['classes/node.js']);
    expect(paths('inc', 'npm/postcss')).toEqual(['functions/inc.js']);
  });
});
