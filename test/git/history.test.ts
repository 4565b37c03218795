import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatFile } from '../../src/git/cat-file.js';
import {
  clearHistoryCache,
  configureHistoryCache,
  gitDiff,
  gitLog,
  gitShowFile,
  type GitLogOptions,
  type HistoryRepo,
  type LogCommit,
} from '../../src/git/history.js';
import { genRepo, runGitSync, type GenRepo } from '../helpers/gen-repo.js';
import { zzErrorOf } from '../helpers/rejection.js';

// Every answer is checked against native git on the same repository: a 10,000-commit history
// with merges, renames and clock skew (generated once). The small hand-made repo whose diff is
// known line by line: history-hand-made.test.ts.

const EMPTY_TREE = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';

function gitBytes(cwd: string, args: string[]): Buffer {
  const r = spawnSync('git', args, {
    cwd,
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, LC_ALL: 'C' },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')}: ${r.stderr.toString()}`);
  return r.stdout;
}

async function pageAll(
  repo: HistoryRepo,
  opts: Omit<GitLogOptions, 'cursor'>,
): Promise<LogCommit[]> {
  const all: LogCommit[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await gitLog(repo, { ...opts, cursor });
    expect(page.commits.length).toBeLessThanOrEqual(opts.limit ?? 100);
    if (page.next_cursor) expect(page.commits.length).toBe(opts.limit ?? 100);
    all.push(...page.commits);
    cursor = page.next_cursor ?? undefined;
    if (++pages > 10_000) throw new Error('paging does not end');
  } while (cursor);
  return all;
}

function revList(dir: string, args: string[]): string[] {
  return runGitSync(dir, ['rev-list', ...args])
    .split('\n')
    .filter((l) => l.length > 0);
}

let big: GenRepo;
let repo: HistoryRepo;

beforeAll(() => {
  big = genRepo({ commits: 10_000, seed: 7 });
  repo = { gitdir: big.gitdir, workTree: big.dir, catFile: new CatFile(big.gitdir) };
});

afterAll(() => {
  repo?.catFile.close();
  big?.cleanup();
});

describe('gitLog', () => {
  it('pages the whole history oldest first, exactly as git rev-list --reverse', async () => {
    clearHistoryCache();
    const native = revList(big.dir, ['--reverse', 'main']);
    expect(native.length).toBe(10_000);
    const ours = await pageAll(repo, { ref: 'main', limit: 500 });
    expect(ours.map((c) => c.oid)).toEqual(native);
    expect(new Set(ours.map((c) => c.oid)).size).toBe(ours.length);
    // The history has merges: no commit may repeat on a merge DAG.
    expect(ours.filter((c) => c.parents.length === 2).length).toBeGreaterThan(100);
  });

  it('returns parents, author, committer and message as git log does', async () => {
    const ours = await pageAll(repo, { ref: 'main', limit: 500 });
    const raw = gitBytes(big.dir, [
      'log',
      '--reverse',
      '-z',
      '--format=%H%x01%P%x01%an%x01%ae%x01%at%x01%ai%x01%cn%x01%ce%x01%ct%x01%B',
      'main',
    ]).toString('utf8');
    const native = raw.split('\0').filter((r) => r.length > 0);
    expect(native.length).toBe(ours.length);
    native.forEach((rec, i) => {
      const [oid, parents, an, ae, at, ai, cn, ce, ct, body] = rec.split('\x01');
      const c = ours[i]!;
      expect(c.oid).toBe(oid);
      expect(c.parents).toEqual(parents ? parents.split(' ') : []);
      expect(c.author).toEqual({ name: an, email: ae, time: Number(at), timezone: ai!.slice(-5) });
      expect(c.committer.name).toBe(cn);
      expect(c.committer.email).toBe(ce);
      expect(c.committer.time).toBe(Number(ct));
      expect(c.message).toBe(body);
    });
    expect(ours.some((c) => c.author.name === 'Zoë Ünicode')).toBe(true);
    expect(ours.some((c) => c.message.includes('\n\nBody line one.'))).toBe(true);
  });

  it('fetches the bodies of pages past the cached ones, with the same answers', async () => {
    const whole = await pageAll(repo, { ref: 'main', limit: 500 });
    // Room for a few hundred bodies only: later pages go back to git for theirs.
    const old = configureHistoryCache({ walkBodyBytes: 100_000 });
    try {
      const paged = await pageAll(repo, { ref: 'main', limit: 450 });
      expect(paged).toEqual(whole);
    } finally {
      configureHistoryCache(old);
    }
  });

  it('filters by path like git rev-list --reverse <ref> -- <path> (default simplification)', async () => {
    const renamed = big.tipPaths.find((p) => /-r\d+\.txt$/.test(p))!;
    const paths = [
      'd03',
      'd07/',
      'side',
      'special/with space.txt',
      'special/tab\there.txt',
      renamed,
      'bin/blob.bin',
      'no/such/path',
    ];
    for (const path of paths) {
      const native = revList(big.dir, ['--reverse', 'main', '--', path.replace(/\/$/, '')]);
      const ours = await pageAll(repo, { ref: 'main', path, limit: 37 });
      expect(
        ours.map((c) => c.oid),
        path,
      ).toEqual(native);
      // Parents stay the commit's own, not the simplified history's.
      const nativeParents = runGitSync(big.dir, [
        'log',
        '--reverse',
        '--format=%P',
        'main',
        '--',
        path,
      ])
        .split('\n')
        .slice(0, -1);
      expect(
        ours.map((c) => c.parents.join(' ')),
        path,
      ).toEqual(nativeParents);
    }
    // A pathspec is taken literally: "*" is not a glob.
    expect((await gitLog(repo, { ref: 'main', path: 'd0*' })).commits).toEqual([]);
  });

  it('offers topological orders that never list a parent after its child', async () => {
    for (const [order, flag] of [
      ['topo', '--topo-order'],
      ['date', '--date-order'],
    ] as const) {
      const native = revList(big.dir, ['--reverse', flag, 'main']);
      const ours = await pageAll(repo, { ref: 'main', limit: 500, order });
      expect(ours.map((c) => c.oid)).toEqual(native);
      const seen = new Set<string>();
      for (const c of ours) {
        for (const p of c.parents) expect(seen.has(p)).toBe(true);
        seen.add(c.oid);
      }
    }
  });

  it('pages newest first exactly as git rev-list, and both directions mirror each other', async () => {
    clearHistoryCache();
    const native = revList(big.dir, ['main']);
    const newest = await pageAll(repo, { ref: 'main', limit: 333, direction: 'newest' });
    expect(newest.map((c) => c.oid)).toEqual(native);
    const oldest = await pageAll(repo, { ref: 'main', limit: 500 });
    expect(newest.map((c) => c.oid)).toEqual(oldest.map((c) => c.oid).reverse());
    // Bodies fetched past the cache budget answer the same.
    const old = configureHistoryCache({ walkBodyBytes: 100_000 });
    try {
      expect(await pageAll(repo, { ref: 'main', limit: 450, direction: 'newest' })).toEqual(newest);
    } finally {
      configureHistoryCache(old);
    }
    // With a path and a topological order too.
    for (const [args, flags] of [
      [{ path: 'd03' }, ['main', '--', 'd03']],
      [{ order: 'topo' as const }, ['--topo-order', 'main']],
    ] as const) {
      const ours = await pageAll(repo, { ref: 'main', limit: 97, direction: 'newest', ...args });
      expect(ours.map((c) => c.oid)).toEqual(revList(big.dir, [...flags]));
    }
    // A cursor is bound to its direction.
    const first = await gitLog(repo, { ref: 'main', limit: 10, direction: 'newest' });
    expect(
      (await zzErrorOf(gitLog(repo, { ref: 'main', limit: 10, cursor: first.next_cursor! }))).code,
    ).toBe('invalid_argument');
  });

  it('filters by since like git rev-list --since, in both directions', async () => {
    const times = runGitSync(big.dir, ['log', '--format=%ct', 'main'])
      .split('\n')
      .filter(Boolean)
      .map(Number)
      .sort((a, b) => a - b);
    for (const q of [0.5, 0.9, 0.999]) {
      const since = times[Math.floor(times.length * q)]!;
      const native = revList(big.dir, [`--since=${since}`, 'main']);
      expect(native.length).toBeGreaterThan(0);
      const newest = await pageAll(repo, { ref: 'main', limit: 211, direction: 'newest', since });
      expect(
        newest.map((c) => c.oid),
        String(since),
      ).toEqual(native);
      const oldest = await pageAll(repo, { ref: 'main', limit: 211, since: String(since) });
      expect(oldest.map((c) => c.oid)).toEqual(
        revList(big.dir, ['--reverse', `--since=${since}`, 'main']),
      );
      for (const c of newest) expect(c.committer.time).toBeGreaterThanOrEqual(since);
    }
    const iso = new Date(times[Math.floor(times.length * 0.8)]! * 1000).toISOString();
    const viaIso = await pageAll(repo, {
      ref: 'main',
      limit: 500,
      direction: 'newest',
      since: iso,
    });
    expect(viaIso.map((c) => c.oid)).toEqual(
      revList(big.dir, [`--since=${Math.floor(Date.parse(iso) / 1000)}`, 'main']),
    );
    for (const bad of ['yesterday', '2024-13-45', -1, 1.5, '--all']) {
      expect(
        (await zzErrorOf(gitLog(repo, { ref: 'main', since: bad as never }))).code,
        String(bad),
      ).toBe('invalid_argument');
    }
  });

  it('keeps paging the tip it started from when the ref moves', async () => {
    const tip = revList(big.dir, ['-n', '1', 'main~2000'])[0]!;
    runGitSync(big.dir, ['update-ref', 'refs/heads/moving', tip]);
    const native = revList(big.dir, ['--reverse', tip]);
    const first = await gitLog(repo, { ref: 'moving', limit: 500 });
    runGitSync(big.dir, ['update-ref', 'refs/heads/moving', 'main']);
    // A fresh cache must give the same answer from the cursor alone.
    clearHistoryCache();
    const rest: LogCommit[] = [];
    let cursor = first.next_cursor;
    while (cursor) {
      const page = await gitLog(repo, { ref: 'moving', limit: 500, cursor });
      rest.push(...page.commits);
      cursor = page.next_cursor;
    }
    expect([...first.commits, ...rest].map((c) => c.oid)).toEqual(native);
    runGitSync(big.dir, ['update-ref', '-d', 'refs/heads/moving']);
  });

  it('serves a short history in one page and an unrelated ref as itself', async () => {
    const firstParents = revList(big.dir, ['--first-parent', 'main']).length;
    const ref = `main~${firstParents - 10}`;
    const page = await gitLog(repo, { ref });
    expect(page.commits.length).toBeGreaterThanOrEqual(10);
    expect(page.commits.map((c) => c.oid)).toEqual(revList(big.dir, ['--reverse', ref]));
    expect(page.next_cursor).toBeNull();
    expect(page.commits[0]!.parents).toEqual([]);
  });

  it('refuses hostile or malformed input with invalid_argument', async () => {
    const bad: GitLogOptions[] = [
      { ref: '-x' },
      { ref: '--output=/tmp/x' },
      { ref: 'main\nHEAD' },
      { ref: 'main', path: '../etc/passwd' },
      { ref: 'main', path: 'd03/../../x' },
      { ref: 'main', path: '/etc/passwd' },
      { ref: 'main', path: 'd03\0x' },
      { ref: 'main', path: '.git/config' },
      { ref: 'main', path: '-x' },
      { ref: 'main', limit: 0 },
      { ref: 'main', limit: 501 },
      { ref: 'main', limit: 1.5 },
      { ref: 'main', cursor: 'not a cursor!' },
      { ref: 'main', cursor: Buffer.from('{"v":1}').toString('base64url') },
    ];
    for (const opts of bad) {
      const e = await zzErrorOf(gitLog(repo, opts));
      expect(e.code, JSON.stringify(opts)).toBe('invalid_argument');
    }
    expect((await zzErrorOf(gitLog(repo, { ref: 'main', limit: 0 }))).message).toMatch(/limit/);
    expect((await zzErrorOf(gitLog(repo, { ref: 'main', path: '../x' }))).message).toMatch(/path/);
    // A forged cursor naming a blob, or a commit that does not exist.
    const blob = runGitSync(big.dir, ['rev-parse', 'main:bin/blob.bin']).trim();
    for (const t of [blob, 'f'.repeat(40)]) {
      const forged = Buffer.from(
        JSON.stringify(['git_log', 1, { t, i: 1, o: t, p: null }]),
      ).toString('base64url');
      expect((await zzErrorOf(gitLog(repo, { ref: 'main', cursor: forged }))).code).toBe(
        'not_found',
      );
    }
    // A cursor belongs to its path.
    const page = await gitLog(repo, { ref: 'main', path: 'd03', limit: 5 });
    const e = await zzErrorOf(
      gitLog(repo, { ref: 'main', path: 'd04', limit: 5, cursor: page.next_cursor! }),
    );
    expect(e.code).toBe('invalid_argument');
  });

  it('answers not_found for an unknown ref', async () => {
    expect((await zzErrorOf(gitLog(repo, { ref: 'no-such-branch' }))).code).toBe('not_found');
    expect((await zzErrorOf(gitLog(repo, { ref: 'main~20000' }))).code).toBe('not_found');
  });
});

describe('gitDiff against native git', () => {
  const STATUS: Record<string, string> = {
    added: 'A',
    modified: 'M',
    deleted: 'D',
    renamed: 'R',
    copied: 'C',
    type_changed: 'T',
  };

  function nativeNameStatus(from: string, to: string): string[] {
    const toks = gitBytes(big.dir, ['diff-tree', '-r', '-M', '--name-status', '-z', from, to])
      .toString('utf8')
      .split('\0');
    const out: string[] = [];
    for (let i = 0; i < toks.length - 1;) {
      const st = toks[i++]!;
      if (st[0] === 'R' || st[0] === 'C') out.push(`${st[0]} ${toks[i++]} -> ${toks[i++]}`);
      else out.push(`${st[0]} ${toks[i++]}`);
    }
    return out;
  }

  const ours = (files: Array<{ status: string; path: string; old_path: string | null }>) =>
    files.map((f) =>
      f.old_path
        ? `${STATUS[f.status]} ${f.old_path} -> ${f.path}`
        : `${STATUS[f.status]} ${f.path}`,
    );

  it('lists the same files and statuses as git diff-tree -r -M --name-status', async () => {
    const parentOf = new Map<string, string | undefined>();
    for (const line of revList(big.dir, ['--reverse', '--parents', 'main'])) {
      const [oid, ...parents] = line.split(' ');
      parentOf.set(oid!, parents[0]);
    }
    const all = [...parentOf.keys()];
    const merges = new Set(revList(big.dir, ['--merges', 'main']));
    // The root, every merge among the first 2,000 commits, and a spread of the rest.
    const sample = all.filter((o, i) => i === 0 || (merges.has(o) && i < 2000) || i % 157 === 0);
    expect(sample.length).toBeGreaterThan(100);
    let renames = 0;
    for (const oid of sample) {
      const d = await gitDiff(repo, { commit: oid });
      const parent = parentOf.get(oid);
      expect(d.commit).toBe(oid);
      expect(d.base).toBe(parent ?? null);
      expect(d.truncated).toBe(false);
      expect(ours(d.files), oid).toEqual(nativeNameStatus(parent ?? EMPTY_TREE, oid));
      renames += d.files.filter((f) => f.status === 'renamed').length;
    }
    expect(renames).toBeGreaterThan(0);
  });

  it('diffs against an explicit base and filters by paths', async () => {
    const d = await gitDiff(repo, { commit: 'main', base: 'main~300', context_lines: 0 });
    const base = revList(big.dir, ['-n', '1', 'main~300'])[0]!;
    const tip = revList(big.dir, ['-n', '1', 'main'])[0]!;
    expect(d.base).toBe(base);
    expect(ours(d.files)).toEqual(nativeNameStatus(base, tip));
    const f = await gitDiff(repo, { commit: 'main', base: 'main~300', paths: ['d03', 'side/'] });
    expect(f.files.length).toBeGreaterThan(0);
    expect(f.files.every((x) => x.path.startsWith('d03/') || x.path.startsWith('side/'))).toBe(
      true,
    );
    expect(ours(f.files)).toEqual(ours(d.files).filter((l) => / (d03|side)\/[^>]*$/.test(l)));
  });
});

describe('gitShowFile on the large repo', () => {
  it('matches git cat-file for a spread of paths and commits', async () => {
    const paths = big.tipPaths.filter((_, i) => i % 9 === 0);
    expect(paths.length).toBeGreaterThan(30);
    for (const rev of ['main', 'main~1234']) {
      const oid = revList(big.dir, ['-n', '1', rev])[0]!;
      const listed = runGitSync(big.dir, ['ls-tree', '-r', '-z', '--name-only', oid]).split('\0');
      for (const path of paths
        .filter((p) => listed.includes(p))
        .concat(['bin/blob.bin', 'special/quote"d.txt'])) {
        const want = gitBytes(big.dir, ['cat-file', 'blob', `${oid}:${path}`]);
        const got = await gitShowFile(repo, { commit: rev, path });
        expect(got.size).toBe(want.length);
        const bytes =
          got.encoding === 'base64' ? Buffer.from(got.content, 'base64') : Buffer.from(got.content);
        expect(bytes.equals(want), path).toBe(true);
      }
    }
  });
});
