import { connect, createServer, type Socket } from 'node:net';

// A TCP proxy on 127.0.0.1 in front of a daemon that loses answers in transit: armed for a
// request path, it lets the request through, waits for the daemon's answer to begin (the
// write is committed by then: a daemon answers a write only once it is durable) and cuts the
// client's connection, before any byte of the answer (`at: 'start'`) or after its headers and
// part of its body (`at: 'body'`). Everything else passes untouched but the Host header.
// `before` runs once the write is committed and before the client is cut: what happens in
// between (another worker claims, the daemon is killed) happens before the client can retry.

export interface CutProxy {
  url: string;
  /** Cuts the answers of the next `count` requests whose path contains `path`. */
  cut(path: string, count: number, at?: 'start' | 'body', before?: () => unknown): void;
  /** Answers cut so far, per path armed. */
  readonly cuts: Map<string, number>;
  close(): Promise<void>;
}

export async function cutProxy(target: string): Promise<CutProxy> {
  const { hostname, port, host } = new URL(target);
  type Arm = { at: 'start' | 'body'; before?: (() => unknown) | undefined };
  const armed = new Map<string, Arm & { left: number }>();
  const cuts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    sockets.add(client).add(upstream);
    client.on('close', () => sockets.delete(client));
    upstream.on('close', () => sockets.delete(upstream));
    // No pipelining (fetch sends one request at a time per connection): the answer arriving
    // belongs to the last request line seen.
    let cutting: (Arm & { path: string }) | null = null;
    client.on('data', (chunk: Buffer) => {
      const head = chunk.toString('latin1');
      const line = /^[A-Z]+ (\S+) HTTP\/1\.1\r\n/.exec(head);
      if (line) {
        // The daemon answers only to its own Host (DNS rebinding protection).
        chunk = Buffer.from(
          head.replace(/\r\nhost: [^\r]*\r\n/i, `\r\nhost: ${host}\r\n`),
          'latin1',
        );
        cutting = null;
        for (const [path, arm] of armed) {
          if (line[1]!.includes(path) && arm.left > 0) {
            arm.left--;
            cutting = { path, at: arm.at, before: arm.before };
            break;
          }
        }
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!cutting) {
        client.write(chunk);
        return;
      }
      const cut = cutting;
      cutting = null;
      cuts.set(cut.path, (cuts.get(cut.path) ?? 0) + 1);
      upstream.destroy();
      void (async () => {
        try {
          await cut.before?.();
        } catch (e) {
          console.error('cut-proxy: the before hook failed', e); // the test's checks then fail
        }
        if (cut.at === 'body') {
          const headersEnd = chunk.indexOf('\r\n\r\n');
          const keep = headersEnd < 0 ? chunk.length : headersEnd + 4 + 10;
          client.write(chunk.subarray(0, Math.min(chunk.length - 1, keep)));
        }
        client.resetAndDestroy();
      })();
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('end', () => upstream.end());
    upstream.on('end', () => client.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${addr.port}`,
    cut(path, count, at = 'start', before) {
      armed.set(path, { left: count, at, before });
    },
    cuts,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
