import { request } from 'node:http';
import { connect } from 'node:net';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/index.js';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { newClient } from '../mcp/helpers.js';

// The daemon over a real socket on 127.0.0.1, port 0.

const OWNER = 'owner@example.com';
const ALICE = 'alice@example.com';

let served: TestDaemon;
let daemon: Daemon;
let client: JsonClient;
let key: string;
const tok = { owner: '', alice: '' };
let logs: string[] = [];

const toolPath = (name: string) => `/api/repos/${key}/tools/${name}`;

beforeAll(async () => {
  // With the MCP endpoint mounted (the daemon's default).
  served = await startTestDaemon({
    owner: OWNER,
    daemon: { heartbeatMs: 200, mcpHandler: undefined },
  });
  ({ daemon, key, logs } = served);
  tok.owner = await served.token(OWNER);
  tok.alice = await served.token(ALICE);
  client = jsonClient(daemon.url, { token: tok.owner });
  expect(
    (
      await client.post(toolPath('lane_propose'), {
        lane_id: 'main-lane',
        title: 'Main',
        ask_kinds: { race: 'member' },
      })
    ).status,
  ).toBe(200);
});

afterAll(async () => {
  client.close();
  await served.close();
});

/** Reads server-sent events until `until` says stop (or the timeout passes). */
function readEvents(
  path: string,
  token: string,
  until: (events: Array<{ id: string | null; event: string; data: string }>) => boolean,
  headers: Record<string, string> = {},
  onOpen?: () => void,
): Promise<Array<{ id: string | null; event: string; data: string }>> {
  const url = new URL(daemon.url);
  return new Promise((resolve, reject) => {
    const events: Array<{ id: string | null; event: string; data: string }> = [];
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        headers: { authorization: `Bearer ${token}`, ...headers },
      },
      (res) => {
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
        let buf = '';
        let pings = 0;
        onOpen?.();
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buf += chunk;
          let end: number;
          while ((end = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, end);
            buf = buf.slice(end + 2);
            if (block.startsWith(': ping')) pings++;
            const field = (name: string) =>
              block
                .split('\n')
                .find((l) => l.startsWith(name + ': '))
                ?.slice(name.length + 2) ?? null;
            const event = field('event');
            if (event) events.push({ id: field('id'), event, data: field('data') ?? '' });
          }
          if (until(events) && (pings > 0 || events.length > 0)) {
            req.destroy();
            resolve(events);
          }
        });
      },
    );
    req.on('error', (e) => {
      if (!req.destroyed) reject(e);
    });
    req.end();
    setTimeout(() => {
      req.destroy();
      reject(new Error(`timed out with ${events.length} events`));
    }, 10_000).unref();
  });
}

describe('over a socket', () => {
  it('takes a lane from ask_post to ask_answer', async () => {
    const alice = jsonClient(daemon.url, { token: tok.alice });
    try {
      const posted = await client.post(toolPath('ask_post'), {
        lane_id: 'main-lane',
        kind: 'work',
        title: 'Write docs',
      });
      expect(posted.status).toBe(200);
      const askId = posted.json.result.ask.ask_id as string;
      const claimable = await alice.post(toolPath('ask_query_claimable'), { lane_id: 'main-lane' });
      expect(claimable.json.result.asks.map((a: { ask_id: string }) => a.ask_id)).toContain(askId);
      const claim = await alice.post(toolPath('ask_claim'), {
        lane_id: 'main-lane',
        ask_id: askId,
      });
      expect(claim.status).toBe(200);
      expect(claim.json.result.ask).toMatchObject({ state: 'claimed', holder: ALICE });
      const answer = await alice.post(toolPath('ask_answer'), {
        lane_id: 'main-lane',
        ask_id: askId,
        outcome: 'complete',
        result: 'Docs written',
      });
      expect(answer.status).toBe(200);
      expect(answer.json.result.ask).toMatchObject({
        state: 'answered',
        answer: { outcome: 'complete', answered_by: ALICE },
      });
      const lane = await client.post(toolPath('lane_get'), { lane_id: 'main-lane' });
      expect(lane.json.result.history.map((h: { op: string }) => h.op)).toEqual(
        expect.arrayContaining(['lane_propose', 'ask_post', 'ask_claim', 'ask_answer']),
      );
      expect(logs.some((l) => / local\/\S+ ask_answer alice@example\.com 200 /.test(l))).toBe(true);
    } finally {
      alice.close();
    }
  });

  it('streams commits as server-sent events, and resumes from Last-Event-ID', async () => {
    const eventsPath = `/api/repos/${key}/events`;
    const got = await readEvents(
      eventsPath,
      tok.alice,
      (evs) => evs.some((e) => e.event === 'commit'),
      {},
      () =>
        void client.post(toolPath('ask_post'), {
          lane_id: 'main-lane',
          kind: 'work',
          title: 'Streamed',
        }),
    );
    const commit = got.find((e) => e.event === 'commit')!;
    const data = JSON.parse(commit.data) as {
      ref: string;
      revision: string;
      ops: Array<{ op: string; args: { title: string } }>;
    };
    expect(data.ref).toBe('refs/zz/lanes/main-lane');
    expect(data.revision).toMatch(/^[0-9a-f]{40}$/);
    expect(data.ops[0]).toMatchObject({ op: 'ask_post', args: { title: 'Streamed' } });
    expect(commit.id).toBeTruthy();

    // Two commits while nobody listens; a reconnect with the last id replays them first.
    for (const title of ['Missed one', 'Missed two']) {
      expect(
        (await client.post(toolPath('ask_post'), { lane_id: 'main-lane', kind: 'work', title }))
          .status,
      ).toBe(200);
    }
    const resumed = await readEvents(eventsPath, tok.alice, (evs) => evs.length >= 2, {
      'last-event-id': commit.id!,
    });
    expect(resumed.map((e) => JSON.parse(e.data).ops[0].args.title)).toEqual([
      'Missed one',
      'Missed two',
    ]);

    // No token, no stream.
    const anon = await client.get(eventsPath, null);
    expect(anon.status).toBe(401);
    const badCursor = await client.get(`${eventsPath}?cursor=garbage`);
    expect(badCursor.status).toBe(400);
  });

  it('answers 413 to a real 20 MiB body, declared or chunked', async () => {
    const big = Buffer.alloc(20 * 1024 * 1024, 0x20);
    const declared = await client.send('POST', toolPath('lane_list'), big, {
      authorization: `Bearer ${tok.owner}`,
      'content-type': 'application/json',
    });
    expect(declared.status).toBe(413);
    expect(declared.json.code).toBe('payload_too_large');
    expect(declared.headers.connection).toBe('close');

    const url = new URL(daemon.url);
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          method: 'POST',
          path: toolPath('lane_list'),
          headers: { authorization: `Bearer ${tok.owner}`, 'content-type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', (e) =>
        e.message.includes('EPIPE') || e.message.includes('ECONNRESET') ? undefined : reject(e),
      );
      for (let i = 0; i < 20; i++) req.write(Buffer.alloc(1024 * 1024, 0x20));
      req.end();
    });
    expect(chunked.status).toBe(413);
    // The daemon still serves afterwards.
    expect((await client.post(toolPath('lane_list'), {})).status).toBe(200);
  });

  it('reads a small tool-call body that arrives in pieces whole (split inside a character)', async () => {
    // Small tool-call bodies are read whole by the adapter before the app runs (known-bodies.ts).
    const url = new URL(daemon.url);
    const title = 'pièces ✓ ' + 'x'.repeat(200);
    const body = Buffer.from(JSON.stringify({ lane_id: 'main-lane', kind: 'work', title }));
    const cut = body.indexOf(Buffer.from('✓')) + 1; // inside the 3-byte character
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(Number(url.port), url.hostname);
      let got = '';
      sock.on('data', (c: Buffer) => {
        got += c.toString('utf8');
        const end = got.indexOf('\r\n\r\n');
        const length = /content-length: (\d+)/i.exec(got)?.[1];
        if (end >= 0 && length && Buffer.byteLength(got.slice(end + 4)) >= Number(length)) {
          sock.end();
          resolve(got);
        }
      });
      sock.on('error', reject);
      sock.write(
        [
          `POST ${toolPath('ask_post')} HTTP/1.1`,
          `Host: ${url.host}`,
          `Authorization: Bearer ${tok.owner}`,
          'Content-Type: application/json',
          `Content-Length: ${body.length}`,
          '',
          '',
        ].join('\r\n'),
      );
      sock.write(body.subarray(0, cut));
      // The rest later, in a separate segment (a delay before a positive check only).
      setTimeout(() => sock.write(body.subarray(cut)), 50);
    });
    expect(answer.split('\r\n')[0], answer.slice(-300)).toBe('HTTP/1.1 200 OK');
    const result = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).result;
    expect(result.ask.title).toBe(title);
  });

  it("reads a small tool call's headers as a Request's Headers would, and answers with its headers", async () => {
    // The adapter hands a small tool call to the app without making a Request (known-bodies.ts
    // ReadRequest): its header lookups must still be Headers.get's (names in any case, a
    // repeated header's values joined), or the Host, Origin and token checks would differ.
    const url = new URL(daemon.url);
    const body = JSON.stringify({});
    const exchange = (headerLines: string[]) =>
      new Promise<{ status: string; head: string; body: string }>((resolve, reject) => {
        const sock = connect(Number(url.port), url.hostname);
        let got = '';
        sock.on('data', (c: Buffer) => (got += c.toString('utf8')));
        sock.on('error', reject);
        sock.on('close', () => {
          const end = got.indexOf('\r\n\r\n');
          resolve({
            status: got.split('\r\n')[0] ?? '',
            head: got.slice(0, end).toLowerCase(),
            body: got.slice(end + 4),
          });
        });
        sock.end(
          [
            `POST ${toolPath('lane_list')} HTTP/1.1`,
            ...headerLines,
            `Content-Length: ${Buffer.byteLength(body)}`,
            'Connection: close',
            '',
            body,
          ].join('\r\n'),
        );
      });
    const host = `Host: ${url.host}`;
    const auth = `Authorization: Bearer ${tok.owner}`;
    const json = 'Content-Type: application/json';

    const ok = await exchange([
      host.toUpperCase(),
      auth.replace('Authorization', 'AUTHORIZATION'),
      json.replace('Content-Type', 'content-TYPE'),
    ]);
    expect(ok.status, ok.body).toBe('HTTP/1.1 200 OK');
    expect(ok.head).toContain('\r\ncontent-type: application/json; charset=utf-8');
    expect(ok.head).toContain('\r\ncache-control: no-store');
    expect(ok.head).toContain('\r\nx-content-type-options: nosniff');
    expect(ok.head).toContain(`\r\ncontent-length: ${Buffer.byteLength(ok.body)}`);
    expect(JSON.parse(ok.body).result.lanes).toBeInstanceOf(Array);

    // The token twice reads "Bearer …, Bearer …": malformed, as with a Headers.
    const twice = await exchange([host, auth, auth, json]);
    expect(twice.status).toBe('HTTP/1.1 401 Unauthorized');
    expect(JSON.parse(twice.body).error).toMatch(/malformed Authorization/);
    expect(twice.head).toContain('\r\nwww-authenticate: bearer realm="zz"');

    // A second Host naming another server is not passed over.
    const hosts = await exchange([host, 'Host: evil.example', auth, json]);
    expect(hosts.status).toBe('HTTP/1.1 403 Forbidden');
    const origin = await exchange([host, auth, json, 'Origin: http://evil.example']);
    expect(origin.status).toBe('HTTP/1.1 403 Forbidden');
    const sameOrigin = await exchange([host, auth, json, `Origin: ${daemon.url}`]);
    expect(sameOrigin.status).toBe('HTTP/1.1 200 OK');
    const text = await exchange([host, auth, 'Content-Type: text/plain']);
    expect(text.status).toBe('HTTP/1.1 415 Unsupported Media Type');
  });

  it('always lets a client sending 20 MiB read its 413 (lingering close), 40 times over', async () => {
    const url = new URL(daemon.url);
    const body = Buffer.alloc(20 * 1024 * 1024, 0x20);
    // A raw socket shows what a client's kernel does: when the server closes with unread data,
    // a reset can arrive before the 413 is read and take it away (EPIPE/ECONNRESET instead).
    const once = (chunked: boolean) =>
      new Promise<{ head: string; error: string | null }>((resolve) => {
        const sock = connect(Number(url.port), url.hostname);
        let got = '';
        let error: string | null = null;
        sock.on('data', (c: Buffer) => (got += c.toString('latin1')));
        // Like most simple clients, read the answer only once the whole request is sent.
        sock.pause();
        sock.on('finish', () => sock.resume());
        sock.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
        sock.on('close', () => resolve({ head: got.split('\r\n')[0] ?? '', error }));
        sock.write(
          [
            `POST ${toolPath('lane_list')} HTTP/1.1`,
            `Host: ${url.host}`,
            `Authorization: Bearer ${tok.owner}`,
            'Content-Type: application/json',
            chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`,
            '',
            '',
          ].join('\r\n'),
        );
        if (chunked) {
          for (let i = 0; i < 20; i++) {
            const part = body.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024);
            sock.write(`${part.length.toString(16)}\r\n`);
            sock.write(part);
            sock.write('\r\n');
          }
          sock.end('0\r\n\r\n');
        } else {
          sock.end(body);
        }
      });
    const failures: string[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await once(i % 2 === 1);
      if (!r.head.startsWith('HTTP/1.1 413')) failures.push(`#${i}: ${r.head || '-'} ${r.error}`);
    }
    expect(failures).toEqual([]);
    expect((await client.post(toolPath('lane_list'), {})).status).toBe(200);
  });

  it('claims each of 300 Asks exactly once under 32 racing clients', async () => {
    const ASKS = 300;
    const CLIENTS = 32;
    const posted = await Promise.all(
      Array.from({ length: ASKS }, (_, i) =>
        client.post(toolPath('ask_post'), {
          lane_id: 'main-lane',
          kind: 'race',
          title: `race ${i}`,
        }),
      ),
    );
    const ids = posted.map((p) => {
      expect(p.status).toBe(200);
      return p.json.result.ask.ask_id as string;
    });
    const agents = await Promise.all(
      Array.from({ length: CLIENTS }, async (_, i) => {
        const actor = `agent${i}@example.com`;
        const { token } = await daemon.tokens.create(actor, 'login');
        return { actor, http: jsonClient(daemon.url, { token, maxSockets: 1 }) };
      }),
    );
    // Each Ask is contested by 4 clients, each walking its share in its own order.
    const CONTENDERS = 4;
    const winners = new Map<string, string[]>();
    let ok = 0;
    let conflicts = 0;
    const started = performance.now();
    await Promise.all(
      agents.map(async (agent, i) => {
        const mine = ids.filter(
          (_, j) => j % (CLIENTS / CONTENDERS) === i % (CLIENTS / CONTENDERS),
        );
        const order = i % 2 ? mine.reverse() : mine;
        for (const askId of order) {
          const r = await agent.http.post(toolPath('ask_claim'), {
            lane_id: 'main-lane',
            ask_id: askId,
          });
          if (r.status === 200) {
            ok++;
            winners.set(askId, [...(winners.get(askId) ?? []), agent.actor]);
          } else {
            expect(r.status, r.text).toBe(409);
            expect(r.json.code).toBe('already_claimed');
            conflicts++;
          }
        }
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    for (const a of agents) a.http.close();
    console.log(
      `HTTP claim race: ${ok + conflicts} requests (${ok} won, ${conflicts} lost) in ${seconds.toFixed(2)} s = ${Math.round(
        (ok + conflicts) / seconds,
      )} req/s`,
    );
    expect(ok).toBe(ASKS);
    expect(conflicts).toBe(ASKS * (CONTENDERS - 1));
    expect([...winners.values()].every((w) => w.length === 1)).toBe(true);
    const lane = await client.post(toolPath('lane_get'), {
      lane_id: 'main-lane',
      include_history: false,
      asks_limit: 1000,
    });
    const race = lane.json.result.asks.filter((a: { kind: string }) => a.kind === 'race');
    expect(race).toHaveLength(ASKS);
    for (const a of race) expect(a.holder).toBe(winners.get(a.ask_id)![0]);
  });

  it('ends a long-poll whose client went away (the abort reaches the tool call)', async () => {
    // The node adapter gives a small tool call's Request no signal of its own (known-bodies.ts):
    // the one that fires when the socket closes travels beside it. The call's log line is
    // written when it ends: with the abort lost, only after wait_ms (60 s), and this test fails
    // by its timeout.
    const repo = served.repo;
    // The cursor at the head: earlier tests left more events than one page holds.
    let cursor: string | undefined;
    for (;;) {
      const page = await client.post(toolPath('lane_events'), cursor ? { cursor } : {});
      cursor = page.json.result.next_cursor as string;
      if ((page.json.result.events as unknown[]).length === 0) break;
    }
    const ended = () => logs.filter((l) => l.includes(' lane_events ')).length;
    const before = ended();
    let listening!: () => void;
    const isListening = new Promise<void>((r) => (listening = r));
    const onCommit = repo.onCommit.bind(repo);
    repo.onCommit = (l) => {
      listening();
      return onCommit(l);
    };
    const url = new URL(daemon.url);
    const body = JSON.stringify({ cursor, wait_ms: 60_000 });
    const req = request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: toolPath('lane_events'),
      headers: {
        authorization: `Bearer ${tok.owner}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
      },
    });
    req.on('error', () => {});
    req.end(body);
    try {
      await isListening;
      req.destroy();
      while (ended() === before) await new Promise((r) => setTimeout(r, 20));
    } finally {
      repo.onCommit = onCommit;
    }
  }, 20_000);

  it('serves MCP at /api/repos/<o>/<r>/mcp with the same tokens', async () => {
    const url = new URL(`${daemon.url}/api/repos/${key}/mcp`);
    const mcp = newClient();
    await mcp.connect(
      new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { authorization: `Bearer ${tok.alice}` } },
      }),
    );
    try {
      const names = (await mcp.listTools()).tools.map((t) => t.name);
      expect(names).toContain('ask_claim');
      const res = await mcp.callTool({ name: 'lane_list', arguments: {} });
      expect((res.structuredContent as { lanes: unknown[] }).lanes.length).toBeGreaterThan(0);
    } finally {
      await mcp.close();
    }
    const bad = await client.send('POST', `/api/repos/${key}/mcp`, Buffer.from('{}'), {
      authorization: 'Bearer zzt_' + 'Z'.repeat(43),
      'content-type': 'application/json',
    });
    expect(bad.status).toBe(401);
    // No token on a private repository: even tools/list answers 401 with a Bearer challenge,
    // so that clients ask for a token instead of showing an empty tool list.
    for (const method of ['tools/list', 'initialize']) {
      const anon = await client.send(
        'POST',
        `/api/repos/${key}/mcp`,
        Buffer.from(
          JSON.stringify({
            jsonrpc: '2.0',
            id: 1,
            method,
            params:
              method === 'initialize'
                ? {
                    protocolVersion: '2025-06-18',
                    capabilities: {},
                    clientInfo: { name: 't', version: '1' },
                  }
                : {},
          }),
        ),
        {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-06-18',
        },
      );
      expect(anon.status, method).toBe(401);
      expect(anon.headers['www-authenticate']).toMatch(/^Bearer /);
    }
  });
});
