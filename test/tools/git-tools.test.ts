import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ZzRepo, type Caller } from '../../src/core/index.js';
import { ZzError } from '../../src/errors.js';
import { registry, runTool } from '../../src/tools/index.js';

// The git toolset (and run_in_sandbox) through runTool, on a three-commit repository made with
// fixed names and dates, so that every answer can be written out in full.

const ME: Caller = { actor: 'owner@example.com' };
const T1 = 1_704_067_200; // 2024-01-01T00:00:00Z
let dir: string;
let repo: ZzRepo;
let c1: string;
let c2: string;
let c3: string;

function git(args: string[], env: Record<string, string> = {}): string {
  return execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }).replace(/\n$/, '');
}

function commit(n: number, message: string, files: Record<string, string | Buffer | null>): string {
  for (const [p, c] of Object.entries(files)) {
    if (c === null) git(['rm', '-q', p]);
    else {
      mkdirSync(join(dir, p, '..'), { recursive: true });
      writeFileSync(join(dir, p), c);
      git(['add', p]);
    }
  }
  const when = `${T1 + n * 3600} +0100`;
  git(['commit', '-q', '-m', message], {
    GIT_AUTHOR_NAME: 'Ann',
    GIT_AUTHOR_EMAIL: 'ann@example.com',
    GIT_AUTHOR_DATE: when,
    GIT_COMMITTER_NAME: 'Cid',
    GIT_COMMITTER_EMAIL: 'cid@example.com',
    GIT_COMMITTER_DATE: when,
  });
  return git(['rev-parse', 'HEAD']);
}

const run = (
  name: string,
  args: Record<string, unknown>,
  local = true,
  caller: Caller | null = ME,
) =>
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  runTool(registry.require(name), args, { repo, caller, local }) as Promise<any>;

async function fails(p: Promise<unknown>, code: string): Promise<ZzError> {
  const e = await p.then(
    () => {
      throw new Error(`expected ${code}`);
    },
    (x: unknown) => x,
  );
  expect(e).toBeInstanceOf(ZzError);
  expect((e as ZzError).code, (e as ZzError).message).toBe(code);
  return e as ZzError;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'zz-git-tools-'));
  git(['init', '-q', '-b', 'main']);
  git(['config', 'commit.gpgsign', 'false']);
  c1 = commit(1, 'first', { 'README.md': 'hello\n', 'src/a.txt': 'one\ntwo\nthree\n' });
  c2 = commit(2, 'second\n\nwith a body', {
    'src/a.txt': 'one\n2\nthree\n',
    'bin.dat': Buffer.from([0, 1, 2]),
  });
  c3 = commit(3, 'third', { 'README.md': null, 'docs/ü.md': 'é\n' });
  // A tag spelled like the branch must not shadow it.
  git(['tag', 'main', c1]);
  repo = await ZzRepo.open(dir, { key: 'local/test' });
  await initRepo(repo, { owner: ME.actor, default_branch: 'main' });
});

afterAll(() => {
  repo?.close();
  rmSync(dir, { recursive: true, force: true });
});

const sig = (n: number, name: string, email: string) => ({
  name,
  email,
  time: T1 + n * 3600,
  timezone: '+0100',
});
const logEntry = (oid: string, parents: string[], n: number, message: string) => ({
  oid,
  parents,
  author: sig(n, 'Ann', 'ann@example.com'),
  committer: sig(n, 'Cid', 'cid@example.com'),
  message,
});

describe('git_log', () => {
  it('lists the default branch oldest first, and pages', async () => {
    const all = [
      logEntry(c1, [], 1, 'first\n'),
      logEntry(c2, [c1], 2, 'second\n\nwith a body\n'),
      logEntry(c3, [c2], 3, 'third\n'),
    ];
    expect(await run('git_log', {})).toEqual({ commits: all, next_cursor: null });
    const p1 = await run('git_log', { limit: 2 });
    expect(p1.commits).toEqual(all.slice(0, 2));
    expect(typeof p1.next_cursor).toBe('string');
    expect(await run('git_log', { limit: 2, cursor: p1.next_cursor })).toEqual({
      commits: all.slice(2),
      next_cursor: null,
    });
    expect(await run('git_log', { path: 'src/a.txt' })).toEqual({
      commits: all.slice(0, 2),
      next_cursor: null,
    });
    expect(await run('git_log', { ref: c2 })).toEqual({
      commits: all.slice(0, 2),
      next_cursor: null,
    });
    expect(await run('git_log', { ref: 'refs/tags/main' })).toEqual({
      commits: all.slice(0, 1),
      next_cursor: null,
    });
  });

  it('lists newest first on request, filtered by since, and pages', async () => {
    const newest = (await run('git_log', {})).commits.reverse();
    const p1 = await run('git_log', { direction: 'newest', limit: 2 });
    expect(p1.commits).toEqual(newest.slice(0, 2));
    expect(await run('git_log', { direction: 'newest', limit: 2, cursor: p1.next_cursor })).toEqual(
      { commits: newest.slice(2), next_cursor: null },
    );
    expect((await run('git_log', { direction: 'newest', since: T1 + 2 * 3600 })).commits).toEqual(
      newest.slice(0, 2),
    );
  });

  it('refuses bad arguments', async () => {
    await fails(run('git_log', { limit: 501 }), 'invalid_argument');
    await fails(run('git_log', { limit: 0 }), 'invalid_argument');
    await fails(run('git_log', { ref: '--all' }), 'invalid_argument');
    await fails(run('git_log', { path: '../x' }), 'invalid_argument');
    await fails(run('git_log', { since: 'x' }), 'invalid_argument');
    await fails(run('git_log', { ref: 'nope' }), 'not_found');
    await fails(run('git_log', {}, true, null), 'unauthorized');
  });
});

describe('git_diff', () => {
  it('shows what a commit changed, with hunks', async () => {
    expect(await run('git_diff', { commit: c2 })).toEqual({
      commit: c2,
      base: c1,
      files: [
        {
          path: 'bin.dat',
          old_path: null,
          status: 'added',
          binary: true,
          old_mode: null,
          new_mode: '100644',
          hunks: [],
          truncated: false,
        },
        {
          path: 'src/a.txt',
          old_path: null,
          status: 'modified',
          binary: false,
          old_mode: '100644',
          new_mode: '100644',
          hunks: [
            {
              old_start: 1,
              old_lines: 3,
              new_start: 1,
              new_lines: 3,
              lines: [' one', '-two', '+2', ' three'],
            },
          ],
          truncated: false,
        },
      ],
      truncated: false,
    });
  });

  it('defaults to the head of the default branch; context_lines, paths, base, max_bytes', async () => {
    const head = await run('git_diff', {});
    expect(head.commit).toBe(c3);
    expect(head.base).toBe(c2);
    expect(
      head.files.map((f: { path: string; status: string; hunks: Array<{ lines: string[] }> }) => [
        f.path,
        f.status,
        f.hunks.flatMap((h) => h.lines),
      ]),
    ).toEqual([
      ['README.md', 'deleted', ['-hello']],
      ['docs/ü.md', 'added', ['+é']],
    ]);
    const narrow = await run('git_diff', { commit: c2, paths: ['src'], context_lines: 0 });
    expect(narrow.files).toHaveLength(1);
    expect(narrow.files[0].hunks).toEqual([
      { old_start: 2, old_lines: 1, new_start: 2, new_lines: 1, lines: ['-two', '+2'] },
    ]);
    const span = await run('git_diff', { commit: c3, base: c1, paths: ['src/a.txt'] });
    expect(span.base).toBe(c1);
    expect(span.files.map((f: { path: string }) => f.path)).toEqual(['src/a.txt']);
    const cut = await run('git_diff', { commit: c2, max_bytes: 100 });
    expect(cut.truncated).toBe(true);
    await fails(run('git_diff', { commit: c2, context_lines: 101 }), 'invalid_argument');
    await fails(run('git_diff', { commit: c2, paths: ['.git/config'] }), 'invalid_argument');
  });
});

describe('git_show_file', () => {
  it('returns content, pages and base64 for binary', async () => {
    expect(await run('git_show_file', { path: 'src/a.txt', commit: c2 })).toEqual({
      commit: c2,
      path: 'src/a.txt',
      content: 'one\n2\nthree\n',
      encoding: 'utf8',
      size: 12,
      offset: 0,
      next_offset: null,
    });
    expect(await run('git_show_file', { path: 'src/a.txt', commit: c2, limit: 4 })).toMatchObject({
      content: 'one\n',
      offset: 0,
      next_offset: 4,
    });
    expect(
      await run('git_show_file', { path: 'src/a.txt', commit: c2, offset: 4, limit: 100 }),
    ).toMatchObject({ content: '2\nthree\n', offset: 4, next_offset: null });
    expect(await run('git_show_file', { path: 'bin.dat' })).toEqual({
      commit: c3,
      path: 'bin.dat',
      content: 'AAEC',
      encoding: 'base64',
      size: 3,
      offset: 0,
      next_offset: null,
    });
    expect((await run('git_show_file', { path: 'docs/ü.md' })).content).toBe('é\n');
    await fails(run('git_show_file', { path: 'README.md' }), 'not_found');
    await fails(run('git_show_file', { path: '/etc/passwd' }), 'invalid_argument');
    await fails(run('git_show_file', { path: 'src' }), 'invalid_argument');
    await fails(run('git_show_file', {}), 'invalid_argument');
  });

  it('needs a git repository', async () => {
    const mem = ZzRepo.memory('local/mem');
    await initRepo(mem, { owner: ME.actor, default_branch: 'main' });
    const e = await runTool(
      registry.require('git_show_file'),
      { path: 'x' },
      { repo: mem, caller: ME, local: false },
    ).catch((x: unknown) => x);
    expect((e as ZzError).code).toBe('precondition_failed');
  });
});

describe('run_in_sandbox', () => {
  it('is refused where tools are not local (the HTTP daemon)', async () => {
    const e = await fails(
      run('run_in_sandbox', { commit: c1, command: ['true'] }, false),
      'local_only',
    );
    expect(e.status).toBe(400);
  });

  it('runs a command in a checkout of a commit or of a changeset', async () => {
    const r = await run('run_in_sandbox', { commit: c1, command: ['cat', 'src/a.txt'] });
    expect(r).toMatchObject({
      commit: c1,
      changeset_id: null,
      exit_code: 0,
      signal: null,
      timed_out: false,
      stdout: 'one\ntwo\nthree\n',
      stderr: '',
      stdout_truncated: false,
      stderr_truncated: false,
    });
    git(['update-ref', 'refs/zz/changesets/cs-0123456789', c2]);
    const cs = await run('run_in_sandbox', {
      changeset_id: 'cs-0123456789',
      command: ['sh', '-c', 'cat src/a.txt; exit 3'],
      max_output_bytes: 4,
    });
    expect(cs).toMatchObject({
      commit: c2,
      changeset_id: 'cs-0123456789',
      exit_code: 3,
      stdout: 'one\n',
      stdout_truncated: true,
    });
    await fails(run('run_in_sandbox', { command: ['true'] }), 'invalid_argument');
    await fails(
      run('run_in_sandbox', { commit: c1, changeset_id: 'cs-0123456789', command: ['true'] }),
      'invalid_argument',
    );
    await fails(run('run_in_sandbox', { commit: c1, command: [] }), 'invalid_argument');
    await fails(
      run('run_in_sandbox', { changeset_id: 'cs-9999999999', command: ['true'] }),
      'not_found',
    );
  });
});
