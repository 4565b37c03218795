import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import {
  rungDoc,
  rungFilePath,
  rungPathFromFile,
  validateRungPath,
} from '../../src/schema/rung.js';

const hex = (c: string) => c.repeat(40);
const valid = {
  path: 'src/index.js',
  kind: 'file',
  title: 'index.js',
  summary: 'Entry point.',
  symbols: ['main'],
  anchor: { commit: hex('a'), oid: hex('b') },
  inputs_hash: 'c'.repeat(64),
  generator: { method: 'extractive', version: 'extract-1' },
  author: 'you@example.com[claude]',
  written_at: '2025-01-01T00:00:00Z',
};

describe('rung paths', () => {
  it('maps rung paths to ladder files and back', () => {
    const cases: Array<[string, string]> = [
      ['_repo', '_repo.rung.json'],
      ['src', 'src.rung.json'],
      ['src/index.js', 'src/index.js.rung.json'],
      ['_releases/v1.2.0', '_releases/v1.2.0.rung.json'],
      ['_changesets/' + hex('d'), `_changesets/${hex('d')}.rung.json`],
      ['_people/octo-cat', '_people/octo-cat.rung.json'],
      ['docs/a.rung.json', 'docs/a.rung.json.rung.json'],
    ];
    for (const [path, file] of cases) {
      expect(rungFilePath(path)).toBe(file);
      expect(rungPathFromFile(file)).toBe(path);
    }
    expect(() => rungPathFromFile('src/index.js')).toThrow(ZzError);
    expect(() => rungPathFromFile('.rung.json')).toThrow(ZzError);
  });

  it('refuses paths that could escape or corrupt a tree or ref', () => {
    const bad = [
      '',
      '/etc/passwd',
      'C:/x',
      '../x',
      'a/../b',
      'a/./b',
      'a//b',
      'a/',
      '.git/config',
      'x/.GIT/y',
      'a\0b',
      'a\nb',
      '-rf',
      'refs/x.lock',
      'a\\b',
      'x/' + 'y'.repeat(300),
    ];
    for (const p of bad) {
      let err: unknown;
      try {
        validateRungPath(p);
      } catch (e) {
        err = e;
      }
      expect(err, JSON.stringify(p)).toBeInstanceOf(ZzError);
      expect((err as ZzError).code).toBe('invalid_argument');
      expect((err as ZzError).message).toContain('rung path');
    }
    expect(validateRungPath('a/-b/.gitignore')).toBe('a/-b/.gitignore');
  });
});

describe('rung schema', () => {
  it('accepts a full rung and rejects unknown fields', () => {
    expect(rungDoc.parse(valid)).toEqual(valid);
    expect(rungDoc.safeParse({ ...valid, extra: 1 }).success).toBe(false);
  });

  it('bounds sizes and checks kinds against paths and anchors', () => {
    expect(rungDoc.safeParse({ ...valid, summary: 'x'.repeat(4097) }).success).toBe(false);
    expect(rungDoc.safeParse({ ...valid, summary: 'é'.repeat(2049) }).success).toBe(false); // 4098 bytes
    expect(rungDoc.safeParse({ ...valid, detail: 'x'.repeat(256 * 1024 + 1) }).success).toBe(false);
    expect(rungDoc.safeParse({ ...valid, title: 'x'.repeat(301) }).success).toBe(false);
    expect(rungDoc.safeParse({ ...valid, kind: 'release' }).success).toBe(false); // not under _releases/
    expect(rungDoc.safeParse({ ...valid, path: '_repo' }).success).toBe(false); // _repo is the repo rung
    expect(rungDoc.safeParse({ ...valid, path: '_repo', kind: 'repo' }).success).toBe(true);
    const { anchor: _anchor, ...unanchored } = valid;
    expect(rungDoc.safeParse(unanchored).success).toBe(false); // a file rung must cite a commit
    expect(rungDoc.safeParse({ ...unanchored, path: '_issues/12', kind: 'issue' }).success).toBe(
      true,
    );
    expect(rungDoc.safeParse({ ...valid, path: '../x' }).success).toBe(false);
    expect(
      rungDoc.safeParse({
        ...valid,
        generator: { method: 'model', version: '1', model: 'openai:gpt' },
      }).success,
    ).toBe(true);
    expect(
      rungDoc.safeParse({ ...valid, generator: { method: 'guess', version: '1' } }).success,
    ).toBe(false);
  });
});
