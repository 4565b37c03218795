import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatFile } from '../../src/git/cat-file.js';
import { gitDiff, gitShowFile, type HistoryRepo } from '../../src/git/history.js';
import { runGitSync } from '../helpers/gen-repo.js';
import { zzErrorOf } from '../helpers/rejection.js';

// gitDiff and gitShowFile on a small hand-made repository whose diff is known line by line,
// each answer checked against native git. The 10,000-commit history: history.test.ts.

describe('on a hand-made repository', () => {
  let dir: string;
  let small: HistoryRepo;
  const g = (...args: string[]) => runGitSync(dir, args);
  const latin1 = Buffer.from('caf\xe9 cr\xe8me\n', 'latin1');
  const utf8Text = 'aé€😀 '.repeat(40) + '\n';

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'zz-history-'));
    g('init', '-q', '-b', 'main');
    g('config', 'user.name', 'T');
    g('config', 'user.email', 't@example.com');
    const w = (p: string, c: string | Buffer) => writeFileSync(join(dir, p), c);
    w('plain.txt', 'a\nb\nc\n');
    w('bin.dat', Buffer.from([120, 0, 121]));
    w('nonl.txt', 'no newline');
    w('mode.sh', 'echo\n');
    w('big.txt', Array.from({ length: 50 }, (_, i) => `${i + 1}\n`).join(''));
    w('tab\tand "quote" é.txt', 'q\n');
    w('tc', 'link target\n');
    w('gone.txt', 'bye\n');
    w('latin1.txt', latin1);
    w('utf8.txt', utf8Text);
    mkdirSync(join(dir, 'sub'));
    w('sub/inner.txt', 'inner\n');
    g('add', '-A');
    g('commit', '-q', '-m', 'base');
    w('plain.txt', 'a\nB\nc\n');
    w('bin.dat', Buffer.from([120, 0, 122]));
    w('nonl.txt', 'no newline changed');
    chmodSync(join(dir, 'mode.sh'), 0o755);
    g('mv', 'big.txt', 'moved.txt');
    w(
      'moved.txt',
      Array.from({ length: 50 }, (_, i) => (i === 24 ? 'twenty-five\n' : `${i + 1}\n`)).join(''),
    );
    g('mv', 'tab\tand "quote" é.txt', 'new\nline.txt');
    unlinkSync(join(dir, 'tc'));
    symlinkSync('plain.txt', join(dir, 'tc'));
    g('rm', '-q', 'gone.txt');
    w('added.txt', 'new\n');
    g('add', '-A');
    g('commit', '-q', '-m', 'change');
    small = { gitdir: join(dir, '.git'), workTree: dir, catFile: new CatFile(join(dir, '.git')) };
  });

  afterAll(() => {
    small?.catFile.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('parses every kind of change into exact hunks', async () => {
    const d = await gitDiff(small, { commit: 'main' });
    expect(d.base).toBe(g('rev-parse', 'main~1').trim());
    const by = new Map(d.files.map((f) => [f.path, f]));
    expect(d.files.map((f) => [f.status, f.path])).toEqual([
      ['added', 'added.txt'],
      ['modified', 'bin.dat'],
      ['deleted', 'gone.txt'],
      ['modified', 'mode.sh'],
      ['renamed', 'moved.txt'],
      ['renamed', 'new\nline.txt'],
      ['modified', 'nonl.txt'],
      ['modified', 'plain.txt'],
      ['type_changed', 'tc'],
    ]);
    expect(by.get('plain.txt')!.hunks).toEqual([
      { old_start: 1, old_lines: 3, new_start: 1, new_lines: 3, lines: [' a', '-b', '+B', ' c'] },
    ]);
    expect(by.get('added.txt')!.hunks).toEqual([
      { old_start: 0, old_lines: 0, new_start: 1, new_lines: 1, lines: ['+new'] },
    ]);
    expect(by.get('gone.txt')!.hunks).toEqual([
      { old_start: 1, old_lines: 1, new_start: 0, new_lines: 0, lines: ['-bye'] },
    ]);
    expect(by.get('nonl.txt')!.hunks).toEqual([
      {
        old_start: 1,
        old_lines: 1,
        new_start: 1,
        new_lines: 1,
        lines: [
          '-no newline',
          '\\ No newline at end of file',
          '+no newline changed',
          '\\ No newline at end of file',
        ],
      },
    ]);
    expect(by.get('moved.txt')).toMatchObject({ old_path: 'big.txt', binary: false });
    expect(by.get('moved.txt')!.hunks).toEqual([
      {
        old_start: 22,
        old_lines: 7,
        new_start: 22,
        new_lines: 7,
        lines: [' 22', ' 23', ' 24', '-25', '+twenty-five', ' 26', ' 27', ' 28'],
      },
    ]);
    // Names git would quote come through as they are.
    expect(by.get('new\nline.txt')).toMatchObject({
      old_path: 'tab\tand "quote" é.txt',
      hunks: [],
    });
    expect(by.get('bin.dat')).toMatchObject({ binary: true, hunks: [] });
    expect(by.get('mode.sh')).toMatchObject({ old_mode: '100644', new_mode: '100755', hunks: [] });
    expect(by.get('tc')).toMatchObject({ old_mode: '100644', new_mode: '120000' });
    expect(by.get('tc')!.hunks.map((h) => h.lines)).toEqual([
      ['-link target'],
      ['+plain.txt', '\\ No newline at end of file'],
    ]);
  });

  it('honours context_lines, paths, the root commit and max_bytes', async () => {
    const z = await gitDiff(small, {
      commit: 'main',
      context_lines: 0,
      paths: ['moved.txt', 'big.txt'],
    });
    expect(z.files.map((f) => [f.status, f.path])).toEqual([['renamed', 'moved.txt']]);
    expect(z.files[0]!.hunks[0]!.lines).toEqual(['-25', '+twenty-five']);
    // As in native git, paths limit rename detection too: the source outside them is unseen.
    const alone = await gitDiff(small, { commit: 'main', paths: ['moved.txt'] });
    expect(alone.files.map((f) => [f.status, f.path])).toEqual([['added', 'moved.txt']]);
    const root = await gitDiff(small, { commit: 'main~1', paths: ['plain.txt', 'sub'] });
    expect(root.base).toBeNull();
    expect(root.files.map((f) => [f.status, f.path])).toEqual([
      ['added', 'plain.txt'],
      ['added', 'sub/inner.txt'],
    ]);
    const full = await gitDiff(small, { commit: 'main' });
    const cut = await gitDiff(small, { commit: 'main', max_bytes: 300 });
    expect(cut.truncated).toBe(true);
    expect(cut.files.length).toBeLessThan(full.files.length);
    expect(cut.files.length).toBeGreaterThan(0);
    expect(JSON.stringify(cut.files).length).toBeLessThan(2000);
    for (const [i, f] of cut.files.entries()) {
      if (!f.truncated) expect(f).toEqual(full.files[i]);
    }
    expect((await gitDiff(small, { commit: 'main', max_bytes: 1 })).files).toEqual([]);
  });

  it('refuses hostile input to gitDiff', async () => {
    for (const opts of [
      { commit: '-x' },
      { commit: 'main', base: '--all' },
      { commit: 'main', paths: ['../etc/passwd'] },
      { commit: 'main', paths: ['/etc/passwd'] },
      { commit: 'main', paths: ['a\0b'] },
      { commit: 'main', context_lines: 101 },
      { commit: 'main', context_lines: -1 },
      { commit: 'main', max_bytes: 0 },
    ]) {
      expect((await zzErrorOf(gitDiff(small, opts))).code, JSON.stringify(opts)).toBe(
        'invalid_argument',
      );
    }
    expect((await zzErrorOf(gitDiff(small, { commit: 'nope' }))).code).toBe('not_found');
    expect((await zzErrorOf(gitDiff(small, { commit: 'main', base: 'nope' }))).code).toBe(
      'not_found',
    );
  });

  it('shows files exactly as git show, binary and invalid UTF-8 as base64', async () => {
    const text = await gitShowFile(small, { commit: 'main', path: 'plain.txt' });
    expect(text).toMatchObject({
      content: 'a\nB\nc\n',
      encoding: 'utf8',
      size: 6,
      next_offset: null,
    });
    expect(text.commit).toBe(g('rev-parse', 'main').trim());
    const bin = await gitShowFile(small, { commit: 'main', path: 'bin.dat' });
    expect(bin.encoding).toBe('base64');
    expect(Buffer.from(bin.content, 'base64')).toEqual(Buffer.from([120, 0, 122]));
    const l1 = await gitShowFile(small, { commit: 'main', path: 'latin1.txt' });
    expect(l1.encoding).toBe('base64');
    expect(Buffer.from(l1.content, 'base64')).toEqual(latin1);
    const nl = await gitShowFile(small, { commit: 'main', path: 'new\nline.txt' });
    expect(nl.content).toBe('q\n');
    const old = await gitShowFile(small, { commit: 'main~1', path: 'tab\tand "quote" é.txt' });
    expect(old.content).toBe('q\n');
    const link = await gitShowFile(small, { commit: 'main', path: 'tc' });
    expect(link.content).toBe('plain.txt');
  });

  it('pages text without splitting a character, and binary by exact bytes', async () => {
    const whole = Buffer.from(utf8Text);
    for (const limit of [1, 2, 3, 5, 7, 64]) {
      let offset: number | null = 0;
      let text = '';
      let pages = 0;
      while (offset !== null) {
        const p = await gitShowFile(small, { commit: 'main', path: 'utf8.txt', offset, limit });
        expect(p.encoding).toBe('utf8');
        expect(p.size).toBe(whole.length);
        expect(p.offset).toBe(offset);
        expect(p.content).not.toContain('\uFFFD');
        // Never more than limit bytes, unless one character alone is longer than the limit.
        expect(Buffer.byteLength(p.content)).toBeLessThanOrEqual(Math.max(limit, 4));
        text += p.content;
        offset = p.next_offset;
        pages++;
      }
      expect(text).toBe(utf8Text);
      expect(pages).toBeGreaterThan(1);
    }
    // An offset inside a character starts the page at that character.
    const mid = await gitShowFile(small, {
      commit: 'main',
      path: 'utf8.txt',
      offset: 2,
      limit: 10,
    });
    expect(mid.offset).toBe(1);
    expect(mid.content.startsWith('é')).toBe(true);
    // Binary pages are exact byte ranges.
    const b = await gitShowFile(small, { commit: 'main', path: 'bin.dat', offset: 1, limit: 1 });
    expect(b).toMatchObject({ encoding: 'base64', offset: 1, next_offset: 2, size: 3 });
    expect(Buffer.from(b.content, 'base64')).toEqual(Buffer.from([0]));
  });

  it('answers not_found and invalid_argument for gitShowFile', async () => {
    const missing = await zzErrorOf(gitShowFile(small, { commit: 'main', path: 'gone.txt' }));
    expect(missing.code).toBe('not_found');
    expect(missing.message).toContain('gone.txt');
    expect(missing.message).toContain(g('rev-parse', 'main').trim());
    expect((await zzErrorOf(gitShowFile(small, { commit: 'nope', path: 'plain.txt' }))).code).toBe(
      'not_found',
    );
    expect((await zzErrorOf(gitShowFile(small, { commit: 'main', path: 'sub' }))).code).toBe(
      'invalid_argument',
    );
    for (const path of [
      '../etc/passwd',
      '/etc/passwd',
      'sub/../plain.txt',
      'a\0b',
      '.git/config',
      'sub/.GIT/x',
      '-rf',
      './plain.txt',
      '',
    ]) {
      const e = await zzErrorOf(gitShowFile(small, { commit: 'main', path }));
      expect(e.code, path).toBe('invalid_argument');
    }
    for (const opts of [
      { commit: '-x', path: 'plain.txt' },
      { commit: 'main', path: 'plain.txt', offset: -1 },
      { commit: 'main', path: 'plain.txt', offset: 7 },
      { commit: 'main', path: 'plain.txt', limit: 0 },
    ]) {
      expect((await zzErrorOf(gitShowFile(small, opts))).code, JSON.stringify(opts)).toBe(
        'invalid_argument',
      );
    }
  });
});
