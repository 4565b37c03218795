import { describe, expect, it } from 'vitest';
import { MAX_FILE_BYTES, summarizeFile } from '../../src/core/ladder/extract.js';

// Files shaped to make the Markdown extractor's patterns backtrack (hostile review): before
// the bounds of extract/markdown.ts, 64 KiB of "[" took 28 s and a file at the size cap ~30 min
// of CPU, repeated by every clone's `zz ladder build`. Each now takes well under a second
// (bench/extract-pathological.ts measures every extractor); the bound here is generous so a
// loaded machine does not fail it, while a quadratic pattern at this size cannot meet it.

const SHAPES = ['[', '![', '[![', '[a', '{@link ', '[a]\n', '![a](', '[a](b', '# #', '---\n'];

describe('the Markdown extractor on pathological input at the size cap', () => {
  for (const shape of SHAPES) {
    it(`${JSON.stringify(shape)} repeated`, { timeout: 120_000 }, () => {
      const n = Math.floor((MAX_FILE_BYTES - 64) / Buffer.byteLength(shape));
      const content = Buffer.from(`# Title\n\n${shape.repeat(n)}`);
      const t = performance.now();
      const out = summarizeFile('README.md', content);
      expect(performance.now() - t).toBeLessThan(8_000);
      expect(out?.title).toBe('Title');
    });
  }
});
