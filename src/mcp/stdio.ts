import type { Readable, Writable } from 'node:stream';
import {
  serveStdio as sdkServeStdio,
  StdioServerTransport,
} from '@modelcontextprotocol/server/stdio';
import { createMcpServer, type CreateMcpServerOptions } from './mcp-server.js';

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
  const log = (msg: string): void => {
    process.stderr.write(`zz mcp: ${msg}\n`);
  };
  const transport = new StdioServerTransport(stdin, stdout);
  const handle = sdkServeStdio(
    () =>
      createMcpServer({
        ...serverOpts,
        local: serverOpts.local ?? true,
        onError:
          serverOpts.onError ??
          ((e, tool) =>
            log(`${tool} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`)),
      }),
    { transport, onerror: onTransportError ?? ((e) => log(e.message)) },
  );
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
