import { MAX_FILE_BYTES, summarizeFile } from '../src/core/ladder/extract.js';

// Every extractor (by file name) on inputs shaped to make regular expressions backtrack, at the
// size cap: each must take well under a second (test/core/extract-pathological.test.ts holds
// the Markdown ones to a generous bound). Prints the slow ones (> 150 ms) and the worst.
//
//   node --import tsx bench/extract-pathological.ts        # N=<bytes> ONLY=<file name>
//
// Measured (2-core machine shared with other jobs), before → after the bounds of
// extract/markdown.ts: README.md of 32 KiB of "[" 12.1 s → 0.02 s; at 512 KiB every shape and
// every extractor ≤ ~0.9 s (README.md of "---" lines, linear: 131,072 setext headings).
const N = Number(process.env.N ?? MAX_FILE_BYTES - 16);
const pats = [
  '[',
  '[a]\n',
  '<a ',
  '<img ',
  '/**',
  '{@link ',
  '![',
  '![a](',
  '*',
  '_a ',
  '`',
  '[a',
  '](',
  '# ',
  '<',
  '\n',
  ' ',
  'a',
  '"',
  "'",
  '/*',
  '//',
  '#',
  '(',
  '{',
  'export ',
  'def ',
  'fn ',
  '**a',
  '&',
  '[![',
  ']',
  '[a](b',
  '<!--',
  '```\n',
  '---\n',
  '- ',
  '| ',
  'a_',
  '@param ',
  ':',
];
const names = [
  'README.md',
  'a.ts',
  'a.js',
  'a.py',
  'a.rs',
  'a.go',
  'a.sh',
  'a.json',
  'a.yaml',
  'a.toml',
  'a.txt',
  'Dockerfile',
  'Makefile',
  'LICENSE',
  'a.c',
  'a.java',
  'go.mod',
  'package.json',
  'a.rb',
];
const only = process.env.ONLY;
let worst = 0;
for (const name of names) {
  if (only && name !== only) continue;
  for (const p of pats) {
    const s = p.repeat(Math.floor(N / Buffer.byteLength(p)));
    const t = performance.now();
    summarizeFile(name, Buffer.from(s));
    const ms = performance.now() - t;
    worst = Math.max(worst, ms);
    if (ms > 150) console.log(name, JSON.stringify(p), ms.toFixed(0), 'ms');
  }
}
console.log('worst', worst.toFixed(0));
