import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

// A fake GitHub REST API on 127.0.0.1 (real HTTP, port 0) answering with the recordings in
// fixtures/github/octokit/ (real api.github.com answers, bodies and headers, from
// octokit/fixtures) and, for what those lack, fixtures/github/derived/ (see its README). Only
// what must change is rewritten: the recorded scenario's repository name becomes ours, Link
// headers point at this server, and the length and connection headers are left to Node.
// Each test may script answers ahead of the recorded ones with `next(...)`: a status, headers
// (over a recorded error's) and a body, consumed in order by the requests whose path matches.

const FIXTURES = join(import.meta.dirname, '../../fixtures/github');

/** The repository the recordings become (octokit/fixtures recorded get-repository on it). */
export const REPO = { owner: 'octokit-fixture-org', repo: 'hello-world' };
const FULL = `${REPO.owner}/${REPO.repo}`;

interface Recording {
  method: string;
  path: string;
  status: number;
  response: unknown;
  headers: Record<string, string | number>;
}

const recordings = (scenario: string): Recording[] =>
  JSON.parse(readFileSync(join(FIXTURES, 'octokit', `${scenario}.json`), 'utf8'));

/** A body from fixtures/github/derived/ (a recorded answer reshaped; see the README). */
export const derived = (name: string): unknown =>
  JSON.parse(readFileSync(join(FIXTURES, 'derived', `${name}.json`), 'utf8'));

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

const DROPPED = new Set(['content-length', 'connection', 'transfer-encoding']);

function normalised(r: Recording, scenario: string, base: string): Answer {
  const rename = (s: string) => s.replaceAll(`${REPO.owner}/${scenario}`, FULL);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(r.headers)) {
    if (DROPPED.has(k)) continue;
    headers[k] = k === 'link' ? String(v).replaceAll('https://api.github.com', base) : String(v);
  }
  return { status: r.status, headers, body: JSON.parse(rename(JSON.stringify(r.response))) };
}

const get = (rs: Recording[], path: RegExp) => {
  const r = rs.find((x) => x.method === 'get' && path.test(x.path));
  if (!r) throw new Error(`no recorded GET ${path}`);
  return r;
};

export interface Scripted {
  path: RegExp;
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

export async function startFakeGitHub(opts: { token?: string } = {}) {
  const seen: SeenRequest[] = [];
  const script: Scripted[] = [];
  const issuePages = recordings('paginate-issues').filter((r) => r.method === 'get');
  const release = get(recordings('release-assets'), /\/releases\/tags\//);
  const collaborators = get(
    recordings('add-and-remove-repository-collaborator'),
    /\/collaborators$/,
  );
  const notFound = get(recordings('branch-protection'), /\/protection$/);
  let base = '';

  const send = (res: ServerResponse, a: Answer) => {
    res.writeHead(a.status, a.headers);
    res.end(a.status === 304 || a.body === undefined ? undefined : JSON.stringify(a.body));
  };
  // A recorded error answer's headers with GitHub's body for this error.
  const error = (status: number, body: unknown, headers: Record<string, string> = {}): Answer => {
    const h = normalised(notFound, 'branch-protection', base).headers;
    return { status, headers: { ...h, ...headers }, body };
  };

  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? 'GET', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const i = script.findIndex((s) => s.path.test(url.pathname));
    if (i >= 0) {
      const s = script.splice(i, 1)[0]!;
      return send(res, error(s.status, s.body, s.headers));
    }
    if (opts.token && req.headers.authorization !== `token ${opts.token}`) {
      return send(res, error(401, derived('error-bad-credentials')));
    }
    // The recorded Link headers name the repository by id (/repositories/1000/issues).
    const m = new RegExp(`^/(?:repos/${FULL}|repositories/1000)/(.+)$`).exec(url.pathname);
    if (!m) return send(res, error(404, derived('error-not-found')));
    const page = Number(url.searchParams.get('page') ?? '1');
    // A conditional request whose ETag matches is answered 304 with the answer's headers.
    const answer = (a: Answer) => {
      const etag = a.headers.etag;
      if (etag !== undefined && req.headers['if-none-match'] === etag) {
        const { 'content-type': _type, ...headers } = a.headers;
        return send(res, { status: 304, headers, body: undefined });
      }
      send(res, a);
    };
    const listOf = (body: unknown[], like: Recording, scenario: string): Answer => {
      const { link: _link, ...headers } = normalised(like, scenario, base).headers;
      return { status: 200, headers, body };
    };
    const thread = /^issues\/(\d+)\/comments$/.exec(m[1]!);
    if (m[1] === 'issues') {
      const rec = issuePages[page - 1];
      if (!rec) return answer(listOf([], issuePages.at(-1)!, 'paginate-issues'));
      const a = normalised(rec, 'paginate-issues', base);
      // The recorded repository had no pull requests; GitHub's issues list carries them too.
      if (page === 1) a.body = [derived('issue-list-pull-request'), ...(a.body as unknown[])];
      return answer(a);
    }
    if (m[1] === 'pulls')
      return answer(listOf(derived('pulls') as unknown[], issuePages.at(-1)!, 'paginate-issues'));
    if (m[1] === 'releases') {
      const r = normalised(release, 'release-assets', base);
      return answer({ ...r, body: [r.body] });
    }
    if (m[1] === 'contributors') {
      const body = derived('contributors') as unknown[];
      return answer(listOf(body, collaborators, 'add-and-remove-repository-collaborator'));
    }
    if (thread) {
      // Issue #13's thread is recorded text; other threads are empty.
      const body = thread[1] === '13' ? (derived('comments') as unknown[]) : [];
      return answer(listOf(body, issuePages.at(-1)!, 'paginate-issues'));
    }
    return send(res, error(404, derived('error-not-found')));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
  return {
    url: base,
    seen,
    next: (...s: Scripted[]) => script.push(...s),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
