import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ZzRepo } from '../../src/core/index.js';
import { MAX_IN_FLIGHT, serveStdio } from '../../src/mcp/index.js';
import { defineTool, READ, Registry } from '../../src/tools/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { initializeRequest, spawnZzMcp } from './helpers.js';

// `zz mcp`'s bound on requests in flight (MAX_IN_FLIGHT): a cancellation, a ping, must not wait
// behind a request held for a slot; a cancelled call keeps its slot until its handler ends; and
// once stdin has ended, a client that no longer reads stdout does not keep zz running.

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

type Message = { id?: number | string | null; result?: unknown; error?: unknown };

/** Lines written to `out`, parsed, as they come; `next(pred)` waits for the first that fits. */
function reader(out: NodeJS.ReadableStream) {
  const seen: Message[] = [];
  let rest = '';
  let wake: (() => void) | null = null;
  out.on('data', (c: Buffer) => {
    const parts = (rest + c.toString('utf8')).split('\n');
    rest = parts.pop()!;
    for (const p of parts) if (p.trim()) seen.push(JSON.parse(p) as Message);
    wake?.();
  });
  const next = async (pred: (m: Message) => boolean, timeoutMs: number, what: string) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const hit = seen.find(pred);
      if (hit) return hit;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no ${what} within ${timeoutMs} ms`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        wake = () => {
          clearTimeout(t);
          r();
        };
      });
    }
  };
  return { seen, next };
}

const line = (m: unknown) => JSON.stringify(m) + '\n';
const call = (id: number, name: string, args: Record<string, unknown> = {}) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name, arguments: args },
});
const cancel = (id: number) => ({
  jsonrpc: '2.0',
  method: 'notifications/cancelled',
  params: { requestId: id, reason: 'test' },
});
const OWNER = 'owner@example.com';
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };

describe('zz mcp: requests in flight', { timeout: 180_000 }, () => {
  it('a cancellation and a ping behind a request held for a slot go at once', async () => {
    const r = makeRepo();
    const env = cliEnv();
    expect((await zz(r.dir, env, 'init')).code).toBe(0);
    const child = spawnZzMcp(r.dir, env);
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const out = reader(child.stdout);
    child.stdin.write(line(initializeRequest(1)) + line(initialized));
    await out.next((m) => m.id === 1, 60_000, 'initialize answer');
    // The cursor past the events `zz init` made.
    child.stdin.write(line(call(2, 'lane_events')));
    const head = (await out.next((m) => m.id === 2, 60_000, 'lane_events answer')) as {
      result: { structuredContent: { next_cursor: string } };
    };
    const cursor = head.result.structuredContent.next_cursor;
    // Every slot taken by a long poll (lane_events waits up to 60 s for an event; none comes),
    // then a request that must wait for a slot, then a ping and a cancellation behind it.
    const polls = Array.from({ length: MAX_IN_FLIGHT }, (_, i) => 100 + i);
    child.stdin.write(
      polls.map((id) => line(call(id, 'lane_events', { cursor, wait_ms: 60_000 }))).join(''),
    );
    child.stdin.write(line({ jsonrpc: '2.0', id: 200, method: 'tools/list' }));
    child.stdin.write(line({ jsonrpc: '2.0', id: 300, method: 'ping' }));
    // Held back a moment, so that the first poll is surely running when it comes.
    await new Promise((res) => setTimeout(res, 1000));
    child.stdin.write(line(cancel(100)));
    // Before, both waited behind request 200 until a poll ended on its own, 60 s on.
    const t0 = Date.now();
    expect(await out.next((m) => m.id === 300, 30_000, 'ping answer')).toMatchObject({
      result: {},
    });
    // The cancelled poll ends at once, and its slot goes to request 200.
    expect(
      await out.next((m) => m.id === 200, 30_000, `tools/list answer; stderr: ${stderr}`),
    ).toHaveProperty('result.tools');
    expect(Date.now() - t0).toBeLessThan(30_000);
    // The cancelled call got no answer, and the others are still waiting.
    expect(out.seen.filter((m) => typeof m.id === 'number' && m.id >= 100 && m.id < 200)).toEqual(
      [],
    );
  });

  it('a cancelled call keeps its slot until its handler ends: cancelling does not run more than MAX_IN_FLIGHT', async () => {
    // A tool that ignores the abort (as a call stuck in I/O would) and counts how many run.
    let running = 0;
    let most = 0;
    let letGo!: () => void;
    const gate = new Promise<void>((res) => (letGo = res));
    const stubborn = defineTool({
      name: 'stubborn',
      summary: 'Runs until the test lets it go',
      toolset: 'local',
      local: true,
      annotations: READ,
      input: z.strictObject({}),
      output: z.strictObject({}),
      handler: async () => {
        most = Math.max(most, ++running);
        await gate;
        running--;
        return {};
      },
    });
    const toServer = new PassThrough();
    const fromServer = new PassThrough();
    const out = reader(fromServer);
    const handle = serveStdio({
      registry: new Registry([stubborn]),
      context: () => ({ repo: null as unknown as ZzRepo, caller: { actor: OWNER }, local: true }),
      stdin: toServer,
      stdout: fromServer,
    });
    toServer.write(line(initializeRequest(1)) + line(initialized));
    await out.next((m) => m.id === 1, 10_000, 'initialize answer');
    const first = Array.from({ length: MAX_IN_FLIGHT }, (_, i) => 2 + i);
    // Fewer than MAX_HELD_LINES: the ping behind them is read at once.
    const second = first.slice(0, 32).map((id) => id + MAX_IN_FLIGHT);
    toServer.write(first.map((id) => line(call(id, 'stubborn'))).join(''));
    for (let i = 0; running < MAX_IN_FLIGHT && i < 200; i++) {
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(running).toBe(MAX_IN_FLIGHT);
    // Cancel them all (the handlers go on: they ignore it), and ask for as many again, then a
    // ping: once it is answered, everything before it has been read and every call let go has
    // started (a handler starts within a microtask of its request being read).
    toServer.write(first.map((id) => line(cancel(id))).join(''));
    toServer.write(second.map((id) => line(call(id, 'stubborn'))).join(''));
    toServer.write(line({ jsonrpc: '2.0', id: 999, method: 'ping' }));
    await out.next((m) => m.id === 999, 10_000, 'ping answer');
    await new Promise((res) => setTimeout(res, 200));
    // Before, each cancellation freed a slot at once: 96 ran.
    expect(most).toBe(MAX_IN_FLIGHT);
    // Once the first handlers end, the second batch runs (and, the gate open, ends).
    letGo();
    for (const id of second) await out.next((m) => m.id === id, 10_000, `answer ${id}`);
    expect(most).toBe(MAX_IN_FLIGHT);
    expect(out.seen.filter((m) => typeof m.id === 'number' && first.includes(m.id))).toEqual([]);
    toServer.end();
    await handle.closed;
  });

  it('stdin closed by a client that no longer reads stdout: zz gives up after UNREAD_TIMEOUT_MS (30 s) and exits', async () => {
    const r = makeRepo();
    const child = spawnZzMcp(r.dir, cliEnv());
    children.push(child);
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    // 100 requests for the ~50 KB tool list (5 KB, read at once): 5 MB of answers that fill the
    // pipe and the slots, and nobody reads them.
    child.stdin.end(
      line(initializeRequest(1)) +
        line(initialized) +
        Array.from({ length: 100 }, (_, i) =>
          line({ jsonrpc: '2.0', id: 2 + i, method: 'tools/list' }),
        ).join(''),
    );
    const t0 = Date.now();
    // Before, zz waited for stdout for DRAIN_TIMEOUT_MS (31 min), then for good in main.ts.
    const code = await Promise.race([
      exited,
      new Promise((res) => setTimeout(() => res('still running after 120 s'), 120_000)),
    ]);
    expect(code, stderr.slice(-2000)).toBe(0);
    expect(stderr).toMatch(
      /stdin closed and stdout took nothing for 30 s: dropped \d+ bytes of answers, gave up on \d+ calls not answered/,
    );
    // The bound, not an exit at once: a reader busy for a few seconds keeps its answers.
    expect(Date.now() - t0).toBeGreaterThan(25_000);
  });
});
