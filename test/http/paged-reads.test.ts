import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { jsonClient, type HttpReply, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { newClient, textOf } from '../mcp/helpers.js';

// ask_query_claimable (and lane_list) page by a keyset cursor over its order (priority, age, id), from its one
// definition, through every front end of a real daemon on 127.0.0.1: HTTP, MCP over Streamable
// HTTP and the CLI (`zz ask query-claimable --cursor`). Before it, the tool answered at most
// 500 Asks with no way on: a Lane with more claimable work could never be listed whole.

const OWNER = 'owner@example.com';
const READER = 'reader@example.com';
const WORKER = 'worker@example.com';
let t: TestDaemon;
let http: JsonClient;
const tok = { owner: '', reader: '', worker: '' };

type Ask = { ask_id: string; priority: number; posted_at: string; title: string };

beforeAll(async () => {
  t = await startTestDaemon({ prefix: 'zz-claimable-', daemon: { mcpHandler: undefined } });
  tok.owner = await t.token(OWNER);
  tok.reader = await t.token(READER);
  tok.worker = await t.token(WORKER);
  http = jsonClient(t.url);
});
afterAll(async () => {
  http.close();
  await t.close();
});

const tool = (name: string) => `/api/repos/${t.key}/tools/${name}`;

// A tool's result, as the JSON client types it (any): its shape is the tool's output schema.
async function ok(p: Promise<HttpReply>): Promise<HttpReply['json']> {
  const r = await p;
  expect(r.status, r.text).toBe(200);
  return r.json.result;
}

const as = (token: string, name: string, body: unknown) => ok(http.post(tool(name), body, token));

/** Posts `n` work Asks, ten at a time concurrently (group commits give some the same time). */
async function postMany(lane: string, n: number, prefix: string): Promise<Ask[]> {
  const out: Ask[] = [];
  for (let i = 0; i < n; i += 10) {
    const batch = Array.from({ length: Math.min(10, n - i) }, (_, j) =>
      as(tok.owner, 'ask_post', {
        lane_id: lane,
        kind: 'work',
        title: `${prefix}${i + j}`,
        priority: (i + j) % 3,
      }),
    );
    out.push(...(await Promise.all(batch)).map((r) => r.ask as Ask));
  }
  return out;
}

const keyOf = (a: Ask) => [a.priority, a.posted_at, a.ask_id] as const;
function before(x: Ask, y: Ask): boolean {
  const [a, b] = [keyOf(x), keyOf(y)];
  for (let i = 0; i < 3; i++) if (a[i]! !== b[i]!) return a[i]! < b[i]!;
  return false;
}

describe('ask_query_claimable paging', () => {
  it('over HTTP: with claims, answers and posts between pages, each Ask that stays claimable is listed exactly once, in order', async () => {
    await as(tok.owner, 'lane_propose', {
      lane_id: 'q',
      title: 'Q',
      ask_kinds: { secret: 'coordinator' },
    });
    const work = await postMany('q', 36, 't');
    // Neither is the reader's to claim: out of scope, and blocked by an open Ask.
    const secret = await as(tok.owner, 'ask_post', { lane_id: 'q', kind: 'secret', title: 's' });
    const blocked = await as(tok.owner, 'ask_post', {
      lane_id: 'q',
      kind: 'work',
      title: 'blocked',
      depends_on: [work[0]!.ask_id],
    });
    const hidden = new Set([secret.ask.ask_id, blocked.ask.ask_id]);

    const seen: Ask[] = [];
    const taken = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    let firstTotal = -1;
    do {
      const r = await as(tok.reader, 'ask_query_claimable', {
        lane_id: 'q',
        limit: 4,
        ...(cursor ? { cursor } : {}),
      });
      if (pages === 0) firstTotal = r.total;
      expect(r.asks.length).toBeLessThanOrEqual(4);
      seen.push(...(r.asks as Ask[]));
      cursor = r.next_cursor ?? undefined;
      // Between pages, real writes: the worker claims an Ask already listed and one not yet
      // listed, and answers the first; the owner posts an urgent Ask (it sorts before the
      // cursor) and a low one (after it).
      const listed = seen.map((a) => a.ask_id).filter((id) => !taken.has(id));
      const unlisted = work
        .map((a) => a.ask_id)
        .filter((id) => !taken.has(id) && !seen.some((a) => a.ask_id === id));
      for (const id of [listed[0], unlisted[unlisted.length - 1]]) {
        if (!id) continue;
        const c = await as(tok.worker, 'ask_claim', { lane_id: 'q', ask_id: id });
        taken.add(id);
        if (id === listed[0]) {
          await as(tok.worker, 'ask_answer', {
            lane_id: 'q',
            ask_id: id,
            outcome: 'deny',
            result: 'not now',
            expected_revision: c.revision,
          });
        }
      }
      await as(tok.owner, 'ask_post', { lane_id: 'q', kind: 'work', title: 'urgent', priority: 0 });
      await as(tok.owner, 'ask_post', { lane_id: 'q', kind: 'work', title: 'low', priority: 4 });
      pages++;
    } while (cursor && pages < 100);

    expect(cursor).toBeUndefined();
    expect(firstTotal).toBe(36);
    const ids = seen.map((a) => a.ask_id);
    expect(new Set(ids).size).toBe(ids.length);
    // Every original Ask nobody claimed was claimable throughout: each was listed.
    const stayed = work.filter((a) => !taken.has(a.ask_id)).map((a) => a.ask_id);
    expect(stayed.length).toBeGreaterThan(5);
    expect(stayed.filter((id) => !ids.includes(id))).toEqual([]);
    expect(ids.filter((id) => hidden.has(id))).toEqual([]);
    // One walk in claim order: each Ask after the one before it (a repeat would be equal).
    for (let i = 1; i < seen.length; i++) expect(before(seen[i - 1]!, seen[i]!)).toBe(true);
    // total counts what may be claimed now, over every page.
    const all = await as(tok.reader, 'ask_query_claimable', { lane_id: 'q', limit: 500 });
    expect(all.total).toBe(all.asks.length);
    expect(all.next_cursor).toBeNull();
    // The owner coordinates: the secret Ask is claimable for them, and counted.
    const owners = await as(tok.owner, 'ask_query_claimable', { lane_id: 'q', limit: 1 });
    expect(owners.total).toBe(all.total + 1);
    expect(owners.next_cursor).toEqual(expect.any(String));
  });

  it('over HTTP: a cursor of another Lane, another listing, or forged is a 400 naming cursor', async () => {
    await as(tok.owner, 'lane_propose', { lane_id: 'r1', title: 'R1' });
    await as(tok.owner, 'lane_propose', { lane_id: 'r2', title: 'R2' });
    await postMany('r1', 3, 'a');
    await postMany('r2', 3, 'b');
    const page = await as(tok.reader, 'ask_query_claimable', { lane_id: 'r1', limit: 1 });
    const listPage = await as(tok.reader, 'ask_list', { lane_id: 'r1', limit: 1 });
    const b64 = (x: unknown) => Buffer.from(JSON.stringify(x)).toString('base64url');
    const refuse = async (cursor: unknown, why: RegExp) => {
      const r = await http.post(tool('ask_query_claimable'), { lane_id: 'r2', cursor }, tok.reader);
      expect(r.status, r.text).toBe(400);
      expect(r.json.code).toBe('invalid_argument');
      expect(r.json.error).toMatch(why);
    };
    await refuse(page.next_cursor, /^cursor is from a listing of another Lane, not of r2/);
    await refuse(
      listPage.next_cursor,
      /^cursor is a cursor of another listing \(it is a ask_list cursor\)/,
    );
    await refuse('garbage!', /^cursor is not a cursor this server issued/);
    await refuse(
      b64(['ask_query_claimable', 1, ['r2', 'high', 'x', 'y']]),
      /^cursor is not a cursor/,
    );
    await refuse(b64(['ask_query_claimable', 2, ['r2', 1, 'x', 'y']]), /another version of zz/);
    await refuse('A'.repeat(3000), /^cursor: /);
    await refuse(42, /^cursor: /);
    // Its own Lane takes it, and continues after the Ask it ended on.
    const next = await as(tok.reader, 'ask_query_claimable', {
      lane_id: 'r1',
      cursor: page.next_cursor,
    });
    expect(next.asks.map((a: Ask) => a.ask_id)).not.toContain(page.asks[0].ask_id);
    expect(next.asks).toHaveLength(2);
    expect(next.next_cursor).toBeNull();
  });

  it('over MCP: the schema lists cursor, a walk with it lists every Ask once, a bad one says what to fix', async () => {
    await as(tok.owner, 'lane_propose', { lane_id: 'm', title: 'M' });
    const posted = await postMany('m', 7, 'm');
    const mcp = newClient();
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/api/repos/${t.key}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tok.reader}` } },
      }),
    );
    try {
      const listed = (await mcp.listTools()).tools.find((x) => x.name === 'ask_query_claimable')!;
      expect(listed.inputSchema.properties!.cursor).toMatchObject({ type: 'string' });
      expect(listed.outputSchema!.required).toEqual(
        expect.arrayContaining(['asks', 'next_cursor', 'total']),
      );
      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const r = await mcp.callTool({
          name: 'ask_query_claimable',
          arguments: { lane_id: 'm', limit: 3, ...(cursor ? { cursor } : {}) },
        });
        expect(r.isError).toBeFalsy();
        const out = r.structuredContent as {
          asks: Ask[];
          next_cursor: string | null;
          total: number;
        };
        expect(out.total).toBe(7);
        ids.push(...out.asks.map((a) => a.ask_id));
        cursor = out.next_cursor;
      } while (cursor);
      expect(ids.sort()).toEqual(posted.map((a) => a.ask_id).sort());
      const bad = await mcp.callTool({
        name: 'ask_query_claimable',
        arguments: { lane_id: 'm', cursor: 'garbage!' },
      });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/cursor is not a cursor this server issued/);
    } finally {
      await mcp.close();
    }
  });

  it('from the CLI: --cursor through the daemon, and the next-page hint names it', async () => {
    await as(tok.owner, 'lane_propose', { lane_id: 'c', title: 'C' });
    const posted = await postMany('c', 3, 'c');
    const env = { ...cliEnv(), ZZ_TOKEN: tok.reader };
    const cmd = ['ask', 'query-claimable', '--lane-id', 'c', '--limit', '2'];
    const first = await zz(t.dir, env, ...cmd, '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(first.json()).toMatchObject({ total: 3, next_cursor: expect.any(String) });
    const text = await zz(t.dir, env, ...cmd);
    expect(text.stdout).toContain(
      `(more: pass --cursor ${first.json().next_cursor} for the next page)`,
    );
    const second = await zz(t.dir, env, ...cmd, '--cursor', first.json().next_cursor, '--json');
    expect(second.code, second.stderr).toBe(0);
    const ids = [...first.json().asks, ...second.json().asks].map((a: Ask) => a.ask_id);
    expect(ids.sort()).toEqual(posted.map((a) => a.ask_id).sort());
    expect(second.json().next_cursor).toBeNull();
    // Through the daemon (its daemon.json in the checkout), not in-process.
    expect(
      t.logs.filter((l) => /ask_query_claimable reader@example.com 200/.test(l)).length,
    ).toBeGreaterThan(2);
    const bad = await zz(t.dir, env, ...cmd, '--cursor', 'garbage!');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/cursor is not a cursor this server issued/);
  });
});

describe('lane_list paging', () => {
  it('over HTTP: pages Lanes by id with Lanes proposed between pages, each once; a bad cursor is a 400', async () => {
    const before = await as(tok.reader, 'lane_list', { limit: 1000 });
    const names = Array.from({ length: 25 }, (_, i) => `p-${String(i * 2).padStart(3, '0')}`);
    for (const lane_id of names) await as(tok.owner, 'lane_propose', { lane_id, title: lane_id });
    const first = await as(tok.reader, 'lane_list', {});
    expect(first.total).toBe(before.total + 25);
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await as(tok.reader, 'lane_list', { limit: 4, ...(cursor ? { cursor } : {}) });
      seen.push(...r.lanes.map((l: { lane_id: string }) => l.lane_id));
      cursor = r.next_cursor ?? undefined;
      // A Lane proposed between pages sorts among the others (odd numbers, between two).
      await as(tok.owner, 'lane_propose', {
        lane_id: `p-${String(pages * 2 + 1).padStart(3, '0')}`,
        title: 'between',
      });
      pages++;
    } while (cursor && pages < 100);
    expect(new Set(seen).size).toBe(seen.length);
    expect(names.filter((n) => !seen.includes(n))).toEqual([]);
    expect([...seen].sort()).toEqual(seen);
    // The default page is bounded: 100 of more than 100.
    for (let i = 0; i < 70; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          as(tok.owner, 'lane_propose', { lane_id: `z-${i + j}`, title: 'z' }),
        ),
      );
    }
    const all = await as(tok.reader, 'lane_list', { limit: 1000 });
    expect(all.lanes.length).toBe(all.total);
    expect(all.total).toBeGreaterThan(100);
    const dflt = await as(tok.reader, 'lane_list', {});
    expect(dflt.lanes).toHaveLength(100);
    expect(dflt.next_cursor).toEqual(expect.any(String));
    const b64 = (x: unknown) => Buffer.from(JSON.stringify(x)).toString('base64url');
    for (const [c, why] of [
      ['garbage!', /^cursor is not a cursor this server issued/],
      [b64(['lane_list', 1, '../etc']), /^cursor is not a cursor this server issued/],
      [dflt.next_cursor.replace(/^./, 'x'), /^cursor /],
      [(await as(tok.reader, 'ask_list', { limit: 1 })).next_cursor, /another listing/],
    ] as const) {
      const r = await http.post(tool('lane_list'), { cursor: c }, tok.reader);
      expect(r.status, r.text).toBe(400);
      expect(r.json.error).toMatch(why);
    }
  });
});
