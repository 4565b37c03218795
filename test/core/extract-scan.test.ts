import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BUNDLER_EXPORT,
  DECLARATION,
  EXPORT_LIST,
  EXPORT_STAR,
  EXPORTS_DOT,
  MODULE_EXPORTS,
} from '../../src/core/ladder/extract/code.js';
import {
  CLASS_HEAD,
  NAMED_FUNCTION,
  TOP_LEVEL_FUNCTION,
} from '../../src/core/ladder/extract/members.js';
import {
  lineExec,
  lineMatches,
  lineStartMatches,
  literalMatches,
} from '../../src/core/ladder/extract/scan.js';
import { testSeed } from '../helpers/seeded.js';

// scan.ts finds a pattern's matches by jumping to a literal instead of letting the RegExp try
// every character; it must find exactly what `matchAll` finds. Compared here on random text
// made of the pieces these patterns care about (line breaks of every kind included), for each
// real pattern of the extractor with the literal it is searched by.

// Words and phrases these patterns look for, and the punctuation between them.
const PIECES = [
  'var f = function',
  'let g = () => ',
  'const h = x => ',
  'async function k(',
  'export default class C ',
  'export ',
  'export',
  'exports.',
  'module.exports',
  'module.',
  'class ',
  'class',
  'function ',
  'function',
  'function* ',
  'default ',
  'const ',
  'let ',
  'var ',
  'async ',
  'type ',
  'declare ',
  'abstract ',
  '__export(',
  ' from ',
  ' as ',
  'Foo',
  'bar',
  'x$',
  ' ',
  '  ',
  '\t',
  '{',
  '}',
  '(',
  ')',
  '() => ',
  'x => ',
  '*',
  ' = ',
  '=',
  ':',
  ';',
  ',',
  "'",
  '"',
  '`',
  "'a'",
  '"./b"',
  '.',
  '/',
  '//',
  '/*',
  '*/',
  'é',
  '0',
];
// Line breaks: `^` honours all of these; most files have only \n.
const BREAKS = ['\n', '\r', '\r\n', '\u2028', '\u2029'];

const text = fc
  .tuple(
    fc.array(fc.array(fc.constantFrom(...PIECES), { maxLength: 8 }), { maxLength: 24 }),
    fc.boolean(),
    fc.array(fc.constantFrom(...BREAKS), { minLength: 24, maxLength: 24 }),
  )
  .map(([lines, onlyLf, breaks]) =>
    lines.map((l, i) => l.join('') + (onlyLf ? '\n' : breaks[i])).join(''),
  );

const shape = (ms: Iterable<RegExpExecArray>) => [...ms].map((m) => [m.index, ...m]);

// [pattern, literal, how scan.ts finds it]
const LINE_PATTERNS: Array<[string, RegExp, string]> = [
  ['DECLARATION', DECLARATION, 'export'],
  ['EXPORT_LIST', EXPORT_LIST, 'export'],
  ['EXPORT_STAR', EXPORT_STAR, 'export'],
  ['EXPORTS_DOT', EXPORTS_DOT, 'exports.'],
  ['CLASS_HEAD', CLASS_HEAD, 'class'],
];

describe('extract/scan: the same matches as matchAll', () => {
  it.each(LINE_PATTERNS)('lineMatches with %s', (_name, re, literal) => {
    const seed = testSeed(`lineMatches ${_name}`);
    fc.assert(
      fc.property(text, (src) => {
        expect(shape(lineMatches(src, re, literal))).toEqual(shape(src.matchAll(re)));
      }),
      { numRuns: 2000, seed },
    );
  });

  it('lineExec from any offset, as a global exec from lastIndex (CLASS_HEAD, MODULE_EXPORTS)', () => {
    const seed = testSeed('lineExec');
    const global = new RegExp(MODULE_EXPORTS.source, 'gm');
    fc.assert(
      fc.property(text, fc.nat(), (src, n) => {
        const from = src.length === 0 ? 0 : n % (src.length + 1);
        for (const [re, literal] of [
          [CLASS_HEAD, 'class'],
          [global, 'module.exports'],
        ] as const) {
          re.lastIndex = from;
          const want = re.exec(src);
          re.lastIndex = 0;
          expect(shape([lineExec(src, re, literal, from)].filter((m) => m !== null))).toEqual(
            shape([want].filter((m) => m !== null)),
          );
        }
        // The non-global pattern as jsFacts runs it: the first match.
        expect(shape([lineExec(src, MODULE_EXPORTS, 'module.exports')!].filter(Boolean))).toEqual(
          shape([MODULE_EXPORTS.exec(src)!].filter(Boolean)),
        );
      }),
      { numRuns: 2000, seed },
    );
  });

  it('lineStartMatches with TOP_LEVEL_FUNCTION', () => {
    const seed = testSeed('lineStartMatches');
    fc.assert(
      fc.property(text, (src) => {
        expect(shape(lineStartMatches(src, TOP_LEVEL_FUNCTION, 'edafclv'))).toEqual(
          shape(src.matchAll(TOP_LEVEL_FUNCTION)),
        );
      }),
      { numRuns: 2000, seed },
    );
  });

  it('literalMatches with NAMED_FUNCTION and BUNDLER_EXPORT', () => {
    const seed = testSeed('literalMatches');
    fc.assert(
      fc.property(text, (src) => {
        expect(shape(literalMatches(src, NAMED_FUNCTION, 'function'))).toEqual(
          shape(src.matchAll(NAMED_FUNCTION)),
        );
        expect(shape(literalMatches(src, BUNDLER_EXPORT, '__export('))).toEqual(
          shape(src.matchAll(BUNDLER_EXPORT)),
        );
      }),
      { numRuns: 2000, seed },
    );
  });

  it('a wrong literal is caught (the comparison can fail)', () => {
    // `class` is not on every DECLARATION line: searching by it misses `export const x`.
    const src = 'export const x = 1;\nexport class Y {}\n';
    expect(shape(lineMatches(src, DECLARATION, 'class'))).not.toEqual(
      shape(src.matchAll(DECLARATION)),
    );
  });
});
