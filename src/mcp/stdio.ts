import { PassThrough, type Readable, type Writable } from 'node:stream';
import {
  serveStdio as sdkServeStdio,
  StdioServerTransport,
} from '@modelcontextprotocol/server/stdio';
import {
  McpServer,
  STDIO_DEFAULT_MAX_BUFFER_SIZE,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/server';
import type { ZzError } from '../errors.js';
import { flushed } from '../local/flushed.js';
import { LONGEST_TOOL_MS } from '../tools/index.js';
import {
  createMcpServer,
  SERVER_NAME,
  SERVER_VERSION,
  type CreateMcpServerOptions,
} from './mcp-server.js';
import { droppingLog } from './stderr-log.js';
import { lineGate } from './stdio-lines.js';

// `zz mcp`: the registry over stdio. stdout carries the protocol only; anything else we have to
// say goes to stderr.

export interface ServeStdioOptions extends CreateMcpServerOptions {
  /** Streams to serve on (default: this process's stdin and stdout). */
  stdin?: Readable;
  stdout?: Writable;
  /** Problems on the wire (unparseable input, a broken pipe); default: a line on stderr. */
  onTransportError?: (error: Error) => void;
  /** Once stdin has ended, how long the calls still running get to answer (default DRAIN_TIMEOUT_MS). */
  drainTimeoutMs?: number;
}

/**
 * Once stdin has ended, how long `zz mcp` waits for the calls still running before it gives
 * up on them: the longest a tool may run (run_in_sandbox's largest timeout_ms, 30 minutes)
 * plus a minute for its checkout, the kill grace and the clean-up.
 */
export const DRAIN_TIMEOUT_MS = LONGEST_TOOL_MS + 60_000;

export interface StdioHandle {
  /** Closes the connection (the pinned server and the transport). */
  close(): Promise<void>;
  /** Settles when the connection has ended: the client closed stdin, or close() was called. */
  readonly closed: Promise<void>;
}

export function serveStdio(opts: ServeStdioOptions): StdioHandle {
  const { stdin, stdout, onTransportError, drainTimeoutMs, ...serverOpts } = opts;
  return serveWith(
    () =>
      createMcpServer({
        ...serverOpts,
        local: serverOpts.local ?? true,
        onError:
          serverOpts.onError ??
          ((e, tool) =>
            log(`${tool} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)),
      }),
    { stdin, stdout, onTransportError, drainTimeoutMs },
  );
}

// One line on stderr, neutralised, dropped (and counted) while stderr is not being read
// (stderr-log.ts). Made on first use: process.stderr is not touched at import.
let stderrLog: ((msg: string) => void) | undefined;
const log = (msg: string): void => (stderrLog ??= droppingLog(process.stderr, 'zz mcp: '))(msg);

type WireOptions = Pick<
  ServeStdioOptions,
  'stdin' | 'stdout' | 'onTransportError' | 'drainTimeoutMs'
>;

function serveWith(server: () => McpServer, opts: WireOptions): StdioHandle {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const onError = opts.onTransportError ?? ((e: Error) => log(e.message));
  // The SDK's transport closes as soon as its stdin ends, and closing aborts the calls still
  // running, unanswered: `printf '…ask_post…' | zz mcp` would exit before the write was
  // acknowledged (or made at all). So the transport listens to a stream of ours, which ends
  // only once every request read has been answered (or cancelled by the client), each answer
  // written to stdout, or DRAIN_TIMEOUT_MS has passed. Nothing is written to that stream: the
  // lines of stdin are read by lineGate (stdio-lines.ts says why) and each message handed to
  // the transport's onmessage as its own reader would.
  const feed = new PassThrough();
  const transport = new StdioServerTransport(feed, stdout);
  const handle = sdkServeStdio(server, { transport, onerror: onError });
  const inFlight = trackRequests(transport);
  let isClosed = false;
  // Backpressure: a client that writes and does not read (or reads slower than it writes)
  // would have every answer queued here, memory growing without bound — the SDK's send() waits
  // for 'drain' before it resolves (stdio.mjs: `this._stdout.once("drain", onDrain)`) but
  // nothing stops its reader, nor ours. So no line is taken while stdout has not drained, and
  // no request while MAX_IN_FLIGHT are unanswered (their answers are written whenever they
  // come); stdin is paused meanwhile, and the client's writes block on the full pipe.
  const gate = lineGate({
    maxBytes: STDIO_DEFAULT_MAX_BUFFER_SIZE,
    deliver: (message) => {
      if (!isClosed) transport.onmessage?.(message);
    },
    refuse: (id, code, message) => {
      if (isClosed) return;
      stdout.write(JSON.stringify({ jsonrpc: '2.0', id, error: { code, message } }) + '\n');
      onError(new Error(`answered a bad line with ${code}: ${message}`));
    },
    full: () => stdout.writableNeedDrain,
    admit: (message) => !isRequest(message) || inFlight.count() < MAX_IN_FLIGHT,
  });
  // Each unanswered call waits on 'drain' in the SDK's send(), with an 'error' listener.
  stdout.setMaxListeners(Math.max(stdout.getMaxListeners(), 2 * MAX_IN_FLIGHT + 10));
  let ending: Promise<void> | null = null;
  let reading = true;
  const onData = (chunk: Buffer | string): void => {
    if (!gate.take(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk)) {
      reading = false;
      stdin.pause();
    }
  };
  // Called on 'drain' and when a call is answered; deferred, as an answer settles inside send().
  const unblock = (): void => {
    setImmediate(() => {
      if (isClosed || !gate.pump() || reading || ending) return;
      reading = true;
      stdin.resume();
    });
  };
  inFlight.onSettle(unblock);
  stdout.on('drain', unblock);
  stdin.on('data', onData);
  const endFeed = (): void => {
    ending ??= (async () => {
      const timeoutMs = opts.drainTimeoutMs ?? DRAIN_TIMEOUT_MS;
      const deadline = Date.now() + timeoutMs;
      // Every line stdin gave is taken, those held back while stdout was full included, then
      // every call they made is waited for.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([gate.end(), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      const left = await inFlight.settled(Math.max(0, deadline - Date.now()));
      if (isClosed) return;
      if (left > 0) {
        onError(
          new Error(
            `stdin closed: gave up on ${left} call${left > 1 ? 's' : ''} still running after ${timeoutMs < 1000 ? `${timeoutMs} ms` : `${Math.round(timeoutMs / 1000)} s`}`,
          ),
        );
      }
      await flushed(stdout, Math.max(0, deadline - Date.now()));
      stdin.off('data', onData);
      stdout.off('drain', unblock);
      feed.end();
    })();
  };
  stdin.once('end', endFeed);
  stdin.once('close', endFeed);
  stdin.once('error', (e: Error) => {
    onError(e);
    endFeed();
  });
  // serveStdio installs its own onclose on the transport before returning; chain ours after it.
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const theirs = transport.onclose;
  transport.onclose = () => {
    isClosed = true;
    inFlight.abandon();
    theirs?.();
    resolveClosed();
  };
  return {
    close: async () => {
      stdin.off('data', onData);
      stdout.off('drain', unblock);
      await handle.close();
      resolveClosed();
    },
    closed,
  };
}

/**
 * Most requests taken and not yet answered: past it, the next request waits in lineGate (and
 * stdin with it) until one is answered, so what can be queued for a client that does not read is
 * bounded. Notifications (a cancellation) are still taken while stdout drains.
 */
export const MAX_IN_FLIGHT = 64;

const isRequest = (message: JSONRPCMessage): boolean =>
  'method' in message && 'id' in message && message.id !== undefined;

/**
 * Counts the requests the transport has read and not yet answered. Hooks the transport
 * itself (serveStdio has set its onmessage by now), so every answer counts, the entry's own
 * protocol errors included. A request the client cancels gets no answer (the SDK drops it).
 * An answer counts once the SDK's send() has resolved: once stdout took it without filling,
 * or drained.
 */
function trackRequests(transport: StdioServerTransport): {
  /** Requests read and not yet answered. */
  count(): number;
  /** Calls `listener` whenever one is answered or cancelled. */
  onSettle(listener: () => void): void;
  /** Resolves with how many are still unanswered: 0, or when timeoutMs passed or the
   * transport closed (nothing more can be answered then). */
  settled(timeoutMs: number): Promise<number>;
  /** The transport closed: stop waiting. */
  abandon(): void;
} {
  // Per id, how many are unanswered: a client may reuse an id, and each such request still
  // gets its answer (and takes its place in the bound).
  const pending = new Map<RequestId, number>();
  let total = 0;
  let waiters: Array<() => void> = [];
  const listeners: Array<() => void> = [];
  const release = (): void => {
    const ws = waiters;
    waiters = [];
    for (const w of ws) w();
  };
  const settle = (id: RequestId | undefined, all: boolean): void => {
    const n = id === undefined ? undefined : pending.get(id);
    if (n === undefined) return;
    const gone = all ? n : 1;
    if (n === gone) pending.delete(id!);
    else pending.set(id!, n - gone);
    total -= gone;
    if (total === 0) release();
    for (const l of listeners) l();
  };
  const theirMessage = transport.onmessage;
  // lineGate has checked each message against the JSON-RPC schema already; the SDK's
  // isJSONRPC* guards would parse every (possibly megabytes long) message with zod again.
  transport.onmessage = (message: JSONRPCMessage) => {
    const m = message as { id?: RequestId; method?: string; params?: { requestId?: RequestId } };
    if (isRequest(message)) {
      pending.set(m.id!, (pending.get(m.id!) ?? 0) + 1);
      total++;
    } else if (m.method === 'notifications/cancelled') settle(m.params?.requestId, true);
    theirMessage?.(message);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message: JSONRPCMessage) => {
    try {
      await send(message);
    } finally {
      const m = message as { id?: RequestId; method?: string };
      if (m.method === undefined) settle(m.id, false);
    }
  };
  return {
    count: () => total,
    onSettle: (listener) => listeners.push(listener),
    settled: (timeoutMs) =>
      new Promise<number>((resolve) => {
        if (total === 0) return resolve(0);
        const timer = setTimeout(() => resolve(total), timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve(total);
        });
      }),
    abandon: release,
  };
}

export const SETUP_ERROR_TOOL = 'zz_setup_error';

/**
 * `zz mcp` that could not start (run outside a repository, a broken config): rather than die
 * before the handshake (the client would show only "connection closed"), finish it and say what
 * is wrong where a client and its model look — the server instructions, and one tool whose
 * description is the error and whose call returns it — while stderr gets the same line.
 */
export function serveSetupError(error: ZzError, opts: WireOptions = {}): StdioHandle {
  const text = `zz is not set up: ${error.message}. Fix it (e.g. start zz mcp in a git checkout, or pass --repo PATH) and restart this MCP server.`;
  return serveWith(() => {
    const server = new McpServer(
      { name: SERVER_NAME, version: SERVER_VERSION },
      { capabilities: { tools: { listChanged: false } }, instructions: text },
    );
    server.registerTool(
      SETUP_ERROR_TOOL,
      {
        title: 'zz is not set up',
        description: text,
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      async () => ({
        content: [{ type: 'text', text: `Error ${error.code}: ${text}` }],
        isError: true,
      }),
    );
    return server;
  }, opts);
}
