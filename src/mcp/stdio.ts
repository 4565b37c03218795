import type { Readable, Writable } from 'node:stream';
import {
  serveStdio as sdkServeStdio,
  StdioServerTransport,
} from '@modelcontextprotocol/server/stdio';
import { McpServer } from '@modelcontextprotocol/server';
import type { ZzError } from '../errors.js';
import {
  createMcpServer,
  SERVER_NAME,
  SERVER_VERSION,
  type CreateMcpServerOptions,
} from './mcp-server.js';

// `zz mcp`: the registry over stdio. stdout carries the protocol only; anything else we have to
// say goes to stderr.

export interface ServeStdioOptions extends CreateMcpServerOptions {
  /** Streams to serve on (default: this process's stdin and stdout). */
  stdin?: Readable;
  stdout?: Writable;
  /** Problems on the wire (unparseable input, a broken pipe); default: a line on stderr. */
  onTransportError?: (error: Error) => void;
}

export interface StdioHandle {
  /** Closes the connection (the pinned server and the transport). */
  close(): Promise<void>;
  /** Settles when the connection has ended: the client closed stdin, or close() was called. */
  readonly closed: Promise<void>;
}

export function serveStdio(opts: ServeStdioOptions): StdioHandle {
  const { stdin, stdout, onTransportError, ...serverOpts } = opts;
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
    { stdin, stdout, onTransportError },
  );
}

const log = (msg: string): void => {
  process.stderr.write(`zz mcp: ${msg}\n`);
};

function serveWith(
  server: () => McpServer,
  opts: Pick<ServeStdioOptions, 'stdin' | 'stdout' | 'onTransportError'>,
): StdioHandle {
  const transport = new StdioServerTransport(opts.stdin, opts.stdout);
  const handle = sdkServeStdio(server, {
    transport,
    onerror: opts.onTransportError ?? ((e) => log(e.message)),
  });
  // serveStdio installs its own onclose on the transport before returning; chain ours after it.
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const theirs = transport.onclose;
  transport.onclose = () => {
    theirs?.();
    resolveClosed();
  };
  return {
    close: async () => {
      await handle.close();
      resolveClosed();
    },
    closed,
  };
}

export const SETUP_ERROR_TOOL = 'zz_setup_error';

/**
 * `zz mcp` that could not start (run outside a repository, a broken config): rather than die
 * before the handshake (the client would show only "connection closed"), finish it and say what
 * is wrong where a client and its model look — the server instructions, and one tool whose
 * description is the error and whose call returns it — while stderr gets the same line.
 */
export function serveSetupError(
  error: ZzError,
  opts: Pick<ServeStdioOptions, 'stdin' | 'stdout' | 'onTransportError'> = {},
): StdioHandle {
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
