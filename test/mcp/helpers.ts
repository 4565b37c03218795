import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import {
  Client,
  InMemoryTransport,
  ReadBuffer,
  serializeMessage,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import type { McpServer } from '@modelcontextprotocol/server';
import type { McpHttpContext, McpHttpHandler } from '../../src/mcp/index.js';
import { ensureBuilt, spawnZz } from '../e2e/zz-process.js';

// Shared by the in-process MCP tests and the spawned `zz mcp` end-to-end test: connect a real
// client, and reduce a tool list to the stable form the snapshot holds.

export const TOOL_LIST_SNAPSHOT = fileURLToPath(
  new URL('./__snapshots__/tool-list.json', import.meta.url),
);

export type ListedTool = Awaited<ReturnType<Client['listTools']>>['tools'][number];

/** The part of a tool list clients and models see, in a stable key order. */
export function toolListSnapshot(tools: readonly ListedTool[]): unknown[] {
  return tools.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    annotations: t.annotations,
    inputSchema: t.inputSchema,
    outputSchema: t.outputSchema,
  }));
}

/** 'legacy' speaks the 2025 protocol (initialize handshake); 'auto' the 2026-07-28 one when offered. */
export type Era = 'legacy' | 'auto';

export function newClient(era: Era = 'legacy'): Client {
  return new Client({ name: 'zz-test', version: '0.0.0' }, { versionNegotiation: { mode: era } });
}

/** A client connected to `server` through an in-memory linked pair. */
export async function connectInMemory(server: McpServer): Promise<Client> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const client = newClient();
  await Promise.all([server.connect(serverSide), client.connect(clientSide)]);
  return client;
}

/** A client speaking Streamable HTTP to the handler in-process: no socket, a custom fetch. */
export async function connectHttp(
  handler: McpHttpHandler,
  ctx: McpHttpContext,
  query = '',
  era: Era = 'legacy',
): Promise<Client> {
  const url = new URL(`http://127.0.0.1/api/repos/local/test/mcp${query}`);
  const transport = new StreamableHTTPClientTransport(url, {
    fetch: (input, init) => handler(new Request(input, init), ctx),
  });
  const client = newClient(era);
  await client.connect(transport);
  return client;
}

/** The client end of a stdio connection over any pair of streams (what a spawned `zz mcp`
 * gives you as child.stdout/child.stdin, or PassThroughs in-process). */
export class StreamClientTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;
  private readonly buffer = new ReadBuffer();
  private closed = false;

  constructor(
    private readonly fromServer: Readable,
    private readonly toServer: Writable,
  ) {}

  async start(): Promise<void> {
    this.fromServer.on('data', (chunk: Buffer) => {
      this.buffer.append(chunk);
      try {
        for (let m = this.buffer.readMessage(); m; m = this.buffer.readMessage())
          this.onmessage?.(m);
      } catch (e) {
        this.onerror?.(e as Error);
      }
    });
    this.fromServer.on('end', () => void this.close());
  }

  async send(message: JSONRPCMessage): Promise<void> {
    this.toServer.write(serializeMessage(message));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.toServer.end();
    this.onclose?.();
  }
}

/** A client over a pair of streams, speaking the 2025 protocol as today's stdio clients do. */
export async function connectStreams(fromServer: Readable, toServer: Writable): Promise<Client> {
  const client = newClient();
  await client.connect(new StreamClientTransport(fromServer, toServer));
  return client;
}

type CallResult = Awaited<ReturnType<Client['callTool']>>;

/** The text of a tool result's first content block. */
export function textOf(result: CallResult): string {
  const c = (result.content as Array<{ type: string; text?: string }> | undefined)?.[0];
  return c?.type === 'text' ? (c.text ?? '') : '';
}

/** A raw 2025-era `initialize` request, for tests that write JSON-RPC lines themselves. */
export function initializeRequest(id = 1) {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'zz-test', version: '0.0.0' },
    },
  };
}

/**
 * `zz mcp` as a client starts it: the built zz (dist/, which `npm test` rebuilds when stale),
 * spawned on stdio. Through tsx, from the sources, each start cost ~2.3 s of CPU, the built one
 * ~1 s; the MCP tests start a dozen.
 */
export function spawnZzMcp(
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: string[] = [],
): ChildProcessWithoutNullStreams {
  ensureBuilt();
  return spawnZz(cwd, env, ['mcp', ...args]);
}
