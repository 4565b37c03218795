import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ladderBuild, ladderEntity, readLadder, ZzRepo } from '../../src/core/index.js';
import { createGitHub } from '../../src/github/index.js';
import { OWNER } from '../helpers/core-fixture.js';
import { addFixture } from '../helpers/ladder-fixture.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { REPO, startFakeGitHub } from './fake-github.js';

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
  repo = await ZzRepo.open(dir, { key: `${REPO.owner}/${REPO.repo}` });
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
      repo: REPO,
      // The recorded issue pages were asked with per_page=3 (five pages of 13 issues).
      perPage: 3,
    },
  });

describe('ladder build --github', () => {
  it('writes issue, pull request and people rungs and enriches the release', async () => {
    const r = await build();
    expect(r.committed).toBe(true);
    const { state } = await readLadder(repo);
    // Thirteen recorded issues over five Link-paged pages.
    const issues = [...state.keys()].filter((p) => p.startsWith('_issues/'));
    expect(issues).toHaveLength(13);
    const issue = state.get('_issues/13')!;
    expect(issue).toMatchObject({ kind: 'issue', title: '#13 Test issue 13' });
    expect(issue.summary).toMatch(/^Open issue by octokit-fixture-user-a\. /);
    // Its thread, summarised.
    expect(issue.summary).toMatch(
      /2 comments by octokit-fixture-user-b, octokit-fixture-user-a; latest \(octokit-fixture-user-a\): I’ve waited all year long/,
    );
    expect(issue.detail).toMatch(/^Updated 2017-10-10T16:00:00Z$/m);
    expect(issue.detail).toContain('--- octokit-fixture-user-b at 2017-10-10T16:00:00Z');
    expect(state.get('_issues/1')!.summary).toBe('Open issue by octokit-fixture-user-a.');
    // Pull request #14 is a pull request rung only.
    expect(state.has('_issues/14')).toBe(false);
    expect(state.get('_pulls/14')!.summary).toBe(
      'Open pull request by octokit-fixture-user-b from test-branch into master. Fixes #13.',
    );
    expect(state.get('_pulls/14')!.symbols).toEqual(['Foo', 'bAr', 'baZ', 'test-branch']);
    const rel = state.get('_releases/v1.0.0')!;
    expect(rel.title).toBe('Version 1.0.0');
    expect(rel.summary).toMatch(/Release notes: Initial release/);
    expect(rel.detail).toContain(
      'https://github.com/octokit-fixture-org/hello-world/releases/tag/v1.0.0',
    );
    expect(rel.anchor).toBeDefined();
    expect(state.get('_people/octokit-fixture-user-a')!.summary).toBe(
      'octokit-fixture-user-a: 32 commits to octokit-fixture-org/hello-world. Opened issues #13, #12, #11, #10, #9, #8, #7, #6.',
    );
    expect(state.get('_people/octokit-fixture-user-b')!.summary).toBe(
      'octokit-fixture-user-b (bot): 5 commits to octokit-fixture-org/hello-world. Opened pull requests #14.',
    );
  });

  it('commits nothing when nothing changed, asking GitHub conditionally', async () => {
    const before = gh.seen.length;
    const r = await build();
    expect(r.committed).toBe(false);
    const asked = gh.seen.slice(before);
    expect(asked.length).toBeGreaterThan(0);
    // Issues are asked since the newest update already in the Ladder.
    expect(asked.find((s) => /\/issues\?/.test(s.url))!.url).toContain('since=2017-10-10T16');
    expect(asked.filter((s) => s.headers['if-none-match'] !== undefined).length).toBeGreaterThan(0);
  });

  it('asks since the newest update its own rungs record: never a future one, never a hand-written one', async () => {
    // Rungs that arrive by sync, written by an owner's (older, hostile) zz past the tools:
    // one dated in year 9999 made every later build ask since=9999-… and import nothing.
    const rung = (n: number, updated: string, method: 'extractive' | 'human') => ({
      path: `_issues/${n}`,
      kind: 'issue' as const,
      title: `#${n}`,
      summary: 'Planted.',
      detail: `Updated ${updated}\nhttps://example.com/${n}\n`,
      inputs_hash: 'b'.repeat(40),
      generator: { method, version: '1' },
    });
    await ladderEntity(repo).mutate({
      actor: OWNER.actor,
      decide: () => ({
        op: 'ladder_build',
        summary: 'planted',
        args: {
          branch: 'main',
          head: '0'.repeat(40),
          generator: { method: 'extractive', version: '1' },
          upsert: [
            rung(901, '9999-12-31T00:00:00Z', 'extractive'),
            rung(902, '2020-01-01T00:00:00Z', 'human'),
            rung(903, 'yesterday', 'extractive'),
          ],
          remove: [],
        },
      }),
      result: () => null,
    });
    const before = gh.seen.length;
    await build();
    const issues = gh.seen.slice(before).find((s) => /\/issues\?/.test(s.url))!.url;
    expect(issues).toContain('since=2017-10-10T16');
  });
});
