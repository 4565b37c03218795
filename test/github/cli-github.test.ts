import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { REPO, startFakeGitHub } from './fake-github.js';

// `zz ladder build --github` as a user runs it: the repository named by `zz.repo`, the token
// from GH_TOKEN, the API from GITHUB_API_URL (the fake GitHub serving recorded answers), then
// the rungs read back and searched through the CLI.

const TOKEN = 'ghp_' + 'd'.repeat(36);
let gh: Awaited<ReturnType<typeof startFakeGitHub>>;
let dir: string;
let cleanup: () => void;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  gh = await startFakeGitHub({ token: TOKEN });
  ({ dir, cleanup } = makeRepo('zz-gh-cli-'));
  sh(dir, 'config', 'zz.repo', `${REPO.owner}/${REPO.repo}`);
  env = { ...cliEnv(), GH_TOKEN: TOKEN, GITHUB_TOKEN: '', GITHUB_API_URL: gh.url };
  expect((await zz(dir, env, 'init')).code).toBe(0);
});
afterAll(async () => {
  cleanup();
  await gh.close();
});

describe('zz ladder build --github', () => {
  it('builds GitHub rungs from the recorded answers, then finds nothing new', async () => {
    const first = await zz(dir, env, 'ladder', 'build', '--github');
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/^Ladder of octokit-fixture-org\/hello-world built at /);
    expect(gh.seen.every((s) => s.headers.authorization === `token ${TOKEN}`)).toBe(true);

    const pull = await zz(dir, env, 'ladder', 'read', '--path', '_pulls/14', '--json');
    expect(pull.code).toBe(0);
    expect(JSON.stringify(pull.json())).toContain(
      'Open pull request by octokit-fixture-user-b from test-branch into master. Fixes #13.',
    );
    const found = await zz(dir, env, 'ladder', 'search', '--query', 'waited all year', '--json');
    expect(found.code).toBe(0);
    expect(found.json().hits.map((h: { path: string }) => h.path)).toContain('_issues/13');

    const again = await zz(dir, env, 'ladder', 'build', '--github');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/is up to date .* nothing committed/);
  });

  it('says plainly when GitHub refuses the token', async () => {
    const bad = { ...env, GH_TOKEN: 'ghp_' + 'e'.repeat(36) };
    const r = await zz(dir, bad, 'ladder', 'build', '--github');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/Bad credentials/);
    expect(r.stderr).not.toContain('e'.repeat(36));
  });
});
