import { Agent, request } from 'node:http';

// A small keep-alive JSON client over node:http for the socket tests and the HTTP bench
// (leaner than fetch, so that timings measure the daemon rather than the client).

export interface HttpReply {
  status: number;
  json: any; // eslint-disable-line @typescript-eslint/no-explicit-any
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

export interface JsonClient {
  post(path: string, body: unknown, token?: string | null): Promise<HttpReply>;
  get(path: string, token?: string | null): Promise<HttpReply>;
  /** Sends raw bytes (or a stream of chunks) as the body. */
  send(
    method: string,
    path: string,
    body: Buffer | null,
    headers?: Record<string, string>,
  ): Promise<HttpReply>;
  close(): void;
}

export function jsonClient(
  baseUrl: string,
  opts: { token?: string; maxSockets?: number } = {},
): JsonClient {
  const base = new URL(baseUrl);
  const agent = new Agent({ keepAlive: true, maxSockets: opts.maxSockets ?? 64 });
  const send = (
    method: string,
    path: string,
    body: Buffer | null,
    headers: Record<string, string> = {},
  ) =>
    new Promise<HttpReply>((resolve, reject) => {
      const req = request(
        {
          host: base.hostname.replace(/^\[|\]$/g, ''),
          port: base.port,
          method,
          path,
          agent,
          headers: { ...(body ? { 'content-length': String(body.length) } : {}), ...headers },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown = null;
            try {
              json = JSON.parse(text);
            } catch {
              /* not JSON */
            }
            resolve({ status: res.statusCode ?? 0, json, text, headers: res.headers });
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body ?? undefined);
    });
  const auth = (token: string | null | undefined): Record<string, string> => {
    const t = token === undefined ? opts.token : token;
    return t ? { authorization: `Bearer ${t}` } : {};
  };
  return {
    post: (path, body, token) =>
      send('POST', path, Buffer.from(JSON.stringify(body)), {
        'content-type': 'application/json',
        ...auth(token),
      }),
    get: (path, token) => send('GET', path, null, auth(token)),
    send,
    close: () => agent.destroy(),
  };
}
