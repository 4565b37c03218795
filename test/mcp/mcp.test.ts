import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { PassThrough } from 'node:stream';
import { format, resolveConfig } from 'prettier';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Client } from '@modelcontextprotocol/client';
import { initRepo, ZzRepo, type Caller } from '../../src/core/index.js';
import { ZzError } from '../../src/errors.js';
import {
  createMcpHttpHandler,
  createMcpServer,
  errorText,
  IDEMPOTENCY_SENTENCE,
  parseToolsets,
  serveStdio,
  type CreateMcpServerOptions,
} from '../../src/mcp/index.js';
import {
  defineTool,
  READ,
  Registry,
  registry,
  runTool,
  WRITE,
  type ToolContext,
} from '../../src/tools/index.js';
import { makeRepo } from '../helpers/temp-repo.js';
import {
  connectHttp,
  connectInMemory,
  connectStreams,
  initializeRequest,
  textOf,
  TOOL_LIST_SNAPSHOT,
  toolListSnapshot,
} from './helpers.js';

const OWNER: Caller = { actor: 'owner@example.com' };
const ALICE: Caller = { actor: 'alice@example.com' };
const MISSING_ASK = 'ask-0000000000';
// 40 tools over stdio (claim-next, ask list/get/cancel, lane close, the five local gh_fetch_*
// tools, keys and tokens joined the 24): about 1.2 KiB each; 49,058 bytes on 2026-12-02, 49,013
// after ladder_tree's paging arguments (the shared write-argument descriptions were shortened).
const TOOL_LIST_BUDGET = 48 * 1024;

let repo: ZzRepo;
let cleanup: () => void;
const clients: Client[] = [];

beforeAll(async () => {
  const r = makeRepo('zz-mcp-');
  cleanup = r.cleanup;
  repo = await ZzRepo.open(r.dir, { key: 'local/test' });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close().catch(() => {})));
  repo.close();
  cleanup();
});

const ctxFor = (caller: Caller | null, local = true): ToolContext => ({ repo, caller, local });

async function connect(
  opts: Partial<CreateMcpServerOptions> = {},
  caller: Caller = OWNER,
): Promise<Client> {
  const client = await connectInMemory(
    createMcpServer({ registry, context: () => ctxFor(caller), local: true, ...opts }),
  );
  clients.push(client);
  return client;
}

const direct = (name: string, args: Record<string, unknown>, caller: Caller = OWNER) =>
  runTool(registry.require(name), args, ctxFor(caller));

describe('tool list', () => {
  it('lists every registry tool with a title, annotations and both schemas', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(registry.tools.map((t) => t.name));
    for (const def of registry.tools) {
      const t = tools.find((x) => x.name === def.name)!;
      expect(t.title, def.name).toBeTruthy();
      expect(t.annotations).toEqual({ title: t.title, ...def.annotations });
      for (const hint of [
        'readOnlyHint',
        'destructiveHint',
        'idempotentHint',
        'openWorldHint',
      ] as const) {
        expect(typeof t.annotations?.[hint], `${def.name}.${hint}`).toBe('boolean');
      }
      expect(t.description).toContain(def.summary);
      expect(t.inputSchema.type).toBe('object');
      expect(t.inputSchema.additionalProperties, `${def.name} input must be strict`).toBe(false);
      expect(t.outputSchema?.type, `${def.name} output schema`).toBe('object');
      // Writes that can be retried say how; run_in_sandbox writes nothing of zz's and takes no key.
      if (!def.annotations.readOnlyHint && 'idempotency_key' in def.input.shape)
        expect(t.description).toContain(IDEMPOTENCY_SENTENCE);
      else expect(t.description).not.toContain(IDEMPOTENCY_SENTENCE);
    }
  });

  it('writes nullable and union fields as anyOf, never a type array, in every schema', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const typeArrays: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}[${i}]`));
      if (!node || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        if (k === 'type' && Array.isArray(v)) typeArrays.push(`${at}: ${JSON.stringify(v)}`);
        // Property names are data, not schema keywords: a field called "type" is fine.
        walk(v, `${at}.${k}`);
      }
    };
    let nullable = 0;
    for (const t of tools) {
      walk(t.inputSchema, `${t.name}.input`);
      walk(t.outputSchema, `${t.name}.output`);
      nullable += (JSON.stringify(t.outputSchema).match(/\{"type":"null"\}/g) ?? []).length;
    }
    expect(typeArrays).toEqual([]);
    // The check has something to check: nullable output fields exist, written as anyOf.
    expect(nullable).toBeGreaterThan(0);
  });

  it('describes arguments from the zod schemas', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const post = tools.find((t) => t.name === 'ask_post')!;
    expect(post.description).toContain('- priority: 0 highest');
    expect(post.description).not.toContain('- idempotency_key:');
  });

  it('matches the committed snapshot (UPDATE_SNAPSHOTS=1 rewrites it)', async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const current = toolListSnapshot(tools);
    if (process.env.UPDATE_SNAPSHOTS === '1') {
      mkdirSync(dirname(TOOL_LIST_SNAPSHOT), { recursive: true });
      // Written as prettier would, so that `npm run format:check` stays green.
      const config = (await resolveConfig(TOOL_LIST_SNAPSHOT)) ?? {};
      const text = await format(JSON.stringify(current), {
        ...config,
        filepath: TOOL_LIST_SNAPSHOT,
      });
      writeFileSync(TOOL_LIST_SNAPSHOT, text);
      return;
    }
    const hint =
      'the MCP tool list changed; if intended, review the diff and run UPDATE_SNAPSHOTS=1 npx vitest run test/mcp';
    expect(existsSync(TOOL_LIST_SNAPSHOT), `${TOOL_LIST_SNAPSHOT} is missing: ${hint}`).toBe(true);
    expect(current, hint).toEqual(JSON.parse(readFileSync(TOOL_LIST_SNAPSHOT, 'utf8')));
  });

  it(`stays under ${TOOL_LIST_BUDGET} bytes`, async () => {
    const client = await connect();
    const { tools } = await client.listTools();
    const bytes = Buffer.byteLength(JSON.stringify(tools));
    console.log(
      `MCP tool list: ${tools.length} tools, ${bytes} bytes (budget ${TOOL_LIST_BUDGET})`,
    );
    expect(bytes).toBeLessThan(TOOL_LIST_BUDGET);
  });
});

describe('calls', () => {
  it('a read returns exactly what runTool returns', async () => {
    const client = await connect();
    const res = await client.callTool({ name: 'lane_list', arguments: {} });
    expect(res.isError).toBeFalsy();
    expect(res.structuredContent).toEqual(await direct('lane_list', {}));
    expect(JSON.parse(textOf(res))).toEqual(res.structuredContent);
  });

  it('writes return what runTool returns (a retry with the same key replays it)', async () => {
    const client = await connect();
    const proposeArgs = { lane_id: 'mcp-parity', title: 'Parity', idempotency_key: 'mcp-parity-1' };
    const proposed = await client.callTool({ name: 'lane_propose', arguments: proposeArgs });
    expect(proposed.isError, textOf(proposed)).toBeFalsy();
    const lane = proposed.structuredContent as {
      lane: { lane_id: string; coordinators: string[] };
      replayed: boolean;
    };
    expect(lane.lane.lane_id).toBe('mcp-parity');
    expect(lane.lane.coordinators).toEqual([OWNER.actor]);
    expect(lane.replayed).toBe(false);
    expect(await direct('lane_propose', proposeArgs)).toEqual({ ...lane, replayed: true });

    const postArgs = {
      lane_id: 'mcp-parity',
      kind: 'work',
      title: 'Do it',
      priority: 1,
      idempotency_key: 'mcp-post-1',
    };
    const posted = await client.callTool({ name: 'ask_post', arguments: postArgs });
    expect(posted.isError, textOf(posted)).toBeFalsy();
    const ask = posted.structuredContent as {
      ask: { ask_id: string; state: string };
      replayed: boolean;
    };
    expect(ask.ask.state).toBe('open');
    expect(JSON.parse(textOf(posted))).toEqual(ask);
    expect(await direct('ask_post', postArgs)).toEqual({ ...ask, replayed: true });

    // And a read of the result agrees too.
    const got = await client.callTool({ name: 'lane_get', arguments: { lane_id: 'mcp-parity' } });
    expect(got.structuredContent).toEqual(await direct('lane_get', { lane_id: 'mcp-parity' }));
  });

  it('a missing Ask is an isError result that says what to do', async () => {
    const client = await connect();
    const res = await client.callTool({
      name: 'ask_claim',
      arguments: { lane_id: '_repo', ask_id: MISSING_ASK },
    });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toBeUndefined();
    const text = textOf(res);
    expect(text).toMatch(/^Error not_found: ask ask-0000000000 does not exist/);
    expect(text).toContain('What to do:');
  });

  it('refuses unknown fields instead of ignoring them, naming the field', async () => {
    const client = await connect();
    const res = await client.callTool({ name: 'lane_list', arguments: { bogus: 1 } });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toBeUndefined();
    expect(textOf(res)).toContain('Error invalid_argument: unknown field "bogus"');
    expect(textOf(res)).toContain('What to do:');
  });

  it('names the field of a badly typed argument', async () => {
    const client = await connect();
    const res = await client.callTool({
      name: 'ask_post',
      arguments: { lane_id: '_repo', kind: 'work', title: 7 },
    });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^Error invalid_argument: title:/);
  });

  it('a stale expected_revision tells the model to re-read and retry with the current one', async () => {
    const client = await connect();
    const posted = await direct('ask_post', { lane_id: '_repo', kind: 'work', title: 'Stale' });
    const ask = posted.ask as { ask_id: string };
    const res = await client.callTool({
      name: 'ask_claim',
      arguments: { lane_id: '_repo', ask_id: ask.ask_id, expected_revision: '0'.repeat(40) },
    });
    expect(res.isError).toBe(true);
    const text = textOf(res);
    expect(text).toMatch(/^Error revision_mismatch:/);
    expect(text).toContain('retry with expected_revision set to the current revision');
    expect(text).toMatch(/Details: \{"current_revision":"[0-9a-f]{40}"\}/);
  });

  it('a claim held by someone else points to ask_query_claimable', async () => {
    const posted = await direct('ask_post', { lane_id: '_repo', kind: 'work', title: 'Contested' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    await direct('ask_claim', { lane_id: '_repo', ask_id: askId });
    const client = await connect({}, ALICE);
    const res = await client.callTool({
      name: 'ask_claim',
      arguments: { lane_id: '_repo', ask_id: askId },
    });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^Error already_claimed: .*owner@example\.com/);
    expect(textOf(res)).toContain('ask_query_claimable');
  });

  it('a bug is a generic isError result; the detail goes to onError only', async () => {
    const errors: Array<[unknown, string]> = [];
    const boom = defineTool({
      name: 'boom',
      summary: 'Fails',
      toolset: 'admin',
      annotations: READ,
      input: z.strictObject({}),
      output: z.strictObject({}),
      handler: () => Promise.reject(new Error('secret internals')),
    });
    const client = await connect({
      registry: new Registry([boom]),
      onError: (e, t) => errors.push([e, t]),
    });
    const res = await client.callTool({ name: 'boom', arguments: {} });
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^Error internal:/);
    expect(textOf(res)).not.toContain('secret');
    expect(errors).toHaveLength(1);
    expect(errors[0]![1]).toBe('boom');
  });
});

describe('narrowing', () => {
  it('readOnly hides write tools and refuses calls to them', async () => {
    const client = await connect({ readOnly: true });
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(
      registry.tools.filter((t) => t.annotations.readOnlyHint).map((t) => t.name),
    );
    expect(names).not.toContain('ask_post');
    expect(tools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);

    const before = await direct('lane_get', { lane_id: '_repo' });
    await expect(
      client.callTool({
        name: 'ask_post',
        arguments: { lane_id: '_repo', kind: 'work', title: 'Sneaky' },
      }),
    ).rejects.toThrow(/ask_post/);
    expect((await direct('lane_get', { lane_id: '_repo' })).lane).toEqual(before.lane);
  });

  it("toolsets: ['lanes'] hides and refuses ask tools", async () => {
    const client = await connect({ toolsets: ['lanes'] });
    const { tools } = await client.listTools();
    expect(tools.length).toBeGreaterThan(0);
    expect(tools.every((t) => registry.require(t.name).toolset === 'lanes')).toBe(true);
    expect(tools.map((t) => t.name)).not.toContain('ask_post');
    await expect(
      client.callTool({
        name: 'ask_post',
        arguments: { lane_id: '_repo', kind: 'work', title: 'Hidden' },
      }),
    ).rejects.toThrow(/ask_post/);
    await expect(
      client.callTool({ name: 'ask_query_claimable', arguments: { lane_id: '_repo' } }),
    ).rejects.toThrow();
  });

  it('hides local tools unless the server is local', async () => {
    const local = defineTool({
      name: 'run_local',
      summary: 'Runs here',
      toolset: 'local',
      local: true,
      annotations: WRITE,
      input: z.strictObject({}),
      output: z.strictObject({}),
      handler: () => Promise.resolve({}),
    });
    const reg = new Registry([local, registry.require('lane_list')]);
    const remote = await connect({ registry: reg, local: false });
    expect((await remote.listTools()).tools.map((t) => t.name)).toEqual(['lane_list']);
    const here = await connect({ registry: reg, local: true });
    expect((await here.listTools()).tools.map((t) => t.name)).toEqual(['run_local', 'lane_list']);
  });

  it('parseToolsets accepts lists and "all", and names unknown toolsets', () => {
    expect(parseToolsets('lanes,asks')).toEqual(['lanes', 'asks']);
    expect(parseToolsets(['lanes', 'asks,lanes'])).toEqual(['lanes', 'asks']);
    expect(parseToolsets('all')).toContain('admin');
    expect(() => parseToolsets('lanes,nope')).toThrow(/unknown toolset "nope"/);
  });

  it('errorText hides everything but the code for internal errors', () => {
    expect(errorText(new ZzError('git_failed', 'fatal: /home/x'), 't')).not.toContain('/home/x');
    expect(errorText(new ZzError('conflict', 'cannot revoke the last owner'), 't')).toContain(
      'cannot revoke the last owner',
    );
  });
});

describe.each(['legacy', 'auto'] as const)('Streamable HTTP handler (%s era)', (era) => {
  const handler = createMcpHttpHandler({ registry });

  async function http(caller: Caller | null, query = ''): Promise<Client> {
    const client = await connectHttp(handler, { repo, caller }, query, era);
    clients.push(client);
    return client;
  }

  it('serves the registry to an owner, with the same results as runTool', async () => {
    const client = await http(OWNER);
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(registry.tools.filter((t) => !t.local).map((t) => t.name));
    expect(names).toContain('role_grant');
    const res = await client.callTool({ name: 'lane_list', arguments: {} });
    expect(res.structuredContent).toEqual(await direct('lane_list', {}));
    const err = await client.callTool({
      name: 'ask_claim',
      arguments: { lane_id: '_repo', ask_id: MISSING_ASK },
    });
    expect(err.isError).toBe(true);
    expect(textOf(err)).toMatch(/^Error not_found:/);
  });

  it('filters by role: a non-owner does not see role_grant, nor lane_grant until it coordinates a Lane', async () => {
    const member: Caller = { actor: `member-${era}@example.com` };
    const client = await http(member);
    let names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('role_grant');
    expect(names).not.toContain('lane_grant');
    expect(names).toContain('ask_post');
    await expect(
      client.callTool({ name: 'role_grant', arguments: { grantee: member.actor, role: 'owner' } }),
    ).rejects.toThrow(/role_grant/);
    const config = await repo.config.read();
    expect(config.state.config?.owners).toEqual([OWNER.actor]);

    const proposed = await client.callTool({
      name: 'lane_propose',
      arguments: { lane_id: `${era}-lane`, title: 'Mine' },
    });
    expect(proposed.isError, textOf(proposed)).toBeFalsy();
    // Stateless: every request is served from the caller's current roles.
    names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('lane_grant');
    expect(names).not.toContain('role_grant');
  });

  it('lets a request narrow, never widen, with ?read_only=1 and ?toolsets=', async () => {
    const ro = await http(OWNER, '?read_only=1');
    const roTools = (await ro.listTools()).tools;
    expect(roTools.length).toBeGreaterThan(0);
    expect(roTools.every((t) => t.annotations?.readOnlyHint === true)).toBe(true);
    await expect(
      ro.callTool({ name: 'lane_propose', arguments: { lane_id: 'ro-lane', title: 'No' } }),
    ).rejects.toThrow(/lane_propose/);

    const lanesOnly = await http(OWNER, '?toolsets=lanes');
    expect(
      (await lanesOnly.listTools()).tools.every(
        (t) => registry.require(t.name).toolset === 'lanes',
      ),
    ).toBe(true);

    const capped = createMcpHttpHandler({ registry, toolsets: ['asks'] });
    const widened = await connectHttp(capped, { repo, caller: OWNER }, '?toolsets=lanes,asks', era);
    clients.push(widened);
    expect(
      (await widened.listTools()).tools.every((t) => registry.require(t.name).toolset === 'asks'),
    ).toBe(true);
  });

  it('answers 400 for an unknown toolset in the URL', async () => {
    const res = await handler(
      new Request('http://127.0.0.1/mcp?toolsets=nope', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      }),
      { repo, caller: OWNER },
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'invalid_argument' });
  });

  it('shows an anonymous caller only the public reads', async () => {
    const anon = await http(null);
    const names = (await anon.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(registry.tools.filter((t) => t.publicRead).map((t) => t.name));
    const res = await anon.callTool({ name: 'lane_list', arguments: {} });
    // The repository is private: the call itself is refused, with a fixable message.
    expect(res.isError).toBe(true);
    expect(textOf(res)).toMatch(/^Error unauthorized:/);
  });
});

describe('stdio', () => {
  it('serves the registry (local tools included) and settles `closed` when the client hangs up', async () => {
    const local = defineTool({
      name: 'run_local',
      summary: 'Runs here',
      toolset: 'local',
      local: true,
      annotations: WRITE,
      input: z.strictObject({}),
      output: z.strictObject({ here: z.boolean() }),
      handler: (_args, ctx) => Promise.resolve({ here: ctx.local }),
    });
    const toServer = new PassThrough();
    const fromServer = new PassThrough();
    const handle = serveStdio({
      registry: new Registry([local, registry.require('lane_list')]),
      context: () => ctxFor(OWNER, true),
      stdin: toServer,
      stdout: fromServer,
    });
    const client = await connectStreams(fromServer, toServer);
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['run_local', 'lane_list']);
    const res = await client.callTool({ name: 'run_local', arguments: {} });
    expect(res.structuredContent).toEqual({ here: true });
    const list = await client.callTool({ name: 'lane_list', arguments: {} });
    expect(list.structuredContent).toEqual(await direct('lane_list', {}));
    await client.close();
    await handle.closed;
  });

  it('stdin ended with a call that never answers: gives up after drainTimeoutMs, says so, closes', async () => {
    const stuck = defineTool({
      name: 'hang',
      summary: 'Never answers',
      toolset: 'local',
      local: true,
      annotations: READ,
      input: z.strictObject({}),
      output: z.strictObject({}),
      handler: () => new Promise<Record<string, never>>(() => {}),
    });
    const toServer = new PassThrough();
    const fromServer = new PassThrough();
    let out = '';
    fromServer.on('data', (c: Buffer) => (out += c.toString('utf8')));
    const errors: string[] = [];
    const handle = serveStdio({
      registry: new Registry([stuck]),
      context: () => ctxFor(OWNER, true),
      stdin: toServer,
      stdout: fromServer,
      drainTimeoutMs: 300,
      onTransportError: (e) => errors.push(e.message),
    });
    const init = initializeRequest(1);
    const hang = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'hang', arguments: {} },
    };
    const started = Date.now();
    toServer.end(`${JSON.stringify(init)}\n${JSON.stringify(hang)}\n`);
    await handle.closed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { id: number }).id),
    ).toEqual([1]);
    expect(errors).toEqual(['stdin closed: gave up on 1 call still running after 300 ms']);
  });
});
