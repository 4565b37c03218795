import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGitHub, fetchIssues, fetchReleases } from '../../src/github/index.js';
import { zzErrorOf } from '../helpers/rejection.js';

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

const send = (res: ServerResponse, status: number, body: unknown, h = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...h });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};
const client = (extra = {}) =>
  createGitHub({ token: TOKEN, baseUrl: url, secondMs: 5, onWait: () => {}, ...extra });

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
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
    // Prose about tokens is left as it is.
    expect(client().redact('the token cannot see it')).toBe('the token cannot see it');
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
});
