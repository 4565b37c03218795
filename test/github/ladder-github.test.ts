import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ladderBuild, readLadder, ZzRepo } from '../../src/core/index.js';
import { createGitHub } from '../../src/github/index.js';
import { OWNER } from '../helpers/core-fixture.js';
import { addFixture } from '../helpers/ladder-fixture.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { startFakeGitHub } from './fake-github.js';

// `zz ladder build --github` on a real repository against the fake GitHub: issues, pull requests
// (never also an issue), release notes on the tag's rung, contributors; then a rebuild with
// nothing changed on GitHub makes no commit and is answered by 304s.

const TOKEN = 'ghp_' + 'c'.repeat(36);
let gh: Awaited<ReturnType<typeof startFakeGitHub>>;
let cache: string;
let dir: string;
let cleanup: () => void;
let repo: ZzRepo;

beforeAll(async () => {
  gh = await startFakeGitHub({ token: TOKEN });
  cache = mkdtempSync(join(tmpdir(), 'zz-gh-ladder-'));
  ({ dir, cleanup } = makeRepo('zz-gh-ladder-'));
  addFixture(dir);
  repo = await ZzRepo.open(dir, { key: 'octo-org/hello-world' });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
});
afterAll(async () => {
  repo.close();
  cleanup();
  await gh.close();
  rmSync(cache, { recursive: true, force: true });
});

const build = () =>
  ladderBuild(repo, {
    actor: OWNER.actor,
    github: {
      client: createGitHub({ token: TOKEN, baseUrl: gh.url, cacheDir: cache, secondMs: 5 }),
      repo: { owner: 'octo-org', repo: 'hello-world' },
    },
  });

describe('ladder build --github', () => {
  it('writes issue, pull request and people rungs and enriches the release', async () => {
    const r = await build();
    expect(r.committed).toBe(true);
    const { state } = await readLadder(repo);
    const issue = state.get('_issues/12')!;
    expect(issue).toMatchObject({
      kind: 'issue',
      title: '#12 Retry uploads when the connection drops',
    });
    expect(issue.summary).toMatch(
      /^Open issue by octocat \(bug\)\. Uploads fail on flaky networks/,
    );
    // Its thread, summarised.
    expect(issue.summary).toMatch(/1 comment by hubot; latest \(hubot\): Seen on CI too/);
    expect(issue.detail).toMatch(/^Updated 2026-11-30T09:00:00Z$/m);
    expect(state.get('_issues/3')!.summary).toMatch(/^Closed issue by octocat \(docs\)\./);
    // Pull request #11 is a pull request rung only.
    expect(state.has('_issues/11')).toBe(false);
    expect(state.get('_pulls/11')!.summary).toMatch(
      /^Open pull request by hubot from retries into main\. Fixes #12/,
    );
    const rel = state.get('_releases/v1.0.0')!;
    expect(rel.summary).toMatch(/Release notes: .*Uploads retry with backoff/);
    expect(rel.detail).toContain('https://github.com/octo-org/hello-world/releases/tag/v1.0.0');
    expect(rel.anchor).toBeDefined();
    expect(state.get('_people/octocat')!.summary).toBe(
      'octocat: 32 commits to octo-org/hello-world. Opened issues #12, #3.',
    );
    expect(state.get('_people/hubot')!.summary).toMatch(
      /^hubot \(bot\): 5 commits.*pull requests #11/,
    );
  });

  it('commits nothing when nothing changed, asking GitHub conditionally', async () => {
    const before = gh.seen.length;
    const r = await build();
    expect(r.committed).toBe(false);
    const asked = gh.seen.slice(before);
    expect(asked.length).toBeGreaterThan(0);
    // Issues are asked since the newest update already in the Ladder.
    expect(asked.find((s) => /\/issues\?/.test(s.url))!.url).toContain('since=2026-11-30T09');
    expect(asked.filter((s) => s.headers['if-none-match'] !== undefined).length).toBeGreaterThan(0);
  });
});
