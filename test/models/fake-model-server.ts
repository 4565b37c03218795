import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

// A fake model endpoint on 127.0.0.1 (real HTTP, port 0) that replays a transcript: each
// request gets the next recorded response, and every request is kept (method, path, headers,
// parsed body) for the test to inspect. A response may also be `hang` (never answered, for
// timeouts) or a function of the request (for scripted agents).

export interface FakeResponse {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  hang?: boolean;
  /** Answer only after this long (a slow model, for lease renewal). */
  delayMs?: number;
  /** Write the response by hand (a body that never ends, one cut off mid-way). */
  raw?: (res: ServerResponse) => void;
}

export interface RecordedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export type Responder = FakeResponse | ((req: RecordedRequest, index: number) => FakeResponse);

export interface FakeModelServer {
  /** e.g. http://127.0.0.1:PORT (append /v1 for OpenAI-style base URLs). */
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export function loadTranscript(name: string): FakeResponse[] {
  const file = join(import.meta.dirname, '../../fixtures/models', name);
  const t = JSON.parse(readFileSync(file, 'utf8')) as { exchanges: { response: FakeResponse }[] };
  return t.exchanges.map((e) => e.response);
}

export async function fakeModelServer(
  responses: Responder[] | ((req: RecordedRequest, index: number) => FakeResponse),
): Promise<FakeModelServer> {
  const requests: RecordedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const rec: RecordedRequest = {
        path: req.url ?? '',
        headers: req.headers,
        body: text ? JSON.parse(text) : null,
      };
      const index = requests.length;
      requests.push(rec);
      const r = typeof responses === 'function' ? responses : responses[index];
      const resp: FakeResponse =
        r === undefined
          ? { status: 500, body: { error: { message: `fake server: no response #${index}` } } }
          : typeof r === 'function'
            ? r(rec, index)
            : r;
      if (resp.hang) {
        hanging.add(res);
        return;
      }
      if (resp.raw) {
        hanging.add(res);
        res.on('error', () => {});
        resp.raw(res);
        return;
      }
      const send = () => {
        res.writeHead(resp.status ?? 200, {
          'content-type': 'application/json',
          ...(resp.headers ?? {}),
        });
        res.end(JSON.stringify(resp.body ?? {}));
      };
      if (resp.delayMs) setTimeout(send, resp.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An OpenAI-style chat answer: `content`, and tool calls when given. */
export const reply = (content: string, tool_calls?: unknown[]): FakeResponse => ({
  body: {
    choices: [{ message: { content, ...(tool_calls ? { tool_calls } : {}) } }],
    usage: { prompt_tokens: 1, completion_tokens: 1 },
  },
});

/** One OpenAI-style tool call; `args` a value to encode, or the raw arguments text as sent. */
export const toolCall = (id: string, name: string, args: unknown) => ({
  id,
  type: 'function',
  function: { name, arguments: typeof args === 'string' ? args : JSON.stringify(args) },
});
