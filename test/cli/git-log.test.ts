import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// Recent history as an agent or a person asks for it (issue 13.6): `zz git log --direction
// newest --since 2025-01-01 --path src` gives what `git log --since 2025-01-01 -- src` gives,
// newest first, paged, with the date typed as a person types it (not as JSON).

let repo: { dir: string; cleanup: () => void };
let env: NodeJS.ProcessEnv;

/** A commit touching `file`, committed (and authored) on `date`. */
function commitAt(dir: string, file: string, date: string, message: string): void {
  mkdirSync(join(dir, file, '..'), { recursive: true });
  writeFileSync(join(dir, file), `${message}\n`);
  sh(dir, 'add', '.');
  execFileSync('git', ['commit', '-q', '-m', message], {
    cwd: dir,
    env: { ...process.env, GIT_AUTHOR_DATE: date, GIT_COMMITTER_DATE: date },
  });
}

/** What git itself says, newest first. */
const gitLog = (...args: string[]) =>
  sh(repo.dir, 'log', '--format=%H', ...args)
    .split('\n')
    .filter(Boolean);

const oids = (r: { json: () => { commits: Array<{ oid: string }> } }) =>
  r.json().commits.map((c) => c.oid);

beforeAll(async () => {
  repo = makeRepo();
  env = cliEnv();
  const days = ['2024-11-02', '2024-12-30', '2025-01-03', '2025-02-10', '2025-03-01', '2025-04-15'];
  days.forEach((d, i) =>
    commitAt(repo.dir, i % 2 ? 'docs/guide.md' : `src/f${i}.ts`, `${d}T12:00:00Z`, `change ${i}`),
  );
  expect((await zz(repo.dir, env, 'init')).code).toBe(0);
});
afterAll(() => repo.cleanup());

describe('zz git log newest first, since a date, under a path', () => {
  it('matches git log --since DATE -- PATH, page by page', async () => {
    const want = gitLog('--since=2025-01-01T00:00:00Z', '--', 'src');
    expect(want.length).toBe(2); // the check has something to check
    // The same command again with --cursor, as the note under a page says.
    const cmd = ['git', 'log', '--direction', 'newest', '--since', '2025-01-01', '--path', 'src'];
    const p1 = await zz(repo.dir, env, ...cmd, '--limit', '1', '--json');
    expect(p1.stderr).toBe('');
    expect(p1.code).toBe(0);
    expect(oids(p1)).toEqual(want.slice(0, 1));
    const cursor = p1.json().next_cursor as string;
    const p2 = await zz(repo.dir, env, ...cmd, '--cursor', cursor, '--limit', '5', '--json');
    expect(p2.stderr).toBe('');
    expect(oids(p2)).toEqual(want.slice(1));
    expect(p2.json().next_cursor).toBeNull();
  });

  it('takes the date as an ISO time or as Unix seconds, and says what it wants otherwise', async () => {
    const want = gitLog('--since=2025-02-10T12:00:00Z');
    const iso = await zz(
      repo.dir,
      env,
      ...['git', 'log', '--direction', 'newest', '--since', '2025-02-10T12:00:00Z', '--json'],
    );
    expect(oids(iso)).toEqual(want);
    const secs = String(Date.parse('2025-02-10T12:00:00Z') / 1000);
    const unix = await zz(repo.dir, env, 'git', 'log', '--direction', 'newest', '--since', secs);
    expect(unix.code).toBe(0);
    expect(unix.stdout).toContain(want[0]);
    const bad = await zz(repo.dir, env, 'git', 'log', '--since', 'last tuesday');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^zz: .*since.*Unix seconds or an ISO 8601 date\n$/);
    // The default stays oldest first, as the seed had it.
    const all = await zz(repo.dir, env, 'git', 'log', '--json');
    expect(oids(all)).toEqual(gitLog('--reverse'));
  });

  it('the tool over zz call answers the same', async () => {
    const r = await zz(
      repo.dir,
      env,
      ...['call', 'git_log', '--args', '{"direction":"newest","since":"2025-01-01","path":"docs"}'],
    );
    expect(oids(r)).toEqual(gitLog('--since=2025-01-01T00:00:00Z', '--', 'docs'));
  });
});
