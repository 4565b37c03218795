import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMcpServer } from '../../src/mcp/index.js';
import { registry } from '../../src/tools/index.js';
import { connectInMemory, connectStreams, newClient, toolListSnapshot } from '../mcp/helpers.js';
import { initialiseInProcess } from '../helpers/core-fixture.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';
import {
  callHttp,
  ensureBuilt,
  killAll,
  privateEnv,
  serve,
  spawnZz,
  zz,
  type Served,
} from './zz-process.js';

// The built `zz` against real git repositories: spawned processes, real sockets, real
// signals. The in-process transport tests prove the rules; these prove the wiring (daemon
// discovery, stored logins, ZZ_TOKEN, crash recovery, shutdown, stdio MCP) holds together.

const PERSON = 'owner@example.com';
const AGENT = 'owner@example.com[claude]';

const cleanups: Array<() => unknown> = [];
const clients: Client[] = [];

beforeAll(() => ensureBuilt(), 180_000);

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close().catch(() => {})));
  await killAll();
  for (const c of cleanups.splice(0).reverse()) await c();
});

function repo(): string {
  const r = makeRepo('zz-e2e-');
  cleanups.push(r.cleanup);
  return r.dir;
}

const daemonJson = (dir: string) => join(dir, '.git', 'zz', 'daemon.json');

async function ok(p: Promise<Awaited<ReturnType<typeof zz>>>) {
  const r = await p;
  expect(r.code, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`).toBe(0);
  return r;
}

/**
 * A checkout with `zz init` done (spawned when `spawnInit`, as in (a); else in this process, as
 * initialiseInProcess says why) and a daemon serving it.
 */
async function initAndServe(
  spawnInit = false,
): Promise<{ dir: string; env: NodeJS.ProcessEnv; d: Served }> {
  const dir = repo();
  const env = privateEnv();
  if (spawnInit) await ok(zz(dir, env, ['init']));
  else await initialiseInProcess(dir);
  const d = await serve(dir, env);
  return { dir, env, d };
}

/** A stdio MCP client on a spawned `zz mcp ARGS`. */
async function mcp(dir: string, env: NodeJS.ProcessEnv, args: string[] = []) {
  const child = spawnZz(dir, env, ['mcp', ...args]);
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const client = await connectStreams(child.stdout, child.stdin);
  clients.push(client);
  return { client, exited, stderr: () => stderr };
}

async function mcpCall(client: Client, name: string, args: Record<string, unknown>) {
  const r = await client.callTool({ name, arguments: args });
  expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
  return r.structuredContent as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
}

// A bound for a hang: each test spawns dozens of zz processes, 40-65 s each at CI load with
// helpers beside it (2 December), and (e) and (f) crossed the 90 s this used to be.
describe('zz end to end (spawned dist/cli/main.js)', { timeout: 240_000 }, () => {
  it('(a) init → serve → login → agent create → HTTP workflow; the CLI reads it through the daemon', async () => {
    const { dir, env, d } = await initAndServe(true);
    const [key] = d.repoKeys;
    expect(key).toMatch(/^local\/zz-e2e-/);
    const login = (await ok(zz(dir, env, ['login', '--json']))).json();
    expect(login).toMatchObject({
      actor: PERSON,
      token: expect.stringMatching(/^zzt_/),
      server: d.url,
      reused: false,
    });
    const agent = (await ok(zz(dir, env, ['agent', 'create', 'claude', '--json']))).json();
    expect(agent).toMatchObject({ actor: AGENT, token: expect.stringMatching(/^zzt_/) });
    const person = login.token as string;
    const bot = agent.token as string;
    // The stored credentials are private to the user.
    const creds = join(env.XDG_CONFIG_HOME!, 'zz', 'credentials.json');
    expect(readFileSync(creds, 'utf8')).toContain(bot);
    expect(statSync(creds).mode & 0o777).toBe(0o600);

    const call = (tool: string, args: Record<string, unknown>, token?: string) =>
      callHttp(d.url, key!, tool, args, token);

    const p = await call('lane_propose', { lane_id: 'e2e', title: 'End to end' }, person);
    expect(p.status, JSON.stringify(p.body)).toBe(200);
    expect(p.body.result.lane).toMatchObject({ lane_id: 'e2e', coordinators: [PERSON] });

    const post = await call(
      'ask_post',
      { lane_id: 'e2e', kind: 'work', title: 'Write the e2e test', idempotency_key: 'post-1' },
      person,
    );
    expect(post.status, JSON.stringify(post.body)).toBe(200);
    const askId = post.body.result.ask.ask_id as string;
    expect(post.body.result.ask).toMatchObject({ state: 'open', posted_by: PERSON });

    const claim = await call('ask_claim', { lane_id: 'e2e', ask_id: askId }, bot);
    expect(claim.status, JSON.stringify(claim.body)).toBe(200);
    expect(claim.body.result.ask).toMatchObject({ state: 'claimed', holder: AGENT });

    // Actor/token rules: a token acts only as its own actor, and a claim is the holder's.
    const asPerson = await call(
      'ask_post',
      { lane_id: 'e2e', kind: 'work', title: 'Impersonation', actor: PERSON },
      bot,
    );
    expect(asPerson.status).toBe(403);
    expect(asPerson.body).toMatchObject({
      code: 'forbidden',
      error: expect.stringContaining(PERSON),
    });
    const fromPerson = await call(
      'ask_post',
      { lane_id: 'e2e', kind: 'work', title: 'Impersonation', from: PERSON },
      bot,
    );
    expect(fromPerson.status).toBe(403);
    const answerAsPerson = await call(
      'ask_answer',
      { lane_id: 'e2e', ask_id: askId, outcome: 'complete', actor: PERSON },
      bot,
    );
    expect(answerAsPerson.status).toBe(403);
    const notHolder = await call(
      'ask_answer',
      { lane_id: 'e2e', ask_id: askId, outcome: 'complete' },
      person,
    );
    expect([403, 409]).toContain(notHolder.status);
    expect((await call('lane_get', { lane_id: 'e2e' })).status).toBe(401);
    expect((await call('lane_get', { lane_id: 'e2e' }, 'zzt_not-a-token')).status).toBe(401);

    const answer = await call(
      'ask_answer',
      { lane_id: 'e2e', ask_id: askId, outcome: 'complete', result: 'done' },
      bot,
    );
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);

    // The CLI finds the daemon (daemon.json) and uses the stored login token.
    const get = (await ok(zz(dir, env, ['lane', 'get', '--lane-id', 'e2e', '--json']))).json();
    expect(await d.waitForLog(/ lane_get owner@example\.com 200 /)).toContain(key);
    expect(get.asks).toHaveLength(1);
    expect(get.asks[0]).toMatchObject({
      ask_id: askId,
      state: 'answered',
      holder: AGENT,
      posted_by: PERSON,
      answer: { outcome: 'complete', result: 'done', answered_by: AGENT },
    });
    expect(get.history.map((h: { op: string; actor: string }) => [h.op, h.actor])).toEqual([
      ['lane_propose', PERSON],
      ['ask_post', PERSON],
      ['ask_claim', AGENT],
      ['ask_answer', AGENT],
    ]);
    expect(get).toEqual((await call('lane_get', { lane_id: 'e2e' }, person)).body.result);
    // ZZ_TOKEN picks the agent's identity for the same CLI, through the same daemon.
    const state = await ok(zz(dir, { ...env, ZZ_TOKEN: bot }, ['repo', 'state', '--json']));
    expect(state.json()).toMatchObject({ actor: AGENT, roles: { owner: false } });
    // And the daemon never logs a token.
    expect(d.log()).not.toMatch(/zzt_/);
  });

  it('(b) a second zz serve in the same checkout fails with one line naming the first', async () => {
    const { dir, env, d } = await initAndServe();
    mkdirSync(join(dir, 'sub'));
    for (const cwd of [dir, join(dir, 'sub')]) {
      const second = await zz(cwd, env, ['serve', '--port', '0'], { timeoutMs: 20_000 });
      expect(second.code).not.toBe(0);
      expect(second.code).not.toBeNull();
      expect(second.stdout).toBe('');
      const lines = second.stderr.trimEnd().split('\n');
      expect(lines, second.stderr).toHaveLength(1);
      expect(lines[0]).toMatch(/^zz: .*already running/);
      expect(lines[0]).toContain(d.url);
    }
    // The first is untouched and still owns daemon.json.
    expect((await fetch(`${d.url}/healthz`)).status).toBe(200);
    expect(JSON.parse(readFileSync(daemonJson(dir), 'utf8'))).toMatchObject({
      pid: d.child.pid,
      url: d.url,
    });
  });

  it('(c) kill -9 during a write storm loses no acknowledged write; restart, fsck, idempotent retries', async () => {
    const dir = repo();
    const env = privateEnv();
    await initialiseInProcess(dir);
    // A token minted without a daemon is good for any daemon of this checkout.
    const token = (await ok(zz(dir, env, ['login', '--json']))).json().token as string;
    const d = await serve(dir, env);
    const key = d.repoKeys[0]!;
    const lane = await callHttp(
      d.url,
      key,
      'lane_propose',
      { lane_id: 'storm', title: 'S' },
      token,
    );
    expect(lane.status).toBe(200);

    const args = (k: string) => ({ lane_id: 'storm', kind: 'work', title: k, idempotency_key: k });
    const acked = new Map<string, string>(); // key → ask_id
    const attempted: string[] = [];
    const unexpected: string[] = [];
    const CLIENTS = 4;
    let killed = false;
    let killNow!: () => void;
    const killSignal = new Promise<void>((r) => (killNow = r));
    const worker = async (c: number) => {
      for (let n = 0; n < 500; n++) {
        const k = `c${c}-${n}`;
        attempted.push(k);
        let reply;
        try {
          reply = await callHttp(d.url, key, 'ask_post', args(k), token);
        } catch {
          if (!killed) unexpected.push(`${k}: connection failed before the kill`);
          return; // the daemon is gone: this key got no answer
        }
        if (reply.status !== 200) {
          unexpected.push(`${k}: ${reply.status} ${JSON.stringify(reply.body)}`);
          return;
        }
        expect(reply.body.result.ask.title).toBe(k);
        acked.set(k, reply.body.result.ask.ask_id);
        if (acked.size >= 30) killNow();
      }
    };
    const storm = Promise.all(Array.from({ length: CLIENTS }, (_, c) => worker(c)));
    // The kill waits for its 30 acknowledgements, not a deadline that a loaded CI machine can
    // pass first; a storm that ended before them (every worker stopped on a failure) fails below.
    await Promise.race([killSignal, storm]);
    killed = true;
    d.child.kill('SIGKILL');
    expect(await d.exited).toEqual({ code: null, signal: 'SIGKILL' });
    await storm;
    expect(unexpected).toEqual([]);
    expect(acked.size).toBeGreaterThanOrEqual(30);
    const unanswered = attempted.filter((k) => !acked.has(k));
    expect(unanswered.length).toBeGreaterThan(0); // writes were in flight at the kill

    // The dead daemon's daemon.json is still there; it must not send the CLI (or a new daemon)
    // to a dead URL.
    expect(JSON.parse(readFileSync(daemonJson(dir), 'utf8'))).toMatchObject({ pid: d.child.pid });
    const offline = await ok(zz(dir, env, ['lane', 'list', '--json']));
    expect(offline.json().lanes.map((l: { lane_id: string }) => l.lane_id)).toContain('storm');
    expect(fsckProblems(dir)).toEqual([]);

    const d2 = await serve(dir, env);
    expect(JSON.parse(readFileSync(daemonJson(dir), 'utf8'))).toMatchObject({
      pid: d2.child.pid,
      url: d2.url,
    });
    const getAll = async () => {
      const r = await callHttp(
        d2.url,
        key,
        'lane_get',
        { lane_id: 'storm', include_history: false, asks_limit: 100_000 },
        token,
      );
      expect(r.status).toBe(200);
      return r.body.result.asks as Array<{ ask_id: string; title: string }>;
    };
    const before = await getAll();
    const byId = new Map(before.map((a) => [a.ask_id, a.title]));
    for (const [k, id] of acked) expect(byId.get(id), `acknowledged ${k} (${id})`).toBe(k);

    // Retrying every write with its key: the acknowledged ones (and any that landed unanswered)
    // replay; the rest are written now, once.
    for (const k of attempted) {
      const r = await callHttp(d2.url, key, 'ask_post', args(k), token);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      if (acked.has(k)) {
        expect(r.body.result.replayed).toBe(true);
        expect(r.body.result.ask.ask_id).toBe(acked.get(k));
      }
      const landed = before.find((a) => a.title === k);
      if (landed)
        expect(r.body.result).toMatchObject({ replayed: true, ask: { ask_id: landed.ask_id } });
    }
    const after = await getAll();
    expect(after.map((a) => a.title).sort()).toEqual([...attempted].sort());
    expect(new Set(after.map((a) => a.ask_id)).size).toBe(attempted.length);
    // A second round of retries changes nothing.
    const again = await callHttp(d2.url, key, 'ask_post', args(attempted.at(-1)!), token);
    expect(again.body.result.replayed).toBe(true);
    expect(await getAll()).toEqual(after);
    expect(fsckProblems(dir)).toEqual([]);
    console.log(
      `storm: ${CLIENTS} clients, ${acked.size} acknowledged, ${unanswered.length} unanswered at kill -9, ` +
        `${after.length - before.length} written on retry`,
    );
  });

  it('(d) SIGTERM drains in-flight requests, exits 0 and removes daemon.json', async () => {
    const dir = repo();
    const env = privateEnv();
    await initialiseInProcess(dir);
    const token = (await ok(zz(dir, env, ['login', '--json']))).json().token as string;
    const d = await serve(dir, env);
    const key = d.repoKeys[0]!;
    expect(existsSync(daemonJson(dir))).toBe(true);
    // A long-poll from the head of the log, which would otherwise hold the daemon for 30 s.
    const head = await callHttp(d.url, key, 'lane_events', { lane_id: '_repo' }, token);
    expect(head.status).toBe(200);
    const made = await callHttp(
      d.url,
      key,
      'lane_propose',
      { lane_id: 'drain', title: 'D' },
      token,
    );
    expect(made.status).toBe(200);
    const poll = callHttp(
      d.url,
      key,
      'lane_events',
      { lane_id: '_repo', wait_ms: 30_000, cursor: head.body.result.next_cursor },
      token,
    ).catch((e: Error) => ({ status: -1, body: e.message }));
    const posts = Array.from({ length: 8 }, (_, i) =>
      callHttp(
        d.url,
        key,
        'ask_post',
        { lane_id: 'drain', kind: 'work', title: `drain-${i}`, idempotency_key: `drain-${i}` },
        token,
      ).catch((e: Error) => ({ status: -1, body: e.message })),
    );
    // Signal once the first write is answered, with the rest queued behind it.
    await Promise.race(posts);
    // Timed for the log line only: a daemon that does not stop fails by this test's timeout.
    const t0 = Date.now();
    d.child.kill('SIGTERM');
    const exit = await d.exited;
    const stopMs = Date.now() - t0;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(d.log()).toContain('stopping (finishing in-flight writes)');
    expect(existsSync(daemonJson(dir))).toBe(false);
    const replies = await Promise.all(posts);
    const pollReply = await poll;
    // Nothing a client sent got a 500; whatever was acknowledged is on disk.
    for (const r of [...replies, pollReply]) expect([200, 503, -1]).toContain(r.status);
    const okTitles = replies.flatMap((r, i) => (r.status === 200 ? [`drain-${i}`] : []));
    expect(okTitles.length).toBeGreaterThan(0);
    // daemon.json is gone, so this runs in-process on the repository itself.
    const lane = (await ok(zz(dir, env, ['lane', 'get', '--lane-id', 'drain', '--json']))).json();
    const titles = lane.asks.map((a: { title: string }) => a.title);
    for (const t of okTitles) expect(titles).toContain(t);
    expect(fsckProblems(dir)).toEqual([]);
    console.log(
      `SIGTERM: stopped in ${stopMs} ms; posts ${replies.map((r) => r.status).join(',')}; long-poll ${pollReply.status}`,
    );
  });

  it('(e) zz mcp over stdio: in-process, through a daemon with ZZ_TOKEN, --read-only, --toolsets', async () => {
    const dir = repo();
    const env = privateEnv();
    await initialiseInProcess(dir);

    const [full, ro, lanes] = await Promise.all([
      mcp(dir, env),
      mcp(dir, env, ['--read-only']),
      mcp(dir, env, ['--toolsets', 'lanes']),
    ]);
    // In-process: the same tool list as the server built in-process from the same registry
    // (local tools included, as `zz mcp` offers them).
    const { tools } = await full.client.listTools();
    const reference = await connectInMemory(
      createMcpServer({
        registry,
        local: true,
        context: () => {
          throw new Error('listing only');
        },
      }),
    );
    clients.push(reference);
    expect(toolListSnapshot(tools)).toEqual(toolListSnapshot((await reference.listTools()).tools));
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['lane_list', 'lane_propose', 'ask_post']));
    const list = await mcpCall(full.client, 'lane_list', {});
    expect(list.lanes.map((l: { lane_id: string }) => l.lane_id)).toEqual(['_repo']);
    const prop = await mcpCall(full.client, 'lane_propose', { lane_id: 'mcp', title: 'Via MCP' });
    expect(prop.lane).toMatchObject({ lane_id: 'mcp', created_by: PERSON, coordinators: [PERSON] });
    const bad = await full.client.callTool({ name: 'lane_get', arguments: { lane_id: 'nope' } });
    expect(bad.isError).toBe(true);
    expect(bad.structuredContent).toBeUndefined();

    // --read-only: writes are neither listed nor callable.
    const roNames = (await ro.client.listTools()).tools.map((t) => t.name);
    expect(roNames).toContain('lane_list');
    expect(roNames).toContain('lane_get');
    expect(roNames).not.toContain('ask_post');
    expect(roNames).not.toContain('lane_propose');
    await expect(
      ro.client.callTool({
        name: 'ask_post',
        arguments: { lane_id: 'mcp', kind: 'work', title: 'Sneaky' },
      }),
    ).rejects.toThrow(/ask_post/);
    expect((await mcpCall(ro.client, 'lane_get', { lane_id: 'mcp' })).asks).toEqual([]);

    // --toolsets lanes: no ask tools.
    const laneNames = (await lanes.client.listTools()).tools.map((t) => t.name);
    expect(laneNames.length).toBeGreaterThan(0);
    expect(laneNames.every((n) => n.startsWith('lane_'))).toBe(true);
    await expect(
      lanes.client.callTool({ name: 'ask_query_claimable', arguments: { lane_id: 'mcp' } }),
    ).rejects.toThrow(/ask_query_claimable/);

    // Closing stdin ends the server cleanly.
    for (const s of [full, ro, lanes]) {
      await s.client.close();
      expect(await s.exited, s.stderr()).toBe(0);
    }

    // With a daemon running: calls go through it, acting as ZZ_TOKEN's actor.
    const d = await serve(dir, env);
    const bot = (await ok(zz(dir, env, ['agent', 'create', 'claude', '--json']))).json().token;
    const viaDaemon = await mcp(dir, { ...env, ZZ_TOKEN: bot });
    const state = await mcpCall(viaDaemon.client, 'repo_state', {});
    expect(state.actor).toBe(AGENT);
    const lane = await mcpCall(viaDaemon.client, 'lane_propose', { lane_id: 'bot', title: 'Bot' });
    expect(lane.lane).toMatchObject({ created_by: AGENT, coordinators: [AGENT] });
    await d.waitForLog(/ lane_propose owner@example\.com\[claude\] 200 /);
    // Local tools run in the `zz mcp` process itself, but as the same actor as everything else.
    const head = sh(dir, 'rev-parse', 'HEAD');
    const ran = await mcpCall(viaDaemon.client, 'run_in_sandbox', {
      commit: 'main',
      command: ['git', 'rev-parse', 'HEAD'],
      actor: AGENT,
    });
    expect(ran).toMatchObject({ exit_code: 0, commit: head });
    expect(ran.stdout.trim()).toBe(head);
    const all = await mcpCall(viaDaemon.client, 'lane_list', {});
    expect(all.lanes.map((l: { lane_id: string }) => l.lane_id).sort()).toEqual([
      '_repo',
      'bot',
      'mcp',
    ]);
    // The token's rules hold over MCP too: acting as the person is refused, with a fix.
    const forged = await viaDaemon.client.callTool({
      name: 'ask_post',
      arguments: { lane_id: 'bot', kind: 'work', title: 'x', actor: PERSON },
    });
    expect(forged.isError).toBe(true);
    expect(JSON.stringify(forged.content)).toMatch(/forbidden/);
    await viaDaemon.client.close();
    expect(await viaDaemon.exited, viaDaemon.stderr()).toBe(0);
  });

  it('(f) parity: lane_get over HTTP, MCP (stdio and /mcp) and the CLI (in-process and daemon) is identical', async () => {
    const dir = repo();
    const env = privateEnv();
    await initialiseInProcess(dir);

    // Build a Lane with some history, in-process through a stdio MCP session.
    const w = await mcp(dir, env);
    await mcpCall(w.client, 'lane_propose', {
      lane_id: 'parity',
      title: 'Parity',
      description: 'Same read, every transport',
      ask_kinds: { review: 'member' },
    });
    const a = (await mcpCall(w.client, 'ask_post', { lane_id: 'parity', kind: 'work', title: 'A' }))
      .ask.ask_id;
    await mcpCall(w.client, 'ask_post', {
      lane_id: 'parity',
      kind: 'work',
      title: 'B',
      depends_on: [a],
      priority: 0,
      body: 'after A',
    });
    await mcpCall(w.client, 'ask_post', { lane_id: 'parity', kind: 'review', title: 'C' });
    await mcpCall(w.client, 'ask_claim', { lane_id: 'parity', ask_id: a });
    await mcpCall(w.client, 'ask_answer', {
      lane_id: 'parity',
      ask_id: a,
      outcome: 'deny',
      result: 'not now',
    });
    const args = { lane_id: 'parity' };
    const reads: Record<string, unknown> = {};
    reads['mcp stdio, in-process'] = await mcpCall(w.client, 'lane_get', args);
    await w.client.close();
    reads['cli call, in-process'] = (
      await ok(zz(dir, env, ['call', 'lane_get', '--args', JSON.stringify(args)]))
    ).json();

    const d = await serve(dir, env);
    const key = d.repoKeys[0]!;
    const token = (await ok(zz(dir, env, ['login', '--json']))).json().token as string;
    const http = await callHttp(d.url, key, 'lane_get', args, token);
    expect(http.status).toBe(200);
    reads['http'] = http.body.result;
    reads['cli call, daemon'] = (
      await ok(zz(dir, env, ['call', 'lane_get', '--args', JSON.stringify(args)]))
    ).json();
    await d.waitForLog(/ lane_get owner@example\.com 200 .*\n?/);
    const viaDaemon = await mcp(dir, env);
    reads['mcp stdio, daemon'] = await mcpCall(viaDaemon.client, 'lane_get', args);
    const remote = newClient();
    await remote.connect(
      new StreamableHTTPClientTransport(new URL(`${d.url}/api/repos/${key}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${token}` } },
      }),
    );
    clients.push(remote);
    reads['mcp http, daemon'] = await mcpCall(remote, 'lane_get', args);
    expect(d.log().match(/ lane_get owner@example\.com 200 /g)?.length).toBeGreaterThanOrEqual(3);

    const baseline = reads['http'] as { asks: unknown[]; history: unknown[] };
    expect(baseline.asks).toHaveLength(3);
    expect(baseline.history).toHaveLength(6);
    const text = JSON.stringify(baseline);
    for (const [how, r] of Object.entries(reads)) {
      expect(r, how).toStrictEqual(baseline);
      expect(JSON.stringify(r), how).toBe(text); // same keys in the same order
    }
  });
});
