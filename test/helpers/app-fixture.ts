import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, expect } from 'vitest';
import { z } from 'zod';
import { initRepo, ZzRepo } from '../../src/core/index.js';
import { TokenStore } from '../../src/core/token-store.js';
import { createApp, type App } from '../../src/http/index.js';
import { ALL_TOOLS, defineTool, READ, Registry, registry } from '../../src/tools/index.js';
import { makeRepo } from './temp-repo.js';

// The daemon's routes in-process (app.fetch, no socket) over one real repository with its own
// token store: the setup the HTTP-level tests of a feature share.

export const APP_HOST = '127.0.0.1:7433';

export interface ToolReply {
  status: number;
  json: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

export interface AppFixture {
  dir: string;
  repo: ZzRepo;
  tokens: TokenStore;
  app: App;
  /** Every line the app logged. */
  logs: string[];
  /** A bearer token for `actor`. */
  token(actor: string): Promise<string>;
  /** POSTs a tool call with `token`; the reply's JSON as the route sent it. */
  tool(name: string, body: unknown, token: string): Promise<ToolReply>;
  /** Flushes the token store, closes the repo and removes the checkout. */
  close(): Promise<void>;
}

export async function appFixture(key: string, owner = 'owner@example.com'): Promise<AppFixture> {
  const { dir, cleanup } = makeRepo();
  const repo = await ZzRepo.open(dir, { key });
  await initRepo(repo, { owner, default_branch: 'main' });
  const tokens = new TokenStore(repo.git!.gitdir);
  const logs: string[] = [];
  const app = createApp({
    repos: new Map([[repo.key, repo]]),
    tokens,
    registry,
    host: APP_HOST,
    log: (l) => logs.push(l),
  });
  return {
    dir,
    repo,
    tokens,
    app,
    logs,
    token: async (actor) => (await tokens.create(actor, 'login')).token,
    async tool(name, body, token) {
      const res = await app.fetch(
        new Request(`http://${APP_HOST}/api/repos/${key}/tools/${name}`, {
          method: 'POST',
          headers: {
            host: APP_HOST,
            authorization: `Bearer ${token}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify(body),
        }),
      );
      return { status: res.status, json: (await res.json()) as ToolReply['json'] };
    },
    async close() {
      await tokens.flush();
      repo.close();
      cleanup();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// The routes testbed of app.test.ts: a private repository (local/demo, Lane `auth`) and a public
// one (local/public) behind one app, an app with test-only tools beside it, owner, alice and bob
// tokens, and every log line and error body kept for the hygiene checks. Exported as live
// bindings, set by the hooks testbed() registers.

export const HOST = APP_HOST;
export const OWNER = 'owner@example.com';
export const ALICE = 'alice@example.com';
export const BOB = 'bob@example.com';

// Test-only tools: one that is local, one whose handler has a bug.
export const extraTools = [
  defineTool({
    name: 'test_local_tool',
    summary: 'A local tool (tests)',
    toolset: 'local',
    local: true,
    annotations: READ,
    input: z.strictObject({}),
    output: z.strictObject({}),
    handler: async () => ({}),
  }),
  defineTool({
    name: 'test_buggy_tool',
    summary: 'Throws a TypeError (tests)',
    toolset: 'admin',
    annotations: READ,
    input: z.strictObject({}),
    output: z.strictObject({}),
    handler: async () => {
      throw new TypeError('secret internals at /home/x/src/thing.ts:12');
    },
  }),
];

export let priv: { repo: ZzRepo; dir: string; cleanup: () => void };
export let pub: { repo: ZzRepo; dir: string; cleanup: () => void };
export let tokens: TokenStore;
export let app: App;
export let extraApp: App;
export const logs: string[] = [];
export const errorBodies: string[] = [];
export const tok: Record<string, string> = {};

export function refs(dir: string): string {
  return execFileSync('git', ['for-each-ref', 'refs/zz'], { cwd: dir, encoding: 'utf8' });
}

export interface Call {
  method?: string;
  token?: string | null;
  auth?: string;
  body?: unknown;
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  host?: string;
  on?: App;
}

export async function send(path: string, c: Call = {}) {
  const headers: Record<string, string> = { host: c.host ?? HOST, ...c.headers };
  if (c.auth !== undefined) headers.authorization = c.auth;
  else if (c.token !== null) headers.authorization = `Bearer ${c.token ?? tok.owner}`;
  let body: string | Uint8Array | undefined = c.raw;
  if (c.body !== undefined) body = JSON.stringify(c.body);
  // A string body would otherwise be sent as text/plain.
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await (c.on ?? app).fetch(
    new Request(`http://${HOST}${path}`, {
      method: c.method ?? (body === undefined ? 'GET' : 'POST'),
      headers,
      body: body ?? null,
    }),
  );
  const text = await res.text();
  if (res.status >= 400) errorBodies.push(text);
  let json: any = null; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, json, text, headers: res.headers };
}

export const tool = (name: string, body: unknown, c: Call = {}) =>
  send(`/api/repos/local/demo/tools/${name}`, { method: 'POST', ...c, body });

/** Call once at the top of the file: sets the testbed up before its tests, removes it after. */
export function testbed(): void {
  beforeAll(async () => {
    const a = makeRepo();
    const repoA = await ZzRepo.open(a.dir, { key: 'local/demo' });
    await initRepo(repoA, { owner: OWNER, default_branch: 'main' });
    priv = { repo: repoA, dir: a.dir, cleanup: a.cleanup };
    const b = makeRepo();
    const repoB = await ZzRepo.open(b.dir, { key: 'local/public' });
    await initRepo(repoB, { owner: OWNER, default_branch: 'main', visibility: 'public' });
    pub = { repo: repoB, dir: b.dir, cleanup: b.cleanup };
    tokens = new TokenStore(repoA.git!.gitdir);
    tok.owner = (await tokens.create(OWNER, 'login')).token;
    tok.alice = (await tokens.create(ALICE, 'login')).token;
    tok.bob = (await tokens.create(BOB, 'login')).token;
    const repos = new Map([
      [repoA.key, repoA],
      [repoB.key, repoB],
    ]);
    app = createApp({ repos, tokens, registry, host: HOST, log: (l) => logs.push(l) });
    extraApp = createApp({
      repos,
      tokens,
      registry: new Registry([...ALL_TOOLS, ...extraTools]),
      host: HOST,
      log: (l) => logs.push(l),
    });
    const r = await tool('lane_propose', { lane_id: 'auth', title: 'Auth rework' });
    expect(r.status).toBe(200);
  });

  afterAll(async () => {
    await tokens.flush();
    priv.repo.close();
    pub.repo.close();
    priv.cleanup();
    pub.cleanup();
  });
}
