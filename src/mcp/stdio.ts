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
  /** Once stdin has ended, how long stdout may take nothing before zz gives up (default UNREAD_TIMEOUT_MS). */
  unreadTimeoutMs?: number;
}

/**
 * Once stdin has ended, how long `zz mcp` waits for the calls still running before it gives
 * up on them: the longest a tool may run (run_in_sandbox's largest timeout_ms, 30 minutes)
 * plus a minute for its checkout, the kill grace and the clean-up.
 */
export const DRAIN_TIMEOUT_MS = LONGEST_TOOL_MS + 60_000;

/**
 * Once stdin has ended, how long stdout may have answers queued and take none of them before zz
 * gives up: drops them and the calls still running, and ends. A client that closed stdin asks
 * nothing more, and one that still wants its answers reads them (a reader that reads takes a
 * pipe's 64 KiB in milliseconds); one that has stopped reading would otherwise keep zz, and the
 * calls it runs, alive for DRAIN_TIMEOUT_MS, then wait in main.ts for a drain that never comes.
 * 30 s, six times the 5 s a stop by signal gets: nobody asked zz to stop here, and a client
 * busy with something else for a few seconds must not lose its answers. Only whole answers
 * count as taken, so one answer larger than what the reader takes in 30 s also ends it.
 */
export const UNREAD_TIMEOUT_MS = 30_000;

export interface StdioHandle {
  /** Closes the connection (the pinned server and the transport). */
  close(): Promise<void>;
  /** Settles when the connection has ended: the client closed stdin, or close() was called. */
  readonly closed: Promise<void>;
  /**
   * True once zz has given up on what is queued for stdout (stdin ended and stdout took nothing
   * for UNREAD_TIMEOUT_MS): the caller must not wait for it to drain (main.ts would, for good).
   */
  readonly stdoutDropped: boolean;
}

export function serveStdio(opts: ServeStdioOptions): StdioHandle {
  const { stdin, stdout, onTransportError, drainTimeoutMs, unreadTimeoutMs, ...serverOpts } = opts;
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
    { stdin, stdout, onTransportError, drainTimeoutMs, unreadTimeoutMs },
  );
}

// One line on stderr, neutralised, dropped (and counted) while stderr is not being read
// (stderr-log.ts). Made on first use: process.stderr is not touched at import.
let stderrLog: ((msg: string) => void) | undefined;
const log = (msg: string): void => (stderrLog ??= droppingLog(process.stderr, 'zz mcp: '))(msg);

type WireOptions = Pick<
  ServeStdioOptions,
  'stdin' | 'stdout' | 'onTransportError' | 'drainTimeoutMs' | 'unreadTimeoutMs'
>;

function serveWith(server: () => McpServer, opts: WireOptions): StdioHandle {
  const stdin = opts.stdin ?? process.stdin;
  const stdout = opts.stdout ?? process.stdout;
  const onError = opts.onTransportError ?? ((e: Error) => log(e.message));
  // The SDK's transport closes as soon as its stdin ends, and closing aborts the calls still
  // running, unanswered: `printf '…ask_post…' | zz mcp` would exit before the write was
  // acknowledged (or made at all). So the transport listens to a stream of ours, which ends
  // only once every request read has been answered (or cancelled by the client), each answer
  // written to stdout, or DRAIN_TIMEOUT_MS has passed, or stdout has taken nothing for
  // UNREAD_TIMEOUT_MS. Nothing is written to that stream: the
  // lines of stdin are read by lineGate (stdio-lines.ts says why) and each message handed to
  // the transport's onmessage as its own reader would.
  const feed = new PassThrough();
  const transport = new StdioServerTransport(feed, stdout);
  // Set just below; handlers run only for messages delivered after that.
  let inFlight: ReturnType<typeof trackRequests> | undefined;
  const watched = (): McpServer => {
    const s = server();
    watchHandlers(s, (id) => inFlight?.started(id) ?? (() => {}));
    return s;
  };
  const handle = sdkServeStdio(watched, { transport, onerror: onError });
  const calls = (inFlight = trackRequests(transport));
  let isClosed = false;
  let stdoutDropped = false;
  // Backpressure: a client that writes and does not read (or reads slower than it writes)
  // would have every answer queued here, memory growing without bound — the SDK's send() waits
  // for 'drain' before it resolves (stdio.mjs: `this._stdout.once("drain", onDrain)`) but
  // nothing stops its reader, nor ours. So no request (nor bad line) is let go while stdout has
  // not drained, and no request while MAX_IN_FLIGHT are not done (their answers are written
  // whenever they come); up to MAX_HELD_LINES wait in lineGate, stdin is paused past that, and
  // the client's writes block on the full pipe. Notifications and pings never wait for a slot.
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
    // A ping is answered at once, by the SDK: it needs no slot (stdout's room bounds it).
    admit: (message) =>
      !isRequest(message) ||
      (message as { method: string }).method === 'ping' ||
      calls.count() < MAX_IN_FLIGHT,
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
  calls.onSettle(unblock);
  stdout.on('drain', unblock);
  stdin.on('data', onData);
  const endFeed = (): void => {
    ending ??= (async () => {
      const timeoutMs = opts.drainTimeoutMs ?? DRAIN_TIMEOUT_MS;
      const deadline = Date.now() + timeoutMs;
      const unreadMs = opts.unreadTimeoutMs ?? UNREAD_TIMEOUT_MS;
      const unread = unreadOutput(stdout, unreadMs);
      const orUnread = (p: Promise<unknown>): Promise<unknown> => Promise.race([p, unread.stalled]);
      // Every line stdin gave is taken, those held back while stdout was full included, then
      // every call they made is waited for, then their answers are written; all of it given up
      // once stdout has taken nothing for unreadMs.
      let timer: NodeJS.Timeout | undefined;
      await orUnread(
        Promise.race([gate.end(), new Promise<void>((r) => (timer = setTimeout(r, timeoutMs)))]),
      );
      clearTimeout(timer);
      if (!unread.gaveUp) await orUnread(calls.settled(Math.max(0, deadline - Date.now())));
      const left = calls.count();
      if (!unread.gaveUp) await orUnread(flushed(stdout, Math.max(0, deadline - Date.now())));
      unread.stop();
      if (isClosed) return;
      const pending = `${left} call${left > 1 ? 's' : ''}`;
      if (unread.gaveUp) {
        onError(
          new Error(
            `stdin closed and stdout took nothing for ${seconds(unreadMs)}: dropped ${stdout.writableLength} bytes of answers${left > 0 ? `, gave up on ${pending} not answered` : ''}`,
          ),
        );
        // Nobody will read what is queued: the handle says so, and the caller drops it (for
        // process.stdout, main.ts at exit: its destroy() closes nothing and un-destroys it).
        stdoutDropped = true;
      } else if (left > 0) {
        onError(
          new Error(
            `stdin closed: gave up on ${pending} still running after ${seconds(timeoutMs)}`,
          ),
        );
      }
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
    calls.abandon();
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
    get stdoutDropped() {
      return stdoutDropped;
    },
  };
}

/**
 * Most requests taken and not yet done: answered, or cancelled and their handler finished (a
 * cancelled call gets no answer, but its handler may still run a while, and a slot freed at the
 * cancellation would let a client that cancels as it sends run any number at once). Past it, the
 * next request waits in lineGate until one is done; stdin is read on meanwhile, so that a
 * `notifications/cancelled` (any notification) or a ping behind it goes at once, until
 * MAX_HELD_LINES lines are waiting (stdio-lines.ts says what waits then).
 */
export const MAX_IN_FLIGHT = 64;

const isRequest = (message: JSONRPCMessage): boolean =>
  'method' in message && 'id' in message && message.id !== undefined;

/** A request taken: it holds its slot until answered, or cancelled and its handler done. */
interface Taken {
  id: RequestId;
  cancelled: boolean;
  handler: 'not started' | 'running' | 'done';
}

/**
 * Counts the requests the transport has read and not yet done. Hooks the transport itself
 * (serveStdio has set its onmessage by now), so every answer counts, the entry's own protocol
 * errors included; an answer counts once the SDK's send() has resolved: once stdout took it
 * without filling, or drained. A request the client cancels gets no answer (the SDK drops it),
 * so it counts until its handler ends (watchHandlers tells).
 */
function trackRequests(transport: StdioServerTransport): {
  /** Requests read and not yet done. */
  count(): number;
  /** Calls `listener` whenever one is done. */
  onSettle(listener: () => void): void;
  /** Resolves with how many are still not done: 0, or when timeoutMs passed or the
   * transport closed (nothing more can be answered then). */
  settled(timeoutMs: number): Promise<number>;
  /** The transport closed: stop waiting. */
  abandon(): void;
  /** A handler started for request `id`; call what it returns when the handler has ended. */
  started(id: RequestId): () => void;
} {
  // In the order read. A client may reuse an id while the first is running (the spec forbids
  // it): each such request still gets its answer, and takes its place in the bound.
  const taken: Taken[] = [];
  let waiters: Array<() => void> = [];
  const listeners: Array<() => void> = [];
  const release = (): void => {
    const ws = waiters;
    waiters = [];
    for (const w of ws) w();
  };
  const done = (t: Taken): void => {
    const i = taken.indexOf(t);
    if (i < 0) return;
    taken.splice(i, 1);
    if (taken.length === 0) release();
    for (const l of listeners) l();
  };
  const cancel = (id: RequestId | undefined): void => {
    for (const t of taken.filter((t) => t.id === id && !t.cancelled)) {
      t.cancelled = true;
      if (t.handler === 'done') done(t);
      // A handler starts within a microtask of its request being read (Protocol._onrequest),
      // or never (a request the SDK answered or dropped itself): not started by the next turn
      // of the event loop, it never will.
      else if (t.handler === 'not started') {
        setImmediate(() => {
          if (t.handler === 'not started') done(t);
        });
      }
    }
  };
  const theirMessage = transport.onmessage;
  // lineGate has checked each message against the JSON-RPC schema already; the SDK's
  // isJSONRPC* guards would parse every (possibly megabytes long) message with zod again.
  transport.onmessage = (message: JSONRPCMessage) => {
    const m = message as { id?: RequestId; method?: string; params?: { requestId?: RequestId } };
    if (isRequest(message)) taken.push({ id: m.id!, cancelled: false, handler: 'not started' });
    else if (m.method === 'notifications/cancelled') cancel(m.params?.requestId);
    theirMessage?.(message);
  };
  const send = transport.send.bind(transport);
  transport.send = async (message: JSONRPCMessage) => {
    try {
      await send(message);
    } finally {
      const m = message as { id?: RequestId; method?: string };
      const t = m.method === undefined ? taken.find((t) => t.id === m.id) : undefined;
      if (t) done(t);
    }
  };
  return {
    count: () => taken.length,
    onSettle: (listener) => listeners.push(listener),
    settled: (timeoutMs) =>
      new Promise<number>((resolve) => {
        if (taken.length === 0) return resolve(0);
        const timer = setTimeout(() => resolve(taken.length), timeoutMs);
        waiters.push(() => {
          clearTimeout(timer);
          resolve(taken.length);
        });
      }),
    abandon: release,
    started: (id) => {
      const t = taken.find((t) => t.id === id && t.handler === 'not started');
      if (!t) return () => {};
      t.handler = 'running';
      return () => {
        t.handler = 'done';
        if (t.cancelled) done(t);
      };
    },
  };
}

type RequestHandler = (request: { id: RequestId }, ctx: unknown) => unknown;

/**
 * Tells `started` of every request handler the server runs, and when it ends. The SDK has no
 * hook for it (a cancelled call's end is seen nowhere outside its handler), so this wraps the
 * lookup of its handler table (Protocol._requestHandlers, read in _onrequest for each request):
 * if an SDK update moves it, zz mcp refuses to start rather than lose the bound silently.
 */
function watchHandlers(server: McpServer, started: (id: RequestId) => () => void): void {
  const handlers = (server.server as unknown as { _requestHandlers?: unknown })._requestHandlers;
  if (!(handlers instanceof Map)) {
    throw new Error(
      'zz mcp: this MCP SDK keeps no Protocol._requestHandlers table; cancelled calls could not be counted until they end',
    );
  }
  const table = handlers as Map<string, RequestHandler>;
  const get = table.get.bind(table);
  table.get = (method: string) => {
    const handler = get(method);
    if (!handler) return handler;
    return (request, ctx) => {
      const ended = started(request.id);
      const running = Promise.resolve().then(() => handler(request, ctx));
      running.then(ended, ended);
      return running;
    };
  };
}

const seconds = (ms: number): string => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

/**
 * Settles `stalled` (and sets gaveUp) once `out` has had bytes queued and finished writing none
 * of them for `timeoutMs`: its writableLength unchanged and above 0 at each look, once a second.
 */
function unreadOutput(
  out: Writable,
  timeoutMs: number,
): { stalled: Promise<void>; readonly gaveUp: boolean; stop: () => void } {
  let last = -1;
  let since = Date.now();
  let timer: NodeJS.Timeout | undefined;
  let gaveUp = false;
  const stalled = new Promise<void>((resolve) => {
    const look = (): void => {
      const queued = out.destroyed ? 0 : out.writableLength;
      if (queued === 0 || queued !== last) [last, since] = [queued, Date.now()];
      else if (Date.now() - since >= timeoutMs) {
        gaveUp = true;
        return resolve();
      }
      timer = setTimeout(look, Math.min(1000, timeoutMs));
    };
    look();
  });
  return {
    stalled,
    get gaveUp() {
      return gaveUp;
    },
    stop: () => clearTimeout(timer),
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
