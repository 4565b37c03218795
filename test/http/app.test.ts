import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TokenStore } from '../../src/core/token-store.js';
import { createApp } from '../../src/http/index.js';
import { ZzError } from '../../src/errors.js';
import { ALL_TOOLS, defineTool, READ, Registry, registry } from '../../src/tools/index.js';
import {
  ALICE,
  BOB,
  type Call,
  errorBodies,
  extraApp,
  extraTools,
  HOST,
  logs,
  OWNER,
  priv,
  pub,
  refs,
  send,
  testbed,
  tok,
  tokens,
  tool,
} from '../helpers/app-fixture.js';

// The daemon's routes in-process: app.fetch(new Request(…)), no socket. The testbed (two
// repositories, tokens, the kept logs and error bodies): helpers/app-fixture.ts.

testbed();

describe('routes', () => {
  it('answers /healthz, /api/repos and /api/tools', async () => {
    expect((await send('/healthz', { token: null })).json).toEqual({
      ok: true,
      repos: 2,
      pid: process.pid,
    });
    // Without a token, only the public repositories are named; a token of the (one) store
    // names both.
    const anonymous = await send('/api/repos', { token: null });
    expect(anonymous.json.repos.map((r: { repo: string }) => r.repo)).toEqual(['local/public']);
    const repos = await send('/api/repos');
    expect(repos.json.repos.map((r: { repo: string }) => r.repo)).toEqual([
      'local/demo',
      'local/public',
    ]);
    expect((await send('/api/repos', { token: 'zzt_' + 'x'.repeat(43) })).status).toBe(401);
    const tools = await send('/api/tools', { token: null });
    expect(tools.status).toBe(200);
    const names = tools.json.tools.map((t: { name: string }) => t.name);
    expect(names).toEqual(ALL_TOOLS.map((t) => t.name));
    const post = tools.json.tools.find((t: { name: string }) => t.name === 'ask_post');
    expect(post).toMatchObject({ toolset: 'asks', annotations: { readOnlyHint: false } });
    expect(post.input_schema.properties.lane_id).toBeDefined();
    expect(post.input_schema.additionalProperties).toBe(false);
    expect(post.output_schema.properties.ask).toBeDefined();
    // Nullable fields are anyOf, never a type array (some clients refuse those).
    const typeArrays: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((n, i) => walk(n, `${at}[${i}]`));
      if (!node || typeof node !== 'object') return;
      for (const [k, v] of Object.entries(node)) {
        if (k === 'type' && Array.isArray(v)) typeArrays.push(at);
        walk(v, `${at}.${k}`);
      }
    };
    walk(tools.json.tools, 'tools');
    expect(typeArrays).toEqual([]);
    expect(tools.text).toContain('{"type":"null"}');
    // Cached: the same bytes twice.
    expect((await send('/api/tools', { token: null })).text).toBe(tools.text);
  });

  it('runs a tool, filling repo from the URL', async () => {
    const r = await tool('ask_post', { lane_id: 'auth', kind: 'work', title: 'Hash passwords' });
    expect(r.status).toBe(200);
    expect(r.json.result.ask).toMatchObject({
      lane_id: 'auth',
      kind: 'work',
      state: 'open',
      posted_by: OWNER,
    });
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    // A body naming the same repo is fine; another repo is a 400.
    expect((await tool('lane_list', { repo: 'local/demo' })).status).toBe(200);
    const other = await tool('lane_list', { repo: 'local/public' });
    expect(other.status).toBe(400);
    expect(other.json.code).toBe('invalid_argument');
    // An empty body counts as {}.
    expect((await send('/api/repos/local/demo/tools/lane_list', { method: 'POST' })).status).toBe(
      200,
    );
  });
});

describe('400 invalid input', () => {
  it('refuses invalid JSON, non-object bodies and deep nesting', async () => {
    const bad = await tool('lane_list', undefined, {
      raw: '{"lane_id": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect(bad.json).toMatchObject({ code: 'invalid_argument' });
    expect(bad.json.error).toMatch(/not valid JSON/);
    for (const raw of ['[]', '[1,2]', '"x"', '42', 'null', 'true']) {
      const r = await tool('lane_list', undefined, { raw });
      expect(r.status, raw).toBe(400);
      expect(r.json.error).toMatch(/JSON object/);
    }
    const deep = await tool('lane_list', undefined, {
      raw: '['.repeat(20_000) + ']'.repeat(20_000),
    });
    expect(deep.status).toBe(400);
    expect(deep.json.error).toMatch(/nested deeper than 64/);
    const deepObj = await tool('lane_list', undefined, {
      raw: '{"a":'.repeat(20_000) + '1' + '}'.repeat(20_000),
    });
    expect(deepObj.status).toBe(400);
    // Brackets inside strings do not count.
    const inString = await tool('ask_post', {
      lane_id: 'auth',
      kind: 'work',
      title: '['.repeat(200),
    });
    expect(inString.status).toBe(200);
    const notUtf8 = await tool('lane_list', undefined, {
      raw: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    });
    expect(notUtf8.status).toBe(400);
  });

  it('names unknown fields and wrong types', async () => {
    const unknown = await tool('lane_list', { bogus: 1 });
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toMatch(/unknown field "bogus"/);
    const wrong = await tool('ask_post', { lane_id: 'auth', kind: 'work', title: 7 });
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toMatch(/^title:/);
    expect(wrong.json.details.issues).toBeInstanceOf(Array);
    const missing = await tool('ask_claim', { lane_id: 'auth' });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatch(/ask_id/);
  });
});

describe('401 authentication', () => {
  it('refuses missing, unknown and malformed tokens', async () => {
    const cases: Call[] = [
      { token: null },
      { token: 'zzt_' + 'A'.repeat(43) },
      { token: 'nope' },
      { auth: 'Basic b3duZXI6cHc=' },
      { auth: 'Bearer' },
      { auth: 'Bearer a b' },
      { auth: `Token ${tok.owner}` },
    ];
    for (const c of cases) {
      const r = await tool('ask_post', { lane_id: 'auth', kind: 'work', title: 'x' }, c);
      expect(r.status, JSON.stringify(c)).toBe(401);
      expect(r.json.code).toBe('unauthorized');
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="zz"');
    }
    expect((await tool('lane_list', {}, { token: null })).status).toBe(401);
    expect((await send('/api/repos/local/demo/events', { token: null })).status).toBe(401);
  });

  it('takes a revocation into account at once, even from another process', async () => {
    const { token } = await tokens.create('carol@example.com', 'login');
    expect((await tool('lane_list', {}, { token })).status).toBe(200);
    // A second store on the same file stands for `zz agent revoke` in another process.
    const other = new TokenStore(priv.repo.git!.gitdir);
    expect(await other.revoke('carol@example.com')).toBe(1);
    const r = await tool('lane_list', {}, { token });
    expect(r.status).toBe(401);
    // A second token of the same actor and name does not revoke the first; rotate does.
    const first = await tokens.create('dave@example.com', 'claude');
    const second = await other.create('dave@example.com', 'claude');
    expect((await tool('lane_list', {}, { token: first.token })).status).toBe(200);
    expect((await tool('lane_list', {}, { token: second.token })).status).toBe(200);
    const third = await other.create('dave@example.com', 'claude', { rotate: true });
    expect((await tool('lane_list', {}, { token: first.token })).status).toBe(401);
    expect((await tool('lane_list', {}, { token: second.token })).status).toBe(401);
    expect((await tool('lane_list', {}, { token: third.token })).status).toBe(200);
    // Characters appended to a valid token make it no token.
    expect((await tool('lane_list', {}, { token: third.token + 'x' })).status).toBe(401);
  });
});

describe('MCP mount', () => {
  it('answers 401 with a Bearer challenge to an anonymous MCP request on a private repo only', async () => {
    const seen: Array<string | null> = [];
    const withMcp = createApp({
      repos: new Map([
        [priv.repo.key, priv.repo],
        [pub.repo.key, pub.repo],
      ]),
      tokens,
      registry,
      host: HOST,
      mcpHandler: async (_req, ctx) => {
        seen.push(ctx.caller?.actor ?? null);
        return new Response('{}', { status: 200 });
      },
    });
    const anonPrivate = await send('/api/repos/local/demo/mcp', {
      method: 'POST',
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      token: null,
      on: withMcp,
    });
    expect(anonPrivate.status).toBe(401);
    expect(anonPrivate.headers.get('www-authenticate')).toBe('Bearer realm="zz"');
    const anonPublic = await send('/api/repos/local/public/mcp', {
      method: 'POST',
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      token: null,
      on: withMcp,
    });
    expect(anonPublic.status).toBe(200);
    const owner = await send('/api/repos/local/demo/mcp', {
      method: 'POST',
      body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      on: withMcp,
    });
    expect(owner.status).toBe(200);
    expect(seen).toEqual([null, OWNER]);
  });
});

describe('403 scope and actor', () => {
  it('refuses an actor or from that is not the token’s', async () => {
    const r = await tool(
      'ask_post',
      { lane_id: 'auth', kind: 'work', title: 'x', actor: BOB },
      { token: tok.alice },
    );
    expect(r.status).toBe(403);
    expect(r.json.code).toBe('forbidden');
    const from = await tool(
      'ask_post',
      { lane_id: 'auth', kind: 'work', title: 'x', from: OWNER },
      { token: tok.alice },
    );
    expect(from.status).toBe(403);
  });

  it('refuses claims and grants out of scope', async () => {
    const review = await tool('ask_post', {
      lane_id: 'auth',
      kind: 'changeset_review',
      title: 'Review it',
    });
    expect(review.status).toBe(200);
    const claim = await tool(
      'ask_claim',
      { lane_id: 'auth', ask_id: review.json.result.ask.ask_id },
      { token: tok.bob },
    );
    expect(claim.status).toBe(403);
    expect(claim.json.error).toMatch(/maintainers/);
    const grant = await tool('role_grant', { grantee: BOB, role: 'owner' }, { token: tok.bob });
    expect(grant.status).toBe(403);
    const laneGrant = await tool(
      'lane_grant',
      { lane_id: 'auth', grantee: BOB, role: 'maintainer' },
      { token: tok.bob },
    );
    expect(laneGrant.status).toBe(403);
  });

  it('refuses a foreign Host or Origin (DNS rebinding) and sends no CORS headers', async () => {
    for (const host of [
      'evil.example:7433',
      '127.0.0.1:9999',
      '10.0.0.1:7433',
      'localhost.evil.example:7433',
    ]) {
      const r = await send('/healthz', { host });
      expect(r.status, host).toBe(403);
      expect(r.json.error).toMatch(/DNS rebinding/);
    }
    for (const host of ['127.0.0.1:7433', 'localhost:7433', '[::1]:7433', 'LOCALHOST:7433']) {
      expect((await send('/healthz', { host })).status, host).toBe(200);
    }
    const origin = await tool('lane_list', {}, { headers: { origin: 'http://evil.example' } });
    expect(origin.status).toBe(403);
    expect(
      (await tool('lane_list', {}, { headers: { origin: 'http://localhost:7433' } })).status,
    ).toBe(200);
    const preflight = await send('/api/repos/local/demo/tools/lane_list', {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:7433', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(405);
    for (const r of [preflight, origin, await tool('lane_list', {}), await send('/healthz')]) {
      for (const [k] of r.headers) expect(k).not.toMatch(/^access-control-/);
    }
  });
});

describe('404, 405, 409, 413, 415', () => {
  it('404: unknown repo (listing the served ones), tool, lane, ask and route', async () => {
    const repo = await send('/api/repos/nobody/nothing/tools/lane_list', {
      method: 'POST',
      body: {},
    });
    expect(repo.status).toBe(404);
    expect(repo.json).toMatchObject({
      code: 'not_found',
      details: { repos: ['local/demo', 'local/public'] },
    });
    const unknownTool = await tool('nope_tool', {});
    expect(unknownTool.status).toBe(404);
    expect(unknownTool.json.error).toMatch(/unknown tool/);
    expect((await tool('NOT..A..TOOL', {})).status).toBe(404);
    const lane = await tool('lane_get', { lane_id: 'no-such-lane' });
    expect(lane.status).toBe(404);
    expect(lane.json.error).toMatch(/lane no-such-lane/);
    expect((await tool('ask_claim', { lane_id: 'auth', ask_id: 'ask-0000000000' })).status).toBe(
      404,
    );
    expect((await send('/nothing/here')).status).toBe(404);
    expect((await send('/api/repos/local/demo/mcp', { method: 'POST', body: {} })).status).toBe(
      404,
    );
  });

  it('405: wrong method, with Allow', async () => {
    const get = await send('/api/repos/local/demo/tools/lane_list');
    expect(get.status).toBe(405);
    expect(get.json.code).toBe('method_not_allowed');
    expect(get.headers.get('allow')).toBe('POST');
    const post = await send('/healthz', { method: 'POST', body: {} });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET');
  });

  it('409: an Ask claimed by someone else', async () => {
    const ask = await tool('ask_post', { lane_id: 'auth', kind: 'work', title: 'Claim me' });
    const id = ask.json.result.ask.ask_id as string;
    expect(
      (await tool('ask_claim', { lane_id: 'auth', ask_id: id }, { token: tok.alice })).status,
    ).toBe(200);
    const lost = await tool('ask_claim', { lane_id: 'auth', ask_id: id }, { token: tok.bob });
    expect(lost.status).toBe(409);
    expect(lost.json).toMatchObject({ code: 'already_claimed', details: { holder: ALICE } });
  });

  it('413: a 20 MiB body, streamed or declared', async () => {
    const big = new Uint8Array(20 * 1024 * 1024).fill(0x20);
    const streamed = await tool('lane_list', undefined, { raw: big });
    expect(streamed.status).toBe(413);
    expect(streamed.json.code).toBe('payload_too_large');
    const declared = await tool('lane_list', undefined, {
      raw: '{}',
      headers: { 'content-length': String(20 * 1024 * 1024) },
    });
    expect(declared.status).toBe(413);
    // Just under the limit is parsed (and then refused for what it says).
    const near = '{"title":"' + 'x'.repeat(8 * 1024 * 1024 - 100) + '"}';
    expect((await tool('lane_list', undefined, { raw: near })).status).toBe(400);
  });

  it('415: a Content-Type that is not JSON', async () => {
    const r = await tool('lane_list', undefined, {
      raw: '{}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(r.status).toBe(415);
    expect(r.json.code).toBe('unsupported_media_type');
    for (const type of ['application/json; charset=utf-8', 'application/vnd.zz+json']) {
      expect(
        (await tool('lane_list', undefined, { raw: '{}', headers: { 'content-type': type } }))
          .status,
        type,
      ).toBe(200);
    }
  });
});

describe('public repositories', () => {
  it('allow lane_list without a token, but not writes or private repos', async () => {
    const list = await send('/api/repos/local/public/tools/lane_list', {
      method: 'POST',
      body: {},
      token: null,
    });
    expect(list.status).toBe(200);
    expect(list.json.result.lanes.map((l: { lane_id: string }) => l.lane_id)).toEqual(['_repo']);
    const post = await send('/api/repos/local/public/tools/ask_post', {
      method: 'POST',
      body: { lane_id: '_repo', kind: 'work', title: 'x' },
      token: null,
    });
    expect(post.status).toBe(401);
    const get = await send('/api/repos/local/public/tools/lane_get', {
      method: 'POST',
      body: { lane_id: '_repo' },
      token: null,
    });
    expect(get.status).toBe(401);
    // A token that is given must be valid, public or not.
    const bad = await send('/api/repos/local/public/tools/lane_list', {
      method: 'POST',
      body: {},
      token: 'zzt_' + 'B'.repeat(43),
    });
    expect(bad.status).toBe(401);
  });
});

describe('every tool over HTTP', () => {
  it('reaches each registry tool: a JSON result or a 4xx, never 404 unknown tool or 5xx', async () => {
    for (const t of [...ALL_TOOLS, ...extraTools.filter((x) => x.local)]) {
      const r = await send(`/api/repos/local/demo/tools/${t.name}`, {
        method: 'POST',
        body: {},
        on: extraApp,
      });
      expect(r.json, t.name).toBeTypeOf('object');
      expect(r.status, `${t.name}: ${r.text}`).toBeLessThan(500);
      if (r.status === 200) {
        expect(r.json.result, t.name).toBeTypeOf('object');
      } else {
        expect(r.status, t.name).toBeGreaterThanOrEqual(400);
        expect(r.json.error, t.name).not.toMatch(/unknown tool/);
        expect(r.json.code, t.name).toMatch(/^[a-z_]+$/);
      }
      if (t.local) expect([r.status, r.json.code], t.name).toEqual([400, 'local_only']);
    }
  });
});

describe('500', () => {
  it('logs the stack of a bug and tells the client nothing of it', async () => {
    const before = logs.length;
    const r = await send('/api/repos/local/demo/tools/test_buggy_tool', {
      method: 'POST',
      body: {},
      on: extraApp,
    });
    expect(r.status).toBe(500);
    expect(r.json).toEqual({
      error: 'internal error; the daemon log has the details',
      code: 'internal',
    });
    expect(r.text).not.toMatch(/secret|thing\.ts|TypeError/);
    const logged = logs.slice(before).join('\n');
    expect(logged).toMatch(/TypeError: secret internals/);
    expect(logged).toMatch(/\n\s+at /);
  });

  it('a thrown ZzError keeps its status', async () => {
    const zz = new Registry([
      defineTool({
        name: 'test_conflict',
        summary: 'x',
        toolset: 'admin',
        annotations: READ,
        input: z.strictObject({}),
        output: z.strictObject({}),
        handler: () =>
          Promise.reject(new ZzError('merge_conflict', 'the branch moved', { paths: ['a'] })),
      }),
    ]);
    const gitFailed = defineTool({
      name: 'test_git_failed',
      summary: 'x',
      toolset: 'admin',
      annotations: READ,
      input: z.strictObject({}),
      output: z.strictObject({}),
      handler: () =>
        Promise.reject(
          new ZzError('git_failed', 'git cat-file failed: fatal: /secret/path', { stderr: 'x' }),
        ),
    });
    const logged: string[] = [];
    const a = createApp({
      repos: new Map([[priv.repo.key, priv.repo]]),
      tokens,
      registry: new Registry([...zz.tools, gitFailed]),
      host: HOST,
      log: (l) => logged.push(l),
    });
    const r = await send('/api/repos/local/demo/tools/test_conflict', {
      method: 'POST',
      body: {},
      on: a,
    });
    expect(r.status).toBe(409);
    expect(r.json).toEqual({
      error: 'the branch moved',
      code: 'merge_conflict',
      details: { paths: ['a'] },
    });
    // A 500 ZzError keeps its code but not its message or details, which go to the log.
    const g = await send('/api/repos/local/demo/tools/test_git_failed', {
      method: 'POST',
      body: {},
      on: a,
    });
    expect(g.status).toBe(500);
    expect(g.json).toEqual({
      error: 'internal error; the daemon log has the details',
      code: 'git_failed',
    });
    expect(logged.join('\n')).toContain('/secret/path');
  });
});

describe('hygiene', () => {
  it('hostile requests never move a ref', async () => {
    const before = refs(priv.dir);
    const publicBefore = refs(pub.dir);
    const hostile: Array<Promise<unknown>> = [];
    const post = { lane_id: 'auth', kind: 'work', title: 'sneaky' };
    hostile.push(tool('ask_post', post, { token: null }));
    hostile.push(tool('ask_post', post, { token: 'zzt_' + 'C'.repeat(43) }));
    hostile.push(tool('ask_post', post, { auth: 'Basic x' }));
    hostile.push(tool('ask_post', post, { host: 'evil.example:7433' }));
    hostile.push(tool('ask_post', post, { headers: { origin: 'http://evil.example' } }));
    hostile.push(
      tool('ask_post', undefined, {
        raw: JSON.stringify(post),
        headers: { 'content-type': 'text/plain' },
      }),
    );
    hostile.push(tool('ask_post', { ...post, actor: BOB }, { token: tok.alice }));
    hostile.push(tool('ask_post', { ...post, extra: 1 }));
    hostile.push(tool('ask_post', undefined, { raw: '['.repeat(30_000) }));
    hostile.push(tool('ask_post', undefined, { raw: new Uint8Array(9 * 1024 * 1024).fill(0x20) }));
    hostile.push(tool('role_grant', { grantee: BOB, role: 'owner' }, { token: tok.bob }));
    hostile.push(tool('lane_propose', { lane_id: '../../heads/main', title: 'x' }));
    hostile.push(tool('lane_propose', { lane_id: '_repo', title: 'x' }));
    hostile.push(
      send('/api/repos/local/public/tools/ask_post', {
        method: 'POST',
        body: { ...post, lane_id: '_repo' },
        token: null,
      }),
    );
    hostile.push(send('/api/repos/local/demo/tools/ask_post', { method: 'GET' }));
    hostile.push(send('/api/repos/local/demo/tools/ask_post', { method: 'PUT', body: post }));
    const results = (await Promise.all(hostile)) as Array<{ status: number }>;
    for (const r of results) expect(r.status).toBeGreaterThanOrEqual(400);
    expect(refs(priv.dir)).toBe(before);
    expect(refs(pub.dir)).toBe(publicBefore);
  });

  it('logs one line per request without tokens or bodies, and no error body has a stack', async () => {
    const before = logs.length;
    await tool(
      'ask_post',
      { lane_id: 'auth', kind: 'work', title: 'TOP-SECRET-TITLE' },
      { token: tok.alice },
    );
    await send(`/x/${tok.alice}`);
    const lines = logs.slice(before);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z local\/demo ask_post alice@example\.com 200 \d+\.\dms$/,
    );
    expect(lines[1]).toMatch(/ - GET \/x\/zzt_… - 404 /);
    for (const l of logs) {
      for (const t of Object.values(tok)) expect(l).not.toContain(t);
      expect(l).not.toContain('TOP-SECRET-TITLE');
    }
    expect(errorBodies.length).toBeGreaterThan(30);
    for (const b of errorBodies) {
      expect(b).not.toMatch(/\n\s+at |\.ts:\d+/);
      const parsed = JSON.parse(b);
      expect(Object.keys(parsed).every((k) => ['error', 'code', 'details'].includes(k))).toBe(true);
    }
  });

  it('stores only hashes, in a 0600 file', async () => {
    const { statSync, readFileSync } = await import('node:fs');
    expect(statSync(tokens.file).mode & 0o777).toBe(0o600);
    const text = readFileSync(tokens.file, 'utf8');
    for (const t of Object.values(tok)) expect(text).not.toContain(t.slice(4));
    const listed = await tokens.list();
    expect(listed.find((t) => t.actor === OWNER)).toMatchObject({ name: 'login' });
    expect(JSON.stringify(listed)).not.toMatch(/hash/);
  });
});
