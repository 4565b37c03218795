import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { httpClient } from '../../src/cli/client.js';

// A call that fails on this machine says so, instead of passing for the daemon's refusal:
// against a real loopback server that counts what reaches it.

let close: (() => Promise<void>) | null = null;
afterEach(async () => {
  await close?.();
  close = null;
});

describe('the CLI client', () => {
  it('says a local JSON encoding failure is local, and sends nothing', async () => {
    let hits = 0;
    const server = createServer((_req, res) => {
      hits++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"result":{}}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    close = () => new Promise<void>((r) => server.close(() => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = httpClient(url, 'repo', 'token');
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const err = await client.call('ladder_search', circular).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'invalid_argument' });
    expect(String((err as Error).message)).toMatch(
      /arguments of ladder_search cannot be encoded as JSON here, so nothing was sent/,
    );
    expect(hits).toBe(0);
  });
});
