import { describe, expect, it } from 'vitest';
import { formatResult } from '../../src/cli/format.js';

// How a table cell is cut to its 44 columns (format.ts, terminal.ts): a path keeps its file's
// name in view, a name too long to keep (a changeset's commit hash) keeps its start, as a
// hash is known by.
describe('a path cut to fit a table', () => {
  const pathCell = (path: string) =>
    formatResult({ rungs: [{ path, kind: 'file', stale: false, summary: 's' }] }, { color: false })
      .split('\n')[2]!
      .split('  ')[0]!;

  it('keeps the file name and cuts the folders between', () => {
    expect(
      pathCell('tests/integration/cli/special-characters-in-path/ignore-emoji/ignored/1.js'),
    ).toBe('tests/integrat…ath/ignore-emoji/ignored/1.js');
  });

  it("keeps a long name's start when the name alone would not fit", () => {
    expect(pathCell('_changesets/d7bf7cc06c63676b273fa496340f4a8e7f3a2b1c')).toBe(
      '_changesets/d7bf7cc06c63676b273fa496340f4a8…',
    );
  });

  it('leaves a path that fits as it is', () => {
    expect(pathCell('src/click/parser.py')).toBe('src/click/parser.py');
  });
});
