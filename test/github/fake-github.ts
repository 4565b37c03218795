import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

// A fake GitHub REST API on 127.0.0.1 (real HTTP, port 0) serving fixtures/github/. Each test
// scripts answers ahead of the default ones with `next(...)`: a status, headers and a fixture
// body, consumed in order by the requests whose path matches.

const FIXTURES = join(import.meta.dirname, '../../fixtures/github');
export const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(join(FIXTURES, name), 'utf8'));

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

const ETAG = (name: string) => `W/"${Buffer.from(name).toString('hex').slice(0, 32)}"`;

export async function startFakeGitHub(opts: { token?: string } = {}) {
  const seen: SeenRequest[] = [];
  const script: Scripted[] = [];
  const send = (res: ServerResponse, status: number, body: unknown, headers = {}) => {
    res.writeHead(status, {
      'content-type': 'application/json; charset=utf-8',
      'x-ratelimit-limit': '5000',
      'x-ratelimit-remaining': '4999',
      'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 3600),
      'x-github-api-version-selected': '2022-11-28',
      ...headers,
    });
    res.end(status === 304 || body === undefined ? undefined : JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    seen.push({ method: req.method ?? 'GET', url: req.url ?? '', headers: req.headers });
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const i = script.findIndex((s) => s.path.test(url.pathname));
    if (i >= 0) {
      const s = script.splice(i, 1)[0]!;
      return send(res, s.status, s.body, s.headers);
    }
    if (opts.token && req.headers.authorization !== `token ${opts.token}`) {
      return send(res, 401, fixture('error-bad-credentials.json'));
    }
    const m = /^\/repos\/octo-org\/hello-world\/(.+)$/.exec(url.pathname);
    if (!m) return send(res, 404, fixture('error-not-found.json'));
    const page = Number(url.searchParams.get('page') ?? '1');
    const answer = (name: string, headers: Record<string, string> = {}) => {
      const etag = ETAG(`${name}:${url.search}`);
      if (req.headers['if-none-match'] === etag) return send(res, 304, undefined, { etag });
      send(res, 200, fixture(name), { etag, ...headers });
    };
    switch (m[1]) {
      case 'issues':
        if (page === 1) {
          const next = `${base}/repositories/1/issues?per_page=${url.searchParams.get('per_page')}&page=2`;
          return answer('issues-page1.json', {
            link: `<${next}>; rel="next", <${next}>; rel="last"`,
          });
        }
        return answer('issues-page2.json');
      case 'pulls':
        return answer('pulls.json');
      case 'releases':
        return answer('releases.json');
      case 'contributors':
        return answer('contributors.json');
      case 'issues/12/comments':
        return answer('comments.json');
      default:
        // Other threads exist and are empty.
        if (/^issues\/\d+\/comments$/.test(m[1]!)) return send(res, 200, [], { etag: ETAG(m[1]!) });
        return send(res, 404, fixture('error-not-found.json'));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    next: (...s: Scripted[]) => script.push(...s),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
