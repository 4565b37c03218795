import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { App } from '../../src/http/app.js';
import { listen, type HttpServer } from '../../src/http/server.js';

// `zz serve` without --port: a port in use (another checkout's daemon) moves it to the next
// one, up to a bound; an explicit port in use is an error naming it (src/http/server.ts).

const app: App = {
  fetch: () => Promise.resolve(new Response('ok')),
  serve: () => Promise.reject(new Error('not called')),
  maxBodyBytes: 1024,
  close: () => Promise.resolve(),
};

const opened: Array<Server | HttpServer> = [];
afterEach(async () => {
  for (const s of opened.splice(0)) {
    if ('authority' in s) await s.close();
    else await new Promise((r) => s.close(r));
  }
});

/** Holds `n` consecutive free loopback ports; resolves with the first. */
async function holdPorts(n: number): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 40_000);
    const held: Server[] = [];
    try {
      for (let p = base; p < base + n; p++) {
        const s = createServer();
        await new Promise<void>((resolve, reject) => {
          s.once('error', reject);
          s.listen(p, '127.0.0.1', resolve);
        });
        held.push(s);
      }
      opened.push(...held);
      return base;
    } catch {
      for (const s of held) s.close();
    }
  }
  throw new Error('no run of free ports found');
}

describe('the port zz serve listens on', () => {
  it('takes the next free port when the first is in use and tryNext allows', async () => {
    const base = await holdPorts(2);
    const s = await listen(app, { host: '127.0.0.1', port: base, tryNext: 5 });
    opened.push(s);
    expect(s.port).toBeGreaterThanOrEqual(base + 2);
    expect(s.port).toBeLessThanOrEqual(base + 5);
  });

  it('fails naming the port (or the range) when it is in use and nothing else may be tried', async () => {
    const base = await holdPorts(3);
    await expect(listen(app, { host: '127.0.0.1', port: base })).rejects.toThrow(
      `port ${base} on 127.0.0.1 is already in use; pick another with --port`,
    );
    await expect(listen(app, { host: '127.0.0.1', port: base, tryNext: 2 })).rejects.toThrow(
      `ports ${base}-${base + 2} on 127.0.0.1 are all in use; pick another with --port`,
    );
  });
});
