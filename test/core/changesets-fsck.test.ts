import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertFsckClean, fsckFilesOf, type EntryKind } from '../../src/core/changesets-fsck.js';
import { ZzError } from '../../src/errors.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { makeRepo } from '../helpers/temp-repo.js';

// The fsck rules of a changeset (src/core/changesets-fsck.ts) held to git itself: many
// generated tree entries (hostile .gitmodules and .gitattributes under every spelling git reads
// as one, and ordinary files) go into one real repository, `git fsck --strict` judges them all
// at once, and zz must refuse exactly what fsck reports as an error. The one leeway: a
// .gitmodules git cannot parse is only noted by fsck (gitmodulesParse); zz refuses it.

function git(dir: string, args: string[], input?: string | Buffer) {
  const r = spawnSync('git', args, { cwd: dir, input, maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { code: r.status, out: r.stdout.toString('utf8'), err: r.stderr.toString('utf8') };
}

interface Sample {
  name: string;
  mode: '100644' | '100755' | '120000' | '040000' | '160000';
  content: Buffer;
}

// Names git reads as .gitmodules or .gitattributes (and a few it does not).
const NAMES = [
  '.gitmodules',
  '.GITMODULES',
  '.GitModules',
  '.gitmodules.',
  '.gitmodules . .',
  '.gitmodules:stream',
  '.git\u200cmodules',
  '\ufeff.gitmodules',
  'gitmod~1',
  'GITMOD~4',
  'gi7eba~1',
  'gi7eb~12',
  'gi7eba~9.',
  'g~123456',
  '~1234567',
  'gitmod~5',
  'gi~1.',
  '.gitmodule',
  'x.gitmodules',
  '.gitmodules-x',
  'gitmodules',
  '.gitattributes',
  '.GITATTRIBUTES ',
  'gitatt~2',
  'gi7d29~1',
  '.git\u200dattributes',
  'README.md',
];

const SUB_NAMES = ['a', 'A.b', '..', '../a', 'a/../b', 'a\\..\\b', '...', '', 'x y', '-x', 'a/..'];
const KEYS = ['path', 'url', 'update', 'PATH', 'Url', 'branch', 'path', 'url'];
const VALUES = [
  '-x',
  'x',
  ' -x',
  '"-x"',
  '"x" -y',
  '\\\n-x',
  './x',
  '../x',
  '../../:x',
  '..\\:x',
  './../x',
  '../.././:h',
  './%0a',
  './x%0Ay',
  './%0a:x',
  'git://h/%0a',
  'git://h/x',
  'https://',
  'https://h/x',
  'https:///x',
  'https://%0a/x',
  'https://u%0a@h/x',
  'https://u:p%0a@h/x',
  'https://u@/x',
  'https://h?q%0a',
  'https://h#%0a',
  'http::https://h/x',
  'http::h',
  'https::https://%0ah',
  'ftp://h:21/x',
  'ftps://u:p@h:990',
  'ssh://h/x',
  'h:x',
  '!cmd',
  'none',
  'x # c',
  'x ; -y',
  'a\\tb',
  'a\\qb',
  '"open',
  '-',
  '',
  'x\\',
];

function gitmodules(rnd: () => number): Buffer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const eol = pick(['\n', '\n', '\n', '\r\n', '\r']);
  const lines: string[] = [];
  const sections = 1 + Math.floor(rnd() * 3);
  for (let s = 0; s < sections; s++) {
    const name = pick(SUB_NAMES).replace(/\\/g, rnd() < 0.5 ? '\\\\' : '\\');
    lines.push(
      pick([
        `[submodule "${name}"]`,
        `[submodule "${name}"]`,
        `[SubModule "${name}"]`,
        `[submodule.${name}]`,
        '[submodule]',
        `[ submodule "${name}"]`,
        `[submodule "${name}"`,
        `[core]`,
      ]),
    );
    const n = 1 + Math.floor(rnd() * 3);
    for (let k = 0; k < n; k++) {
      const key = pick(KEYS);
      if (rnd() < 0.08) lines.push(`\t${key}`);
      else
        lines.push(`${pick(['\t', '', '  '])}${key}${pick([' = ', '=', ' =\t'])}${pick(VALUES)}`);
      if (rnd() < 0.1) lines.push(pick(['# comment', '; -x', '', '-garbage', '\tpath = ok']));
    }
  }
  const bom = rnd() < 0.05 ? pick(['\xef\xbb\xbf', '\xef\xbb']) : '';
  return Buffer.from(bom + lines.join(eol) + (rnd() < 0.8 ? eol : ''), 'latin1');
}

function gitattributes(rnd: () => number): Buffer {
  const lens = [10, 2046, 2047, 2048, 3000];
  const lines = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () =>
    'a'.repeat(lens[Math.floor(rnd() * lens.length)]!),
  );
  const nul = rnd() < 0.2 ? '\0' : '';
  return Buffer.from(nul + lines.join(rnd() < 0.5 ? '\n' : '\r\n') + ' text\n', 'latin1');
}

const HAND: Array<[string, string]> = [
  ['.gitmodules', '[submodule "a"]\n\tpath = -x\n\turl = https://example.com/a\n'],
  ['.gitmodules', '[submodule "a"]\n\tpath = a\n\turl = --upload-pack=touch /tmp/pwned\n'],
  ['.gitmodules', '[submodule "../../x"]\n\tpath = x\n\turl = ./x\n'],
  ['.gitmodules', '[submodule "a"]\n\tupdate = !sh -c id\n'],
  ['.gitmodules', '[submodule "a"]\n\tpath = a\n\turl = https://example.com/a.git\n'],
  ['.gitmodules', '[submodule "a"]\n\tpath = a\n\turl = ../a.git\n\tbranch = main\n'],
  // The corners of git's url checks, each on its own (git decides; zz must agree).
  ...[
    './%0a:x',
    './x%0a',
    '..//x',
    '../:x',
    '../../x/:y',
    '.\\..\\:x',
    'https://h%0a:1/x',
    'https://u%0a:p@h/x',
    'https://u:p%0a@h/x',
    'https://h/x%0a',
    'https://%41/x',
    'https::h/x',
    'http::https://h',
    'git://h%0a/x',
    'git://h:%0a',
  ].map((url): [string, string] => ['.gitmodules', `[submodule "u"]\n\turl = ${url}\n`]),
  ['gi7eba~1', '[submodule "a"]\n\tpath = -x\n'],
  ['~1234567', 'a'.repeat(3000) + '\n'],
];

describe('changeset fsck rules agree with git fsck', () => {
  const { dir, cleanup } = makeRepo('zz-fsck-rules-');
  afterAll(cleanup);

  it('refuses exactly the entries `git fsck --strict` reports as errors', async () => {
    const seed = testSeed('changesets-fsck');
    const rnd = prng(seed);
    const samples: Sample[] = HAND.map(([name, text]) => ({
      name,
      mode: '100644',
      content: Buffer.from(text),
    }));
    for (let i = 0; i < 400; i++) {
      const name = NAMES[Math.floor(rnd() * NAMES.length)]!;
      const r = rnd();
      const mode: Sample['mode'] =
        r < 0.8
          ? '100644'
          : r < 0.85
            ? '100755'
            : r < 0.9
              ? '120000'
              : r < 0.95
                ? '040000'
                : '160000';
      const attributes = /att/i.test(name) ? rnd() < 0.8 : rnd() < 0.1;
      samples.push({ name, mode, content: attributes ? gitattributes(rnd) : gitmodules(rnd) });
    }
    // Every sample's own objects: a unique blob (a trailing comment line keeps it unique), a
    // directory around it for '040000', a made-up commit for '160000'.
    samples.forEach((s, i) => {
      s.content = Buffer.concat([s.content, Buffer.from(`\n# sample ${i}\n`)]);
    });
    const files = samples.map((s, i) => {
      const f = join(dir, `.git/sample-${i}`);
      writeFileSync(f, s.content);
      return f;
    });
    const blobs = git(dir, ['hash-object', '-w', '--stdin-paths'], files.join('\n') + '\n')
      .out.trim()
      .split('\n');
    expect(blobs).toHaveLength(samples.length);
    const mktree = (entries: string[][]) => {
      const input = entries.map((e) => e.map((x) => x + '\0').join('') + '\0').join('');
      const out = git(dir, ['mktree', '-z', '--missing', '--batch'], input).out.trim().split('\n');
      expect(out).toHaveLength(entries.length);
      return out;
    };
    const inner = mktree(samples.map((_, i) => [`100644 blob ${blobs[i]}\tf`]));
    const gitlinks = samples.map(() => randomBytes(20).toString('hex'));
    const entryOid = (s: Sample, i: number) =>
      s.mode === '040000' ? inner[i]! : s.mode === '160000' ? gitlinks[i]! : blobs[i]!;
    const type = (s: Sample) =>
      s.mode === '040000' ? 'tree' : s.mode === '160000' ? 'commit' : 'blob';
    const outer = mktree(
      samples.map((s, i) => [`${s.mode} ${type(s)} ${entryOid(s, i)}\t${s.name}`]),
    );
    const root = mktree([
      outer.map((t, i) => `040000 tree ${t}\ts${String(i).padStart(4, '0')}`),
    ])[0]!;
    const commit = git(dir, ['commit-tree', '-m', 'samples', root]).out.trim();
    git(dir, ['update-ref', 'refs/heads/samples', commit]);

    const fsck = git(dir, ['fsck', '--strict', '--no-dangling', '--no-progress']);
    const errors = new Set<string>();
    const parseNotes = new Set<string>();
    for (const line of (fsck.out + fsck.err).split('\n')) {
      const m = /^(error|warning) in \w+ ([0-9a-f]{40}): (\w+)/.exec(line);
      if (m?.[1] === 'error') errors.add(m[2]!);
      else if (m?.[3] === 'gitmodulesParse') parseNotes.add(m[2]!);
    }

    const missed: string[] = [];
    const overRefused: string[] = [];
    let refusedCount = 0;
    for (const [i, s] of samples.entries()) {
      const oids = [outer[i]!, blobs[i]!, inner[i]!, gitlinks[i]!];
      const fsckRefuses = oids.some((o) => errors.has(o));
      const kind: EntryKind =
        s.mode === '120000' ? 'symlink' : s.mode === '160000' ? 'other' : 'file';
      const path = s.mode === '040000' ? `${s.name}/f` : s.name;
      let why: string | null = null;
      try {
        await assertFsckClean(path, kind, s.content);
      } catch (e) {
        if (!(e instanceof ZzError) || e.code !== 'unsafe_content') throw e;
        why = e.message;
        refusedCount++;
      }
      const shown = `#${i} ${s.mode} ${JSON.stringify(s.name)} ${JSON.stringify(s.content.toString('latin1'))}`;
      if (fsckRefuses && why === null) missed.push(shown);
      if (!fsckRefuses && why !== null && !parseNotes.has(blobs[i]!)) {
        overRefused.push(`${shown}: ${why}`);
      }
    }
    expect(missed, 'git fsck refuses these, zz let them through').toEqual([]);
    expect(overRefused, 'zz refuses these, git fsck does not').toEqual([]);
    // The samples reach both sides of every rule.
    expect(errors.size).toBeGreaterThan(50);
    expect(samples.length - refusedCount).toBeGreaterThan(50);
  });

  it('reads every spelling git reads as .gitmodules or .gitattributes, and no other', () => {
    const modules = NAMES.filter((n) => fsckFilesOf(n).includes('gitmodules'));
    const attributes = NAMES.filter((n) => fsckFilesOf(n).includes('gitattributes'));
    expect(modules).toEqual(NAMES.slice(0, 15));
    // "g~123456" and "~1234567" are NTFS short names of either file.
    expect(attributes).toEqual([...NAMES.slice(13, 15), ...NAMES.slice(21, 26)]);
  });
});
