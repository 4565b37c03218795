import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXTRACT_VERSION, summarizeFile } from '../../src/core/ladder/extract.js';

// The extractor's output on ~1,500 real files from node_modules is byte-for-byte what it was
// when fixtures/extract/golden.json was written (by hand, with bench/extract-golden.ts,
// never by a test): speed work on src/core/ladder/extract/* must not move a summary, a symbol
// or an outline line. A heuristics change on purpose bumps EXTRACT_VERSION and regenerates the
// golden file in the same commit.

interface Golden {
  extract_version: string;
  files: Array<[string, string, string]>;
}

const hash16 = (b: Buffer | string): string =>
  createHash('sha256').update(b).digest('hex').slice(0, 16);

describe('extractor golden outputs', () => {
  const golden = JSON.parse(
    readFileSync(join('fixtures', 'extract', 'golden.json'), 'utf8'),
  ) as Golden;

  it('is for this extractor version', () => {
    // A bumped version means the heuristics changed on purpose: regenerate the golden file
    // (node --import tsx bench/extract-golden.ts) from the commit that bumps it.
    expect(golden.extract_version).toBe(EXTRACT_VERSION);
  });

  it('summarizeFile gives the same title, summary, symbols and outline as when recorded', () => {
    const nm = join(process.cwd(), 'node_modules');
    const changed: string[] = [];
    let compared = 0;
    for (const [path, inputHash, outputHash] of golden.files) {
      const abs = join(nm, path);
      if (!existsSync(abs)) continue;
      const content = readFileSync(abs);
      // A dependency upgraded since the golden file was written: not the extractor's doing.
      if (hash16(content) !== inputHash) continue;
      compared++;
      const out = JSON.stringify(summarizeFile(join('packages', path), content));
      if (hash16(out) !== outputHash) changed.push(`${path}: ${out.slice(0, 400)}`);
    }
    expect(changed, changed.slice(0, 5).join('\n\n')).toEqual([]);
    // Most inputs must still be there, or this test proves nothing.
    expect(compared).toBeGreaterThan(golden.files.length * 0.9);
  });
});
