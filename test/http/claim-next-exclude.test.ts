import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../../src/schema/limits.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { newClient, textOf } from '../mcp/helpers.js';

// ask_claim_next's `exclude` from its one definition, through every front end of a real daemon
// on 127.0.0.1: HTTP, MCP over Streamable HTTP and the CLI (`zz ask claim-next --exclude`).

const OWNER = 'owner@example.com';
const BOT = 'owner@example.com[bot]';
let t: TestDaemon;
let http: JsonClient;
let botToken: string;
let ownerToken: string;

const ids = (n: number) =>
  Array.from({ length: n }, (_, i) => `ask-${i.toString(16).padStart(10, '0')}`);

beforeAll(async () => {
  t = await startTestDaemon({ prefix: 'zz-exclude-', daemon: { mcpHandler: undefined } });
  ownerToken = await t.token(OWNER);
  botToken = await t.token(BOT, 'bot');
  http = jsonClient(t.url, { token: botToken });
});
afterAll(async () => {
  http.close();
  await t.close();
});

const tool = (name: string) => `/api/repos/${t.key}/tools/${name}`;

/** A fresh Lane with `n` work Asks, each of a lower priority than the one before (up to 4). */
async function lane(id: string, n: number): Promise<string[]> {
  const owner = (path: string, body: unknown) => http.post(path, body, ownerToken);
  expect((await owner(tool('lane_propose'), { lane_id: id, title: id })).status).toBe(200);
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await owner(tool('ask_post'), {
      lane_id: id,
      kind: 'work',
      title: `t${i}`,
      priority: Math.min(i, 4),
    });
    out.push(r.json.result.ask.ask_id);
  }
  return out;
}

describe('ask_claim_next exclude', () => {
  it('over HTTP: passes over the Asks named, replays with the same key, refuses past the bound', async () => {
    const [a, b, c] = await lane('h', 3);
    const claim = (body: Record<string, unknown>) =>
      http.post(tool('ask_claim_next'), { lane_id: 'h', ...body });
    const first = await claim({ exclude: [a], idempotency_key: 'h1' });
    expect(first.status).toBe(200);
    expect(first.json.result.ask).toMatchObject({ ask_id: b, holder: BOT, state: 'claimed' });
    const again = await claim({ exclude: [a], idempotency_key: 'h1' });
    expect(again.json.result).toMatchObject({ replayed: true, ask: { ask_id: b } });
    // Everything left excluded: {ask: null}, though a and c are open.
    expect((await claim({ exclude: [a, c] })).json.result.ask).toBeNull();

    const past = await claim({ exclude: ids(LIMITS.claimExclude + 1) });
    expect(past.status).toBe(400);
    expect(past.json).toMatchObject({
      code: 'invalid_argument',
      error: 'exclude: at most 100 Ask ids: pass over only the Asks you mean to retry later',
    });
    const bad = await claim({ exclude: ['../../etc'] });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('exclude.0: ask_id must look like ask-<10 hex>');
    const notList = await claim({ exclude: a });
    expect(notList.status).toBe(400);
    expect(notList.json.error).toMatch(/^exclude: /);
    // Refusals claimed nothing: a and c are still open.
    const r = await http.post(tool('lane_get'), { lane_id: 'h' });
    const states = Object.fromEntries(
      (r.json.result.asks as { ask_id: string; state: string }[]).map((x) => [x.ask_id, x.state]),
    );
    expect(states).toEqual({ [a!]: 'open', [b!]: 'claimed', [c!]: 'open' });
  });

  it('over MCP: the schema lists it, the call honours it, an error says what to fix', async () => {
    const [a, b] = await lane('m', 2);
    const mcp = newClient();
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/api/repos/${t.key}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${botToken}` } },
      }),
    );
    try {
      const listed = (await mcp.listTools()).tools.find((x) => x.name === 'ask_claim_next')!;
      expect(listed.inputSchema.properties!.exclude).toMatchObject({
        type: 'array',
        maxItems: LIMITS.claimExclude,
      });
      const ok = await mcp.callTool({
        name: 'ask_claim_next',
        arguments: { lane_id: 'm', exclude: [a], idempotency_key: 'm1' },
      });
      expect(ok.isError).toBeFalsy();
      expect((ok.structuredContent as { ask: { ask_id: string } }).ask.ask_id).toBe(b);
      const replay = await mcp.callTool({
        name: 'ask_claim_next',
        arguments: { lane_id: 'm', exclude: [a], idempotency_key: 'm1' },
      });
      expect(replay.structuredContent).toMatchObject({ replayed: true, ask: { ask_id: b } });
      const past = await mcp.callTool({
        name: 'ask_claim_next',
        arguments: { lane_id: 'm', exclude: ids(LIMITS.claimExclude + 1) },
      });
      expect(past.isError).toBe(true);
      expect(textOf(past)).toMatch(
        /exclude: at most 100 Ask ids: pass over only the Asks you mean to retry later/,
      );
      const none = await mcp.callTool({
        name: 'ask_claim_next',
        arguments: { lane_id: 'm', exclude: [a] },
      });
      expect(none.structuredContent).toMatchObject({ ask: null });
    } finally {
      await mcp.close();
    }
  });

  it('from the CLI: --exclude, repeated, through the daemon', async () => {
    const [a, b, c] = await lane('c', 3);
    const env = { ...cliEnv(), ZZ_TOKEN: botToken };
    const r = await zz(
      t.dir,
      env,
      ...['ask', 'claim-next', '--lane-id', 'c', '--exclude', a!, '--exclude', b!, '--json'],
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.json().ask).toMatchObject({ ask_id: c, holder: BOT });
    // Through the daemon (its daemon.json in the checkout), not in-process.
    expect(t.logs.filter((l) => /ask_claim_next .*\[bot\] 200/.test(l)).length).toBeGreaterThan(0);
    const past = await zz(
      t.dir,
      env,
      ...['ask', 'claim-next', '--lane-id', 'c', ...ids(101).flatMap((x) => ['--exclude', x])],
    );
    expect(past.code).not.toBe(0);
    expect(past.stderr).toMatch(/exclude: at most 100 Ask ids/);
  });
});
