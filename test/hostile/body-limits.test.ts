import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { initializeRequest } from '../mcp/helpers.js';

// Hardening 11.10 on every route that reads a body, found by the audit: a 20 MiB chunked body
// sent to the MCP endpoint was answered 400 "Parse error: the request body could not be read"
// (the SDK swallowed the size error); a declared one got its 413. A body too large is a 413
// wherever it is sent, and the client always reads it (the rest is discarded first).

let served: TestDaemon;
let token: string;

beforeAll(async () => {
  served = await startTestDaemon({ prefix: 'zz-body-', daemon: { mcpHandler: undefined } });
  token = await served.token('owner@example.com');
});
afterAll(() => served?.close());

const MIB = 1024 * 1024;

/** A raw-socket POST of `mib` MiB (chunked or declared); the status line the client read. */
function post(path: string, mib: number, chunked: boolean): Promise<string> {
  const url = new URL(served.url);
  const part = Buffer.alloc(MIB, 0x20);
  return new Promise((resolve) => {
    const sock = connect(Number(url.port), url.hostname);
    let got = '';
    let error = '';
    sock.on('data', (c: Buffer) => (got += c.toString('latin1')));
    // Read the answer only once the whole request is sent, as simple clients do.
    sock.pause();
    sock.on('finish', () => sock.resume());
    sock.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    sock.on('close', () => resolve(got.split('\r\n')[0] || `no answer (${error})`));
    sock.write(
      [
        `POST ${path} HTTP/1.1`,
        `Host: ${url.host}`,
        `Authorization: Bearer ${token}`,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${mib * MIB}`,
        '',
        '',
      ].join('\r\n'),
    );
    for (let i = 0; i < mib; i++) {
      if (chunked) sock.write(`${MIB.toString(16)}\r\n`);
      sock.write(part);
      if (chunked) sock.write('\r\n');
    }
    sock.end(chunked ? '0\r\n\r\n' : '');
  });
}

describe('a body over the limit is a 413 on every route', () => {
  it('MCP: 20 MiB declared or chunked is a 413 the client reads, every time', async () => {
    const seen: string[] = [];
    for (let i = 0; i < 8; i++)
      seen.push(await post(`/api/repos/${served.key}/mcp`, 20, i % 2 === 1));
    expect(seen).toEqual(seen.map(() => 'HTTP/1.1 413 Payload Too Large'));
  });

  it('MCP still answers a normal request afterwards', async () => {
    const r = await fetch(`${served.url}/api/repos/${served.key}/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(initializeRequest()),
    });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain('"serverInfo"');
  });
});

/** Whatever the daemon answers to `request` written on a raw socket, until it closes. */
function rawExchange(request: string): Promise<string> {
  const url = new URL(served.url);
  return new Promise((resolve) => {
    const sock = connect(Number(url.port), url.hostname);
    let got = '';
    sock.on('data', (c: Buffer) => (got += c.toString('utf8')));
    sock.on('error', () => {});
    sock.on('close', () => resolve(got));
    sock.end(request);
  });
}

describe('a request node:http cannot parse gets the error shape, not a bare status line', () => {
  // Found by the tool fuzz (test/http/fuzz-tools.test.ts): headers past maxHeaderSize were
  // answered "431" with no body at all, which clients showed as an empty error.
  it('headers past the limit: 431 headers_too_large with a message', async () => {
    const answer = await rawExchange(
      [
        `POST /api/repos/${served.key}/tools/lane_list HTTP/1.1`,
        `Host: ${new URL(served.url).host}`,
        `Authorization: Bearer ${token}`,
        `X-Junk: ${'a'.repeat(300 * 1024)}`,
        'Content-Length: 2',
        '',
        '{}',
      ].join('\r\n'),
    );
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(head).toMatch(/content-type: application\/json/i);
    expect(JSON.parse(body!)).toEqual({
      code: 'headers_too_large',
      error: expect.stringMatching(/headers are larger than \d+ bytes/),
    });
  });

  it('a malformed request line: 400 invalid_argument with a message', async () => {
    const answer = await rawExchange('NOT A REQUEST\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(body!)).toEqual({
      code: 'invalid_argument',
      error: 'malformed HTTP request',
    });
  });

  it('the daemon answers normally afterwards', async () => {
    const r = await fetch(`${served.url}/api/repos/${served.key}/tools/lane_list`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(r.status).toBe(200);
  });
});
