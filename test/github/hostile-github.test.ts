import { execFileSync } from 'node:child_process';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ladderBuild, ZzRepo } from '../../src/core/index.js';
import { githubClient } from '../../src/core/github.js';
import {
  createGitHub,
  fetchContributors,
  fetchIssues,
  fetchReleases,
  MAX_BODY_CHARS,
  type RateWait,
} from '../../src/github/index.js';
import { OWNER } from '../helpers/core-fixture.js';
import { addFixture } from '../helpers/ladder-fixture.js';
import { zzErrorOf } from '../helpers/rejection.js';
import { makeRepo } from '../helpers/temp-repo.js';

// A hostile GitHub on 127.0.0.1 (GITHUB_API_URL may name any server): each test sets how it
// answers. What it must not do to zz: print the token it echoes back, make zz wait years, page
// forever, or pass a malformed answer off as an empty list.

const TOKEN = 'ghp_' + 'S'.repeat(36);
const R = { owner: 'acme', repo: 'widget' };
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_q, res) => res.end('[]');
let seen = 0;
const server = createServer((req, res) => {
  seen++;
  handler(req, res);
});
let url = '';
let dir: string;
let cleanup: () => void;
let repo: ZzRepo;

const send = (res: ServerResponse, status: number, body: unknown, h = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...h });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};
const waits: RateWait[] = [];
const client = (extra = {}) =>
  createGitHub({ token: TOKEN, baseUrl: url, secondMs: 5, onWait: (w) => waits.push(w), ...extra });

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  ({ dir, cleanup } = makeRepo('zz-gh-hostile-'));
  addFixture(dir);
  repo = await ZzRepo.open(dir, { key: `${R.owner}/${R.repo}` });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
});
afterAll(async () => {
  repo.close();
  cleanup();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe('a hostile GitHub', () => {
  it('never gets the token printed when it echoes it in an error', async () => {
    for (const status of [500, 401, 403, 404]) {
      handler = (req, res) =>
        send(res, status, {
          message: `internal: ${req.headers.authorization} Bearer ${'x'.repeat(30)} ${TOKEN}`,
        });
      const e = await zzErrorOf(fetchIssues(client({ retries: 0 }), R, {}));
      expect(e.message).not.toContain('SSSS');
      expect(e.message).not.toContain('xxxxxxxx');
      if (status !== 404) expect(e.message).toContain('token [redacted]');
    }
    // A connection that failed carries no answer, but its message goes through the same path.
    expect(client().redact(`a ${TOKEN} b github_pat_${'A'.repeat(30)}`)).toBe(
      'a [redacted] b [redacted]',
    );
    // A token of no GitHub shape (a proxy's), echoed percent-encoded or JSON-escaped, and a
    // URL's userinfo: the cases the model adapters handled, now the same helper's.
    const odd = 'proxy/Tok+en=0123456789abcdef';
    const oddClient = createGitHub({ token: odd, baseUrl: url });
    const echoed = `${encodeURIComponent(odd)} ${JSON.stringify(odd).slice(1, -1).replace(/\//g, '\\/')} https://u:pw@proxy.example/`;
    expect(oddClient.redact(echoed)).toBe(
      '[redacted] [redacted] https://[redacted]@proxy.example/',
    );
    // Prose about tokens is left as it is.
    expect(client().redact('the token cannot see it')).toBe('the token cannot see it');
  });

  it('keeps a token echoed in a 200 body out of what it returns and stores', async () => {
    const OTHER = 'github_pat_' + 'P'.repeat(40);
    const echo = `curl -H "Authorization: token ${TOKEN}" ${encodeURIComponent(TOKEN)} Bearer ${'k'.repeat(24)} ${OTHER}`;
    // A body past the 4000-character clip with the token straddling the cut.
    const long = 'L'.repeat(MAX_BODY_CHARS - 10) + TOKEN + ' and more';
    const item = (number: number, body: string) => ({
      number,
      title: `MARK-${number} ${TOKEN}`,
      state: 'open',
      user: { login: 'u' },
      labels: [{ name: `label ${TOKEN}` }],
      comments: 1,
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:00Z',
      closed_at: null,
      body,
      html_url: `https://x/${number}`,
    });
    handler = (req, res) => {
      const path = new URL(req.url ?? '/', url).pathname;
      if (path.endsWith('/issues')) send(res, 200, [item(1, echo), item(2, long)]);
      else if (path.endsWith('/pulls'))
        send(res, 200, [{ ...item(3, echo), head: { ref: TOKEN }, base: { ref: 'main' } }]);
      else if (path.endsWith('/comments'))
        send(res, 200, [
          { id: 9, user: { login: 'u' }, created_at: '', updated_at: '', body: `MARK-c ${echo}` },
        ]);
      else if (path.endsWith('/releases'))
        send(res, 200, [{ tag_name: 'v1', name: TOKEN, author: null, body: `MARK-r ${echo}` }]);
      else send(res, 200, []);
    };
    const issues = await fetchIssues(client(), R, {});
    expect(issues.items.map((i) => i.title)).toEqual(['MARK-1 [redacted]', 'MARK-2 [redacted]']);
    expect(issues.items[1]!.body).toMatch(/^L+\[redacted\]…$/);
    await ladderBuild(repo, { actor: OWNER.actor, github: { client: client(), repo: R } });
    // Everything the build wrote, read back from git's object store.
    const stored = execFileSync('git', ['cat-file', '--batch-all-objects', '--batch'], {
      cwd: dir,
      maxBuffer: 256 << 20,
    }).toString('latin1');
    const releases = await fetchReleases(client(), R, {});
    expect([releases.items[0]!.name, releases.items[0]!.body]).toEqual([
      '[redacted]',
      'MARK-r curl -H "Authorization: token [redacted]" [redacted] Bearer [redacted] [redacted]',
    ]);
    // Release notes enrich a tag's rung only; the fixture has none, so they are checked above.
    for (const mark of ['MARK-1', 'MARK-2', 'MARK-3', 'MARK-c'])
      expect(stored, mark).toContain(mark);
    for (const secret of ['SSSSSSSS', 'PPPPPPPP', 'kkkkkkkk'])
      expect(stored, secret).not.toContain(secret);
  });

  it('refuses a malformed answer instead of reading it as an empty list', async () => {
    for (const body of ['{"not json', 'null', '{"items": []}', '"x"']) {
      handler = (_q, res) => send(res, 200, body);
      const e = await zzErrorOf(fetchReleases(client(), R, {}));
      expect(e.code).toBe('unavailable');
      expect(e.message).toContain(`GitHub at ${url} answered 200 for releases of acme/widget with`);
      expect(e.message).toContain('where a list was expected');
    }
    // An empty list is still an empty list, and a 204 (an empty repository) has no items.
    handler = (_q, res) => send(res, 200, '[]');
    expect((await fetchReleases(client(), R, {})).items).toEqual([]);
    handler = (_q, res) => {
      res.writeHead(204);
      res.end();
    };
    expect((await fetchReleases(client(), R, {})).items).toEqual([]);
  });

  // One readable issue per page (releases and contributors: none readable), and always a next
  // page: `self` links to the page just fetched, `onward` to the one after.
  const endless = (link: 'self' | 'onward') => {
    const asked: string[] = [];
    handler = (req, res) => {
      const u = new URL(req.url ?? '/', url);
      asked.push(u.pathname);
      const page = Number(u.searchParams.get('page') ?? '1');
      if (link === 'onward') u.searchParams.set('page', String(page + 1));
      const issue = {
        number: page,
        title: 't',
        state: 'open',
        user: { login: 'u' },
        labels: [],
        comments: 0,
        created_at: '2026-01-01T00:00:00Z',
        updated_at: '2026-01-01T00:00:00Z',
        closed_at: null,
        body: 'b',
        html_url: `https://x/${page}`,
      };
      send(res, 200, [issue], { link: `<${u.href}>; rel="next"` });
    };
    return asked;
  };
  const count = (asked: string[], end: string) => asked.filter((p) => p.endsWith(end)).length;
  const build = () =>
    ladderBuild(repo, {
      actor: OWNER.actor,
      github: { client: client(), repo: R },
    });

  it('stops paging at a next link naming the page just fetched', async () => {
    const asked = endless('self');
    await build();
    expect(count(asked, '/issues')).toBe(1);
    expect(count(asked, '/pulls')).toBe(1);
    // And the pull request's thread (pulls carry no comment count), releases, contributors.
    expect(asked).toHaveLength(5);
  });

  it('stops paging at a page with nothing readable, and after ceil(limit / per_page) + 1 pages', async () => {
    const asked = endless('onward');
    await build();
    // 300 items per kind at 100 a page: four pages, though each held one item.
    expect(count(asked, '/issues')).toBe(4);
    expect(count(asked, '/pulls')).toBe(4);
    expect(count(asked, '/releases')).toBe(1);
    expect(count(asked, '/contributors')).toBe(1);
  });

  it('fails clearly on a rate-limit wait past the bound instead of waiting it', async () => {
    // A primary limit that resets in ten years asked for a 315,360,000 s wait, and got it.
    const reset = Math.floor(Date.now() / 1000) + 10 * 365 * 86400;
    const year = new Date(reset * 1000).getUTCFullYear();
    const limited = (status: number, h: Record<string, string>) => {
      seen = 0;
      waits.length = 0;
      handler = (_q, res) => send(res, status, { message: 'API rate limit exceeded' }, h);
    };
    limited(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) });
    let e = await zzErrorOf(fetchIssues(client(), R, {}));
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(
      new RegExp(`primary rate limit holds until ${year}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC`),
    );
    expect(e.message).toContain('longer than zz waits (60 s)');
    expect(e.message).toContain('ZZ_GITHUB_MAX_WAIT_S');
    expect([seen, waits.length]).toEqual([1, 0]);
    // A 429's Retry-After (999,999,999 s: it was retried three times in ~6 s) is held to it too.
    limited(429, { 'retry-after': '999999999' });
    e = await zzErrorOf(fetchIssues(client(), R, {}));
    expect(e.message).toMatch(/secondary rate limit holds until \d{4}-.* UTC \(999999999 s\)/);
    expect([seen, waits.length]).toEqual([1, 0]);
    // A longer bound, for a batch job, waits (a GitHub second is 5 ms here) and retries.
    limited(403, { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) });
    const longer = fetchIssues(client({ maxWaitSeconds: 3600 }), R, {});
    e = await zzErrorOf(longer);
    expect(e.message).toContain('longer than zz waits (3600 s)');
    handler = (_q, res) => send(res, 429, { message: 'slow down' }, { 'retry-after': '90' });
    waits.length = 0;
    e = await zzErrorOf(fetchIssues(client({ maxWaitSeconds: 100, rateRetries: 1 }), R, {}));
    expect(waits.map((w) => [w.kind, w.seconds])).toEqual([['secondary', 90]]);
    expect(e.code).toBe('forbidden');
    // The bound is set by ZZ_GITHUB_MAX_WAIT_S, refused when it is not whole seconds in range.
    for (const bad of ['x', '-1', '1.5', '99999'])
      expect((await zzErrorOf(githubClient({ env: { ZZ_GITHUB_MAX_WAIT_S: bad } }))).code).toBe(
        'invalid_argument',
      );
  });

  it('waits what a 429 Retry-After asks, then retries', async () => {
    let n = 0;
    waits.length = 0;
    handler = (_q, res) =>
      n++ === 0
        ? send(res, 429, { message: 'too many' }, { 'retry-after': '7' })
        : send(res, 200, []);
    expect((await fetchReleases(client(), R, {})).items).toEqual([]);
    expect(n).toBe(2);
    expect(waits.map((w) => [w.kind, w.seconds])).toEqual([['secondary', 7]]);
  });

  it("keeps only logins of GitHub's shape and times as GitHub writes them", async () => {
    const logins = ['a/b', '../x', '-lead', 'x'.repeat(40), 'ok-user', 'dependabot[bot]', ''];
    handler = (req, res) => {
      if (req.url!.includes('/contributors')) {
        send(
          res,
          200,
          logins.map((login) => ({ login, contributions: 1, type: 'User', html_url: null })),
        );
      } else {
        const issue = (number: number, login: string, updated_at: string) => ({
          number,
          title: `#${number}`,
          state: 'open',
          user: { login },
          labels: [],
          comments: 0,
          created_at: '2024-01-01T00:00:00Z',
          updated_at,
          closed_at: null,
          body: null,
          html_url: '',
        });
        send(res, 200, [
          issue(1, 'a/b', 'not a time'),
          issue(2, 'ok-user', '2024-05-01T12:00:00Z'),
          issue(3, 'ok-user', '2024-05-01 12:00:00'),
        ]);
      }
    };
    const people = (await fetchContributors(client(), R, {})).items.map((c) => c.login);
    expect(people).toEqual(['ok-user', 'dependabot[bot]']);
    const issues = (await fetchIssues(client(), R, {})).items;
    expect(issues.map((i) => [i.number, i.author, i.updated_at])).toEqual([
      [1, null, ''],
      [2, 'ok-user', '2024-05-01T12:00:00Z'],
      [3, 'ok-user', ''],
    ]);
  });
});
