import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  assertOid,
  assertRefName,
  assertTreePath,
  printable,
  TREE_PATH_LIMITS,
} from '../../src/git/ref-names.js';

// Direct tests of git/ref-names.ts (issue 10): what may become a ref name or a tree path.
// Ref names are also checked against `git check-ref-format`, so zz never accepts a name git
// would refuse.

const gitAccepts = (ref: string): boolean => {
  try {
    execFileSync('git', ['check-ref-format', ref], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

describe('assertRefName', () => {
  const good = [
    'refs/zz/lanes/ship',
    'refs/zz/changesets/cs-0123456789',
    'refs/heads/feature/x-1',
    'refs/tags/v1.2.3',
  ];
  const bad = [
    'heads/main',
    'refs/zz/',
    'refs//x',
    'refs/zz/.hidden',
    'refs/zz/x.lock',
    'refs/zz/-opt',
    'refs/zz/a..b',
    'refs/zz/a b',
    'refs/zz/a~1',
    'refs/zz/a^',
    'refs/zz/a:b',
    'refs/zz/a?',
    'refs/zz/a*',
    'refs/zz/a[',
    'refs/zz/a\\b',
    'refs/zz/a@{1}',
    'refs/zz/x.',
    'refs/zz/a\x01',
    'refs/zz/a\x7f',
    'refs/' + 'x'.repeat(1100),
  ];

  it('accepts names git accepts', () => {
    for (const r of good) {
      expect(assertRefName(r)).toBe(r);
      expect(gitAccepts(r), r).toBe(true);
    }
  });

  it('refuses names git refuses, and more (option-like, lock-like, over 1 KiB)', () => {
    for (const r of bad) {
      expect(() => assertRefName(r), r).toThrow(/invalid ref name/);
    }
    // Everything zz refuses that git would accept is a deliberate extra (leading "-",
    // length); the rest git refuses too.
    for (const r of bad.filter((x) => !x.includes('/-') && x.length < 1000 && x !== 'heads/main')) {
      expect(gitAccepts(r), r).toBe(false);
    }
  });

  // Valid names are remembered (a write checks its ref four times); refusals never are.
  it('refuses a bad name every time, before and after many good ones (past the bound kept)', () => {
    for (let round = 0; round < 2; round++) {
      for (const r of bad) expect(() => assertRefName(r), r).toThrow(/invalid ref name/);
      for (let i = 0; i < 5000; i++)
        expect(assertRefName(`refs/zz/lanes/l${i}`)).toBe(`refs/zz/lanes/l${i}`);
      for (const r of good) expect(assertRefName(r)).toBe(r);
    }
  });
});

describe('assertTreePath', () => {
  it('is the tree-path policy with its limits', () => {
    expect(TREE_PATH_LIMITS).toEqual({ pathBytes: 4096, componentBytes: 255, depth: 64 });
    expect(assertTreePath('a/b c/ü.txt')).toBe('a/b c/ü.txt');
    expect(() => assertTreePath('a/\u202eb', 'files.path')).toThrow(
      /files\.path "a\/\\u202eb" is not allowed: it contains a bidirectional/,
    );
    expect(() => assertTreePath('x/'.repeat(64) + 'y')).toThrow(/deeper than 64/);
    expect(() => assertTreePath('é'.repeat(128))).toThrow(/longer than 255 bytes/);
    expect(() => assertTreePath(('a'.repeat(200) + '/').repeat(21))).toThrow(/4096 bytes/);
  });
});

describe('printable', () => {
  it('shows control and bidi characters as escapes and cuts at 120 characters', () => {
    expect(printable('a\x1b]0;x\x07b')).toBe('a\\x1b]0;x\\x07b');
    expect(printable('a\u202eb\u2066')).toBe('a\\u202eb\\u2066');
    expect(printable('\x85')).toBe('\\x85');
    expect(printable('x'.repeat(500))).toHaveLength(120);
  });
});

describe('assertOid', () => {
  it('takes only 40 lowercase hex digits', () => {
    expect(assertOid('a'.repeat(40))).toBe('a'.repeat(40));
    for (const bad of ['A'.repeat(40), 'a'.repeat(39), 'a'.repeat(41), 'HEAD', '']) {
      expect(() => assertOid(bad), bad).toThrow(/40-character hex/);
    }
  });
});
