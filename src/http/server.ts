import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { EVENTS_CURSOR_MAX_LENGTH } from '../core/index.js';
import { statusOf, ZzError, type ErrorCode } from '../errors.js';
import { DEFAULT_HOST, DEFAULT_PORT } from '../local/index.js';
import type { App } from './app.js';
import { headersOf, ReadRequest, TextAnswer, type Answer } from './known-bodies.js';

// node:http ↔ WHATWG Request/Response. Bodies stream both ways: a request body is counted
// while it arrives and cut off at the app's limit; a response body (server-sent events) is
// written as it is produced, with backpressure. The common case takes a shorter path (see
// known-bodies.ts): a tool call's small JSON body is read here whole and handed over with the
// request as a ReadRequest (no WHATWG Request made), and a JSON answer, a TextAnswer, is
// written from its text (no Response made).

export { DEFAULT_HOST, DEFAULT_PORT };

export interface ListenOptions {
  host?: string;
  port?: number;
  /**
   * Ports after `port` tried in turn while each is in use (`zz serve` without --port: a second
   * checkout's daemon takes the next port instead of failing; the CLI finds each daemon through
   * its checkout's daemon.json, never by the port).
   */
  tryNext?: number;
}

export interface HttpServer {
  server: Server;
  host: string;
  port: number;
  /** host:port as clients must name it in Host. */
  authority: string;
  url: string;
  /** Stops accepting, lets running requests finish, then closes every connection. */
  close(): Promise<void>;
}

/**
 * maxHeaderSize (request line plus headers) has room for an events cursor (Last-Event-ID, or
 * ?cursor=) as large as lane_events issues, beside ordinary headers. node:http's default,
 * 16 KiB, answered 431 to an SSE client (the dashboard) reconnecting with the cursor of a
 * repository past ~100 Lanes, on every retry.
 */
const SERVER_OPTIONS = {
  keepAlive: true,
  requestTimeout: 120_000,
  maxHeaderSize: EVENTS_CURSOR_MAX_LENGTH + 16 * 1024,
};

const formatHost = (host: string) => (host.includes(':') ? `[${host}]` : host);

/** The app to serve, or a function that builds it once the port is known (port 0). */
export type AppSource = App | ((authority: string) => App);

export async function listen(source: AppSource, opts: ListenOptions = {}): Promise<HttpServer> {
  const host = opts.host ?? DEFAULT_HOST;
  let app: App | null = typeof source === 'function' ? null : source;
  const open = new Set<ServerResponse>();
  let drained: (() => void) | null = null;
  const server = createServer(SERVER_OPTIONS, (req, res) => {
    open.add(res);
    res.on('close', () => {
      open.delete(res);
      if (open.size === 0 && drained) drained();
    });
    if (!app) {
      sendPlain(res, 503, { error: 'starting', code: 'unavailable' });
      return;
    }
    handle(app, req, res, base).catch((e: unknown) => {
      // The app answers every error itself; this is a failure writing the response.
      res.destroy(e instanceof Error ? e : undefined);
    });
  });
  server.on('clientError', answerClientError);
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 65_000;
  const first = opts.port ?? DEFAULT_PORT;
  const last = first === 0 ? 0 : Math.min(65_535, first + (opts.tryNext ?? 0));
  const listenOn = (port: number): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    }).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE' && port < last) return listenOn(port + 1);
      throw e;
    });
  await listenOn(first).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'EADDRINUSE') {
      throw new ZzError(
        'unavailable',
        last > first
          ? `ports ${first}-${last} on ${host} are all in use; pick another with --port`
          : `port ${first} on ${host} is already in use; pick another with --port`,
      );
    }
    if (e.code === 'EADDRNOTAVAIL' || e.code === 'EACCES') {
      throw new ZzError('unavailable', `cannot listen on ${host}:${first} (${e.code})`);
    }
    // `--host` naming no address of this machine is the caller's mistake, not a bug.
    if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' || e.code === 'EAI_NONAME') {
      throw new ZzError(
        'invalid_argument',
        `cannot listen on ${host}: no such host (${e.code}); pass an address of this machine, e.g. --host 127.0.0.1`,
      );
    }
    throw e;
  });
  const port = (server.address() as AddressInfo).port;
  const authority = `${formatHost(host)}:${port}`;
  const base = `http://${authority}`;
  if (typeof source === 'function') app = source(authority);
  const served = app!;

  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      const stopped = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      await served.close();
      if (open.size > 0) {
        await Promise.race([
          new Promise<void>((r) => (drained = r)),
          new Promise((r) => setTimeout(r, 10_000).unref()),
        ]);
      }
      server.closeAllConnections();
      await stopped;
    })());
  return { server, host, port, authority, url: base, close };
}

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  413: 'Payload Too Large',
  431: 'Request Header Fields Too Large',
};

/**
 * A request node:http could not parse is answered here, before any app sees it. node's own
 * answer was a bare status line and no body (a 431 for headers past maxHeaderSize, a 400 for a
 * malformed request line), which clients showed as an empty error: this one has the app's
 * error shape ({error, code}, the status ERROR_CODES gives the code) and closes the connection.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // node's own rule: write only when no answer on this connection has begun, else the bytes
  // would land inside a pipelined request's response. (_httpMessage: node's in-flight response.)
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent || err.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    // The client stopped sending: nobody is waiting for a body.
    socket.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n');
    return;
  }
  const [code, message]: [ErrorCode, string] =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? [
          'headers_too_large',
          `the request line and headers are larger than ${SERVER_OPTIONS.maxHeaderSize} bytes`,
        ]
      : err.code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW'
        ? ['payload_too_large', 'the chunk extensions of the request body are too large']
        : ['invalid_argument', 'malformed HTTP request'];
  const status = statusOf(code);
  const text = JSON.stringify({ error: message, code });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? ''}\r\n` +
      'Content-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(text)}\r\n` +
      'Connection: close\r\n\r\n' +
      text,
  );
}

function sendPlain(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

async function handle(
  app: App,
  req: IncomingMessage,
  res: ServerResponse,
  base: string,
): Promise<void> {
  const url = req.url ?? '';
  if (!url.startsWith('/')) {
    // Absolute-form targets would let a request choose the URL host the app sees.
    sendPlain(res, 400, { error: 'request target must be a path', code: 'invalid_argument' });
    return;
  }
  const aborted = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) aborted.abort();
  });
  const method = req.method ?? 'GET';
  let answer: Answer;
  const declared = smallToolBody(req, method, url, app.maxBodyBytes);
  if (declared !== null) {
    const body = await readWhole(req, declared);
    if (body === null) {
      res.destroy(); // the client left before its body arrived
      return;
    }
    answer = await app.serve(new ReadRequest(method, base + url, req.rawHeaders, body, aborted));
  } else {
    const hasBody =
      method !== 'GET' &&
      method !== 'HEAD' &&
      (req.headers['transfer-encoding'] !== undefined ||
        (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0'));
    const request = new Request(base + url, {
      method,
      headers: headersOf(req.rawHeaders),
      signal: aborted.signal,
      ...(hasBody ? { body: bodyStream(req, app.maxBodyBytes), duplex: 'half' as const } : {}),
    });
    answer = await app.serve(request);
  }
  await writeResponse(answer, req, res);
}

/** Bodies up to this size of tool calls are read whole before the Request is built. */
const SMALL_BODY = 64 * 1024;
// The app's tool route (app.ts route()), whose only reader of the body is readBody().
const TOOL_ROUTE = /^\/api\/repos\/[^/?#]+\/[^/?#]+\/tools\/[^/?#]+$/;

/**
 * The declared length of a tool call's body when it is small enough to read whole first;
 * null otherwise (no length, chunked, too large for the app, another route), and then the
 * body streams as for every other request.
 */
function smallToolBody(
  req: IncomingMessage,
  method: string,
  url: string,
  limit: number,
): number | null {
  if (method !== 'POST' || req.headers['transfer-encoding'] !== undefined) return null;
  const length = req.headers['content-length'];
  if (length === undefined || !/^\d{1,6}$/.test(length)) return null;
  const n = Number(length);
  return n <= SMALL_BODY && n <= limit && TOOL_ROUTE.test(url) ? n : null;
}

/** The body of a request whose length was declared; null when the client went away first. */
function readWhole(req: IncomingMessage, length: number): Promise<Uint8Array | null> {
  if (length === 0) return Promise.resolve(new Uint8Array(0));
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const done = (body: Uint8Array | null) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onStop);
      req.off('close', onStop);
      resolve(body);
    };
    const onData = (chunk: Buffer) => chunks.push(chunk);
    // node:http ends a body at its Content-Length, so what arrived is the whole body.
    const onEnd = () => done(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length));
    const onStop = () => done(null);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onStop);
    req.once('close', onStop);
  });
}

function bodyStream(req: IncomingMessage, limit: number): ReadableStream<Uint8Array> {
  let size = 0;
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(c) {
      req.on('data', (chunk: Buffer) => {
        if (done) return;
        size += chunk.length;
        if (size > limit) {
          done = true;
          req.pause();
          c.error(
            new ZzError('payload_too_large', `request body is larger than ${limit} bytes`, {
              limit_bytes: limit,
            }),
          );
          return;
        }
        c.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        if ((c.desiredSize ?? 0) <= 0) req.pause();
      });
      req.on('end', () => {
        if (done) return;
        done = true;
        c.close();
      });
      req.on('error', (e) => {
        if (done) return;
        done = true;
        c.error(e);
      });
      req.pause();
    },
    pull() {
      if (!done) req.resume();
    },
    cancel() {
      done = true;
      req.pause();
    },
  });
}

/** How long, and how much more, an unwanted request body is read before the answer. */
export const LINGER_MS = 10_000;
export const LINGER_BYTES = 256 * 1024 * 1024;

/** Reads and discards what is left of a request body; true once it has all arrived. */
function discardBody(req: IncomingMessage, maxMs: number, maxBytes: number): Promise<boolean> {
  if (req.complete || req.readableEnded || req.destroyed) return Promise.resolve(req.complete);
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.resolve(false);
  return new Promise((resolve) => {
    let seen = 0;
    const done = (ok: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onStop);
      req.off('close', onStop);
      if (!ok) req.pause();
      resolve(ok);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) done(false);
    };
    const onEnd = () => done(true);
    const onStop = () => done(req.complete);
    const timer = setTimeout(() => done(false), maxMs);
    // The body stream's own listener feeds a consumer that has given up: replace it.
    req.removeAllListeners('data');
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onStop);
    req.once('close', onStop);
    req.resume();
  });
}

async function writeResponse(
  response: Answer,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // An answer given before the body was read (a 413, a 401): read and discard the rest first,
  // for a bounded time, then answer and close. Closing on unread bytes makes the kernel send a
  // reset, which can reach a client still sending before it reads the answer and take the
  // answer away (EPIPE instead of 413): nginx's lingering close, done before answering.
  if (!req.complete) await discardBody(req, LINGER_MS, LINGER_BYTES);
  if (response instanceof TextAnswer) {
    const text = response.text;
    // The headers go to writeHead as one flat list: no setHeader per header (each validated
    // and stored in a map that writeHead reads back).
    const head: string[] = [];
    for (const [name, value] of Object.entries(response.headers)) {
      if (name !== 'connection' || req.complete) head.push(name, value);
    }
    if (!req.complete) head.push('connection', 'close');
    for (const c of response.setCookies) head.push('set-cookie', c);
    // Written as the string: node:http sends it with the headers in one write, converted
    // outside the JS heap. A Buffer.from(text) first was the largest allocation of the daemon
    // under the storm (9% of sampled bytes: a 35 KB lane_get page a read) and its writev two
    // chunks: ~30 µs more CPU a 26 KB answer, measured.
    head.push('content-length', String(Buffer.byteLength(text, 'utf8')));
    res.writeHead(response.status, head);
    res.end(text, 'utf8');
    return;
  }
  res.statusCode = response.status;
  response.headers.forEach((value, key) => {
    if (key !== 'set-cookie') res.setHeader(key, value);
  });
  // Each Set-Cookie on a line of its own (setHeader per value would keep only the last).
  const cookies = response.headers.getSetCookie();
  if (cookies.length) res.setHeader('set-cookie', cookies);
  if (!req.complete) res.setHeader('connection', 'close');
  if (!response.body) {
    res.end();
  } else if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
    const buf = Buffer.from(await response.arrayBuffer());
    res.setHeader('content-length', buf.length);
    res.end(buf);
  } else {
    res.flushHeaders();
    const reader = response.body.getReader();
    const stop = () => void reader.cancel().catch(() => {});
    res.on('close', stop);
    // Settles when the stream fails (or ends with nothing queued). A failed stream is one the
    // adapter dropped and whose slot it freed (event-stream.ts): waiting only for 'drain' kept
    // a client that never reads again connected, holding its socket's chunk, beside the new
    // stream its slot let in (review M3). After it, the next read() throws and the socket is cut.
    const ended = reader.closed.catch(() => {});
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done || res.destroyed) break;
        if (!res.write(value)) await drainOrEnd(res, ended);
      }
    } catch {
      // The stream failed (a client too far behind: event-stream.ts) or was cancelled (the
      // client left): cut the connection, so that what the socket still buffers is let go
      // now rather than when a client that stopped reading reads again.
      res.off('close', stop);
      res.destroy();
      return;
    } finally {
      res.off('close', stop);
    }
    res.end();
  }
}

/** Until `res` drains or closes, or `ended` settles; the listeners it adds are removed after. */
async function drainOrEnd(res: ServerResponse, ended: Promise<void>): Promise<void> {
  const ac = new AbortController();
  try {
    await Promise.race([
      once(res, 'drain', { signal: ac.signal }),
      once(res, 'close', { signal: ac.signal }),
      ended,
    ]);
  } finally {
    ac.abort();
  }
}
