import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createGitHub,
  fetchContributors,
  fetchIssues,
  fetchPullRequests,
  fetchReleases,
  fetchThreadComments,
  type RateWait,
} from '../../src/github/index.js';
import { derived, REPO as R, startFakeGitHub } from './fake-github.js';
import { zzErrorOf } from '../helpers/rejection.js';

// The GitHub client against a fake API on 127.0.0.1 serving recorded GitHub answers
// (fixtures/github/README.md): Link pagination, conditional requests (304 served from the ETag cache), a primary rate limit
// waited out until its reset, a secondary one until retry-after, a 5xx retried, a 404 repo and
// a bad token, each as a clear error. Waits are scaled (1 GitHub second = 5 ms) so nothing here
// sleeps for real; the wait itself is asserted from what the client reported.

const TOKEN = 'ghp_' + 'a'.repeat(36);
let gh: Awaited<ReturnType<typeof startFakeGitHub>>;
let cache: string;
const waits: RateWait[] = [];

const client = (token: string | null = TOKEN) =>
  createGitHub({
    token,
    baseUrl: gh.url,
    cacheDir: cache,
    onWait: (w) => waits.push(w),
    secondMs: 5,
  });

beforeAll(async () => {
  gh = await startFakeGitHub({ token: TOKEN });
  cache = mkdtempSync(join(tmpdir(), 'zz-gh-cache-'));
});
afterAll(async () => {
  await gh.close();
  rmSync(cache, { recursive: true, force: true });
});
afterEach(() => {
  waits.length = 0;
});

describe('GitHub reads', () => {
  it('pages issues by Link header, leaves pull requests out, trims fields', async () => {
    const c = client();
    const p1 = await fetchIssues(c, R, { per_page: 3 });
    expect(p1.items.map((i) => i.number)).toEqual([13, 12, 11]);
    expect(p1.pull_requests_skipped).toBe(1);
    // An opaque cursor (the schema/cursor codec) naming GitHub's next page.
    expect(p1.next_cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(p1.items[0]).toEqual({
      number: 13,
      title: 'Test issue 13',
      state: 'open',
      author: 'octokit-fixture-user-a',
      labels: [],
      comments: 42,
      created_at: '2017-10-10T16:00:00Z',
      updated_at: '2017-10-10T16:00:00Z',
      closed_at: null,
      body: '',
      url: 'https://github.com/octokit-fixture-org/hello-world/issues/13',
    });
    // Follows the recorded pages to the last one, whose Link has no rel="next".
    const numbers = p1.items.map((i) => i.number);
    let cursor = p1.next_cursor;
    for (let page = 2; cursor !== null; page++) {
      const p = await fetchIssues(c, R, { per_page: 3, cursor });
      numbers.push(...p.items.map((i) => i.number));
      expect(gh.seen[gh.seen.length - 1]!.url).toContain(`page=${page}`);
      cursor = p.next_cursor;
    }
    expect(numbers).toEqual([13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1]);
    expect(gh.seen[gh.seen.length - 1]!.headers.authorization).toBe(`token ${TOKEN}`);
  });

  it('passes since through, and refuses a malformed cursor or page size', async () => {
    const c = client();
    await fetchIssues(c, R, { since: '2026-11-01T00:00:00Z' });
    expect(gh.seen[gh.seen.length - 1]!.url).toContain('since=2026-11-01T00%3A00%3A00Z');
    expect((await zzErrorOf(fetchIssues(c, R, { cursor: 'x' }))).code).toBe('invalid_argument');
    expect((await zzErrorOf(fetchIssues(c, R, { per_page: 101 }))).code).toBe('invalid_argument');
  });

  it('reads pull requests, releases with notes, contributors and a comment thread', async () => {
    const c = client();
    const pulls = await fetchPullRequests(c, R, {});
    expect(pulls.items[0]).toMatchObject({
      number: 14,
      author: 'octokit-fixture-user-b',
      labels: ['Foo', 'bAr', 'baZ'],
      head: 'test-branch',
      base: 'master',
      draft: false,
      url: 'https://github.com/octokit-fixture-org/hello-world/pull/14',
    });
    const rel = await fetchReleases(c, R, {});
    expect(rel.items).toEqual([
      {
        tag: 'v1.0.0',
        name: 'Version 1.0.0',
        draft: false,
        prerelease: false,
        author: 'octokit-fixture-user-a',
        published_at: '2017-10-10T16:00:00Z',
        body: 'Initial release',
        url: 'https://github.com/octokit-fixture-org/hello-world/releases/tag/v1.0.0',
      },
    ]);
    const people = await fetchContributors(c, R, {});
    expect(people.items.map((p) => [p.login, p.contributions, p.type])).toEqual([
      ['octokit-fixture-user-a', 32, 'User'],
      ['octokit-fixture-user-b', 5, 'Bot'],
    ]);
    const thread = await fetchThreadComments(c, R, { number: 13 });
    expect(thread.items.map((t) => [t.id, t.author, t.body])).toEqual([
      [1000, 'octokit-fixture-user-b', 'I tried "open sesame" as seen on Wikipedia but no luck!'],
      [1001, 'octokit-fixture-user-a', 'I’ve waited all year long, but there was no pop 😭'],
    ]);
  });

  it('asks again with If-None-Match and serves a 304 from the cache', async () => {
    const c = client();
    const first = await fetchReleases(c, R, { per_page: 5 });
    const before = gh.seen.length;
    const again = await fetchReleases(c, R, { per_page: 5 });
    expect(again).toEqual(first);
    const req = gh.seen[before]!;
    expect(req.headers['if-none-match']).toBe('"00000000000000000000000000000000"');
    expect(c.stats.notModified).toBe(1);
    expect(readdirSync(join(cache, 'github')).length).toBeGreaterThan(0);
    // Another identity does not share the cache: its first request is unconditional.
    const other = client(null);
    await zzErrorOf(fetchReleases(other, R, { per_page: 5 }));
    expect(gh.seen[gh.seen.length - 1]!.headers['if-none-match']).toBeUndefined();
  });

  it('waits out a primary rate limit until its reset, then retries', async () => {
    // The wait is counted from when the 403 is handled (plus a second, as GitHub asks), not
    // from when the test set the reset: bounded by the clock before and after, whatever a
    // loaded machine made the request take (a fixed 2..4 failed a round trip past a second).
    const t0 = Date.now();
    const reset = Math.floor(t0 / 1000) + 30;
    gh.next({
      path: /\/contributors$/,
      status: 403,
      headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
      body: derived('error-primary-rate-limit'),
    });
    const before = gh.seen.length;
    const r = await fetchContributors(client(), R, {});
    const t1 = Date.now();
    expect(r.items).toHaveLength(2);
    expect(gh.seen.length - before).toBe(2);
    expect(waits).toHaveLength(1);
    expect(waits[0]!.kind).toBe('primary');
    const until = (t: number) => Math.ceil((reset * 1000 - t) / 1000) + 1;
    expect(waits[0]!.seconds).toBeGreaterThanOrEqual(until(t1));
    expect(waits[0]!.seconds).toBeLessThanOrEqual(until(t0));
  });

  it('waits out a secondary rate limit for retry-after, then retries', async () => {
    gh.next({
      path: /\/pulls$/,
      status: 403,
      headers: { 'retry-after': '7' },
      body: derived('error-secondary-rate-limit'),
    });
    const r = await fetchPullRequests(client(), R, { per_page: 7 });
    expect(r.items).toHaveLength(1);
    expect(waits.map((w) => [w.kind, w.seconds])).toEqual([['secondary', 7]]);
  });

  it('reads items of the wrong shape as far as they go, and leaves out those it cannot file', async () => {
    // GITHUB_API_URL may name any server: its answers were cast, not checked, so `labels:
    // null` stopped `zz ladder build --github` with a TypeError and a stack (exit 1).
    const issue = (number: unknown, extra: Record<string, unknown> = {}) => ({
      number,
      title: `Issue ${String(number)}`,
      state: 'open',
      user: { login: 'alice' },
      labels: [{ name: 'bug' }],
      comments: 1,
      created_at: '2024-01-01T00:00:00Z',
      updated_at: '2024-01-02T00:00:00Z',
      closed_at: null,
      body: 'b',
      html_url: 'u',
      ...extra,
    });
    gh.next({
      path: /\/issues$/,
      status: 200,
      body: [
        issue(1, { labels: null, title: null, user: { login: 5 }, comments: 'x' }),
        issue(-5),
        issue(1.5),
        issue('7/../x'),
        null,
        issue(2),
      ],
    });
    const issues = await fetchIssues(client(), R, { per_page: 7 });
    expect(issues.items.map((i) => i.number)).toEqual([1, 2]);
    expect(issues.items[0]).toMatchObject({ labels: [], title: '', author: null, comments: 0 });
    gh.next({
      path: /\/contributors$/,
      status: 200,
      body: [{ login: null }, { login: 'bob', contributions: 'many' }, 'x'],
    });
    const people = await fetchContributors(client(), R, { per_page: 7 });
    expect(people.items).toEqual([{ login: 'bob', contributions: 0, type: '', url: null }]);
    // An answer that is not a list at all is no empty list (hostile-github.test.ts).
    gh.next({ path: /\/releases$/, status: 200, body: { not: 'a list' } });
    const e = await zzErrorOf(fetchReleases(client(), R, { per_page: 7 }));
    expect(e.message).toMatch(/releases of .* with a JSON object where a list was expected/);
  });

  it('retries a 5xx and succeeds', async () => {
    gh.next({ path: /\/comments$/, status: 502, body: { message: 'Server Error' } });
    const before = gh.seen.length;
    const r = await fetchThreadComments(client(), R, { number: 13, per_page: 9 });
    expect(r.items).toHaveLength(2);
    expect(gh.seen.length - before).toBe(2);
  });

  it('gives up on a 5xx that persists with a clear error', async () => {
    const down = { path: /\/releases$/, status: 503, body: { message: 'Service Unavailable' } };
    gh.next(down, down, down, down);
    const e = await zzErrorOf(fetchReleases(client(), R, { per_page: 11 }));
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/503.*Service Unavailable/);
  });

  it('says plainly when the repository does not exist', async () => {
    const e = await zzErrorOf(fetchIssues(client(), { owner: R.owner, repo: 'nope' }, {}));
    expect(e.code).toBe('not_found');
    expect(e.message).toMatch(/issues of octokit-fixture-org\/nope \(404\)/);
  });

  // Octokit reports a failed connection (no DNS, refused) as a RequestError with status 500:
  // that is no answer from GitHub, and must not read as one.
  it('says GitHub could not be reached when no answer came, not "GitHub answered 500"', async () => {
    // A port that was just free: nothing listens there, so the connection is refused.
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const { port } = probe.address() as AddressInfo;
    await new Promise((r) => probe.close(r));
    const baseUrl = `http://127.0.0.1:${port}`;
    const closed = createGitHub({ token: TOKEN, baseUrl, secondMs: 5 });
    const e = await zzErrorOf(fetchReleases(closed, R, { per_page: 11 }));
    expect(e.code).toBe('unavailable');
    expect(e.message).toContain(`could not reach GitHub at ${baseUrl} for releases of `);
    expect(e.message).toMatch(/ECONNREFUSED|fetch failed/);
    expect(e.message).not.toMatch(/answered/);
  });

  it('refuses an answer past 32 MiB as it arrives, instead of holding all of it', async () => {
    // GITHUB_API_URL may name any server, and Octokit read a body whole before parsing it: an
    // answer that never ends grew zz (a ladder build, a gh_fetch_* call) without bound.
    const item = `{"tag_name":"v1","html_url":"u","body":"${'x'.repeat(60_000)}"},`;
    const big = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
      const chunk = item.repeat(Math.ceil((1 << 20) / item.length));
      let sent = 0;
      const more = () => {
        while (sent < 40 << 20) {
          sent += chunk.length;
          if (!res.write(sent === chunk.length ? `[${chunk}` : chunk))
            return res.once('drain', more);
        }
        res.end('{"tag_name":"last","html_url":"u"}]');
      };
      res.on('error', () => {});
      more();
    });
    await new Promise<void>((r) => big.listen(0, '127.0.0.1', r));
    try {
      const baseUrl = `http://127.0.0.1:${(big.address() as AddressInfo).port}`;
      const e = await zzErrorOf(
        fetchReleases(createGitHub({ token: TOKEN, baseUrl, retries: 0 }), R, {}),
      );
      expect(e.code).toBe('unavailable');
      expect(e.message).toMatch(/more than 32 MiB/);
    } finally {
      big.closeAllConnections();
      await new Promise((r) => big.close(r));
    }
  });

  it('says plainly when the token is refused, without echoing it', async () => {
    const bad = 'ghp_' + 'b'.repeat(36);
    const e = await zzErrorOf(fetchIssues(client(bad), R, {}));
    expect(e.code).toBe('unauthorized');
    expect(e.message).toMatch(/Bad credentials.*GH_TOKEN or GITHUB_TOKEN/);
    expect(e.message).not.toContain(bad);
  });
});
