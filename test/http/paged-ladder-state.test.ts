import { execFileSync } from 'node:child_process';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PAGE } from '../../src/schema/limits.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { jsonClient, type HttpReply, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { newClient, textOf } from '../mcp/helpers.js';

// DESIGN §4: every read that can grow without bound pages. ladder_tree answers the whole
// Ladder when it fits PAGE.maxBytes (4 MiB) and pages past it by a keyset cursor (the last path,
// in tree order); repo_state names the first page of Lanes with a lane_list cursor for the rest;
// lists of unreadable and quarantined refs name the first PAGE.maxListedProblems and count the
// rest. All of it through a real daemon on 127.0.0.1: HTTP, MCP over Streamable HTTP, the CLI.

const OWNER = 'owner@example.com';
const READER = 'reader@example.com';
let t: TestDaemon;
let http: JsonClient;
const tok = { owner: '', reader: '' };
let ask = '';

type TreeRung = { path: string; kind: string; title: string; summary: string; stale: boolean };

beforeAll(async () => {
  t = await startTestDaemon({ prefix: 'zz-paged-ladder-', daemon: { mcpHandler: undefined } });
  tok.owner = await t.token(OWNER);
  tok.reader = await t.token(READER);
  http = jsonClient(t.url);
  await as(tok.owner, 'lane_propose', { lane_id: 'lad', title: 'Ladder' });
  const posted = await as(tok.owner, 'ask_post', {
    lane_id: 'lad',
    kind: 'ladder_update',
    title: 'write rungs',
  });
  ask = posted.ask.ask_id;
  await as(tok.owner, 'ask_claim', { lane_id: 'lad', ask_id: ask, lease_seconds: 86_400 });
});
afterAll(async () => {
  http.close();
  await t.close();
});

const tool = (name: string) => `/api/repos/${t.key}/tools/${name}`;

async function ok(p: Promise<HttpReply>): Promise<HttpReply['json']> {
  const r = await p;
  expect(r.status, r.text.slice(0, 500)).toBe(200);
  return r.json.result;
}

const as = (token: string, name: string, body: unknown) => ok(http.post(tool(name), body, token));

/** Writes topic rungs (no commit to cite), at most 200 a call. */
async function writeRungs(paths: string[], summary = (p: string) => `about ${p}`): Promise<void> {
  for (let i = 0; i < paths.length; i += 200) {
    await as(tok.owner, 'ladder_write_rung', {
      lane_id: 'lad',
      ask_id: ask,
      rungs: paths.slice(i, i + 200).map((path) => ({
        path,
        kind: 'topic',
        title: path.slice(0, 300),
        summary: summary(path),
      })),
    });
  }
}

/** Tree order, worked out here independently: by path segment, each by code unit. */
function treeBefore(a: string, b: string): boolean {
  const [x, y] = [a.split('/'), b.split('/')];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i]! < y[i]!;
  }
  return x.length < y.length;
}

/** Every page of ladder_tree with `args`, calling `between` after each. */
async function walk(
  args: Record<string, unknown>,
  between: (page: number, r: { rungs: TreeRung[] }) => Promise<void> = async () => {},
): Promise<{ pages: Array<{ rungs: TreeRung[]; total: number; next_cursor: string | null }> }> {
  const pages = [];
  let cursor: string | undefined;
  do {
    const r = await as(tok.reader, 'ladder_tree', { ...args, ...(cursor ? { cursor } : {}) });
    pages.push(r);
    cursor = r.next_cursor ?? undefined;
    await between(pages.length, r);
  } while (cursor && pages.length < 200);
  expect(cursor).toBeUndefined();
  return { pages };
}

describe('ladder_tree paging', () => {
  it('over HTTP: with rungs written between pages, each rung is listed once, in tree order, and none that was there is skipped', async () => {
    // Names that sort differently by code unit and by tree order: "t1/a" before "t1-x" before
    // "t10" in the tree, while '-' < '/' < '0' by code unit.
    const names: string[] = [];
    for (let i = 0; i < 12; i++) {
      names.push(`_topics/w/t${i}`, `_topics/w/t${i}/a`, `_topics/w/t${i}-x`);
    }
    await writeRungs(names);
    const seen: TreeRung[] = [];
    const late: string[] = [];
    const early: string[] = [];
    const { pages } = await walk({ under: '_topics/w', limit: 4 }, async (n, r) => {
      seen.push(...r.rungs);
      const last = r.rungs[r.rungs.length - 1]!.path;
      // One rung that sorts after the last shown (it must appear on a later page) and one that
      // sorts before it (already passed: it must not).
      const after = `${last}/z${n}`;
      const before = `_topics/w/a${n}`;
      await writeRungs([after, before]);
      late.push(after);
      early.push(before);
    });
    expect(pages[0]!.total).toBe(names.length);
    for (const p of pages) expect(p.rungs.length).toBeLessThanOrEqual(4);
    const paths = seen.map((r) => r.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(names.filter((p) => !paths.includes(p))).toEqual([]);
    // Written after its page, below the page's last rung: listed on a later page.
    expect(late.slice(0, -1).filter((p) => !paths.includes(p))).toEqual([]);
    expect(paths.filter((p) => early.includes(p))).toEqual([]);
    for (let i = 1; i < paths.length; i++) expect(treeBefore(paths[i - 1]!, paths[i]!)).toBe(true);
    expect(seen.every((r) => r.kind === 'topic' && r.stale === false)).toBe(true);
  });

  it('over HTTP: under is the rung and its subtree only; a cursor of another listing, or forged, is a 400 naming cursor', async () => {
    await writeRungs([
      '_topics/u/a',
      '_topics/u/a/b',
      '_topics/u/a/b/c',
      '_topics/u/a-b',
      '_topics/u/a0',
    ]);
    const one = await walk({ under: '_topics/u/a', limit: 1 });
    expect(one.pages.flatMap((p) => p.rungs.map((r) => r.path))).toEqual([
      '_topics/u/a',
      '_topics/u/a/b',
      '_topics/u/a/b/c',
    ]);
    expect(one.pages[0]!.total).toBe(3);
    // A path with no rung still lists what is below it.
    const below = await as(tok.reader, 'ladder_tree', { under: '_topics/u' });
    expect(below.rungs.map((r: TreeRung) => r.path)).toEqual([
      '_topics/u/a',
      '_topics/u/a/b',
      '_topics/u/a/b/c',
      '_topics/u/a-b',
      '_topics/u/a0',
    ]);
    expect(below.next_cursor).toBeNull();
    const none = await as(tok.reader, 'ladder_tree', { under: '_topics/nothing-here' });
    expect(none).toMatchObject({ rungs: [], total: 0, next_cursor: null });

    const first = await as(tok.reader, 'ladder_tree', { under: '_topics/u/a', limit: 1 });
    const whole = await as(tok.reader, 'ladder_tree', { limit: 1 });
    const lanes = await as(tok.reader, 'lane_list', { limit: 1 });
    const b64 = (x: unknown) => Buffer.from(JSON.stringify(x)).toString('base64url');
    const refuse = async (args: Record<string, unknown>, why: RegExp) => {
      const r = await http.post(tool('ladder_tree'), args, tok.reader);
      expect(r.status, r.text).toBe(400);
      expect(r.json.code).toBe('invalid_argument');
      expect(r.json.error).toMatch(why);
    };
    await refuse(
      { under: '_topics/u', cursor: first.next_cursor },
      /^cursor is from a listing under another path/,
    );
    await refuse({ cursor: first.next_cursor }, /^cursor is from a listing under another path/);
    await refuse(
      { under: '_topics/u', cursor: whole.next_cursor },
      /^cursor is from a listing of the whole Ladder/,
    );
    await refuse({ cursor: lanes.next_cursor }, /another listing \(it is a lane_list cursor\)/);
    await refuse({ cursor: 'garbage!' }, /^cursor is not a cursor this server issued/);
    await refuse({ cursor: b64(['ladder_tree', 1, [42, null]]) }, /^cursor is not a cursor/);
    await refuse({ cursor: b64(['ladder_tree', 2, ['a', null]]) }, /another version of zz/);
    await refuse({ cursor: 'A'.repeat(30_000) }, /^cursor: /);
    await refuse({ under: '../etc' }, /under/);
    await refuse({ limit: 0 }, /limit/);
    // Its own listing takes it.
    const next = await as(tok.reader, 'ladder_tree', {
      under: '_topics/u/a',
      limit: 1,
      cursor: first.next_cursor,
    });
    expect(next.rungs.map((r: TreeRung) => r.path)).toEqual(['_topics/u/a/b']);
  });

  it('over HTTP: the whole Ladder in one answer up to 4 MiB; past it, full pages of at most 4 MiB that together list every rung', async () => {
    const before = await as(tok.reader, 'ladder_tree', {});
    expect(before.next_cursor).toBeNull();
    expect(before.rungs).toHaveLength(before.total);
    // ~4.4 KB a rung: 1,200 of them are about 5 MiB of JSON.
    const big = Array.from({ length: 1200 }, (_, i) => `_topics/big/${String(i).padStart(4, '0')}`);
    const fill = 'x'.repeat(4000);
    await writeRungs(big, (p) => `${p} ${fill}`);
    const all: TreeRung[] = [];
    const { pages } = await walk({}, async (_n, r) => {
      all.push(...r.rungs);
    });
    expect(pages.length).toBeGreaterThan(1);
    const size = (r: TreeRung) => Buffer.byteLength(JSON.stringify(r));
    let at = 0;
    for (const p of pages) {
      const bytes = p.rungs.reduce((n, r) => n + size(r), 0);
      expect(bytes).toBeLessThanOrEqual(PAGE.maxBytes);
      // Full: the next rung would not have fit.
      if (p.next_cursor) {
        const next = all[at + p.rungs.length]!;
        expect(bytes + size(next)).toBeGreaterThan(PAGE.maxBytes);
      }
      at += p.rungs.length;
    }
    const paths = all.map((r) => r.path);
    expect(new Set(paths).size).toBe(paths.length);
    expect(paths.length).toBe(before.total + big.length);
    expect(big.filter((p) => !paths.includes(p))).toEqual([]);
    expect(pages.every((p) => p.total === paths.length)).toBe(true);
  });

  it('from the CLI: zz ladder tree pages with --cursor, --under and --limit through the daemon', async () => {
    const env = { ...cliEnv(), ZZ_TOKEN: tok.reader };
    const cmd = ['ladder', 'tree', '--under', '_topics/u/a', '--limit', '2'];
    const first = await zz(t.dir, env, ...cmd, '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(first.json()).toMatchObject({ total: 3, next_cursor: expect.any(String) });
    const text = await zz(t.dir, env, ...cmd);
    expect(text.stdout).toContain(
      `(more: pass --cursor ${first.json().next_cursor} for the next page)`,
    );
    const second = await zz(t.dir, env, ...cmd, '--cursor', first.json().next_cursor, '--json');
    expect(second.code, second.stderr).toBe(0);
    expect(second.json().rungs.map((r: TreeRung) => r.path)).toEqual(['_topics/u/a/b/c']);
    expect(second.json().next_cursor).toBeNull();
    expect(
      t.logs.filter((l) => /ladder_tree reader@example.com 200/.test(l)).length,
    ).toBeGreaterThan(1);
    const bad = await zz(t.dir, env, 'ladder', 'tree', '--cursor', 'garbage!');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/cursor is not a cursor this server issued/);
  });

  it('over MCP: the schema lists under, limit and cursor; a walk lists each rung once', async () => {
    const mcp = newClient();
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/api/repos/${t.key}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${tok.reader}` } },
      }),
    );
    try {
      const listed = (await mcp.listTools()).tools.find((x) => x.name === 'ladder_tree')!;
      expect(Object.keys(listed.inputSchema.properties!)).toEqual(['under', 'limit', 'cursor']);
      expect(listed.outputSchema!.required).toEqual(
        expect.arrayContaining(['rungs', 'next_cursor', 'total']),
      );
      const paths: string[] = [];
      let cursor: string | null = null;
      do {
        const r = await mcp.callTool({
          name: 'ladder_tree',
          arguments: { under: '_topics/w', limit: 7, ...(cursor ? { cursor } : {}) },
        });
        expect(r.isError, textOf(r)).toBeFalsy();
        const out = r.structuredContent as { rungs: TreeRung[]; next_cursor: string | null };
        paths.push(...out.rungs.map((x) => x.path));
        cursor = out.next_cursor;
      } while (cursor);
      const all = await as(tok.reader, 'ladder_tree', { under: '_topics/w' });
      expect(paths).toEqual(all.rungs.map((r: TreeRung) => r.path));
      const bad = await mcp.callTool({ name: 'ladder_tree', arguments: { cursor: 'garbage!' } });
      expect(bad.isError).toBe(true);
      expect(textOf(bad)).toMatch(/cursor is not a cursor this server issued/);
    } finally {
      await mcp.close();
    }
  });
});

describe('repo_state and the lists of bad refs are bounded', () => {
  it('repo_state names the first 100 Lanes; its lanes_next_cursor continues in lane_list, each Lane once', async () => {
    const before = await as(tok.owner, 'repo_state', {});
    for (let i = 0; i < 110; i += 10) {
      await Promise.all(
        Array.from({ length: 10 }, (_, j) =>
          as(tok.owner, 'lane_propose', {
            lane_id: `s-${String(i + j).padStart(3, '0')}`,
            title: 's',
          }),
        ),
      );
    }
    const total = before.lanes_total + 110;
    const s = await as(tok.owner, 'repo_state', {});
    expect(s.lanes).toHaveLength(PAGE.defaultLimit);
    expect(s.lanes_total).toBe(total);
    expect(s.lanes_next_cursor).toEqual(expect.any(String));
    const ids: string[] = s.lanes.map((l: { lane_id: string }) => l.lane_id);
    let cursor: string | null = s.lanes_next_cursor;
    while (cursor) {
      const r = await as(tok.reader, 'lane_list', { cursor });
      ids.push(...r.lanes.map((l: { lane_id: string }) => l.lane_id));
      cursor = r.next_cursor;
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toHaveLength(total);
    expect([...ids].sort()).toEqual(ids);
    // The owner proposed (so coordinates) every one of them, and _repo: named up to 100.
    const coordinates = ids.filter((id) => id === '_repo' || id.startsWith('s-') || id === 'lad');
    expect(s.roles.coordinator_of).toEqual(coordinates.slice(0, PAGE.defaultLimit));
    expect(s.roles.coordinator_of_more).toBe(coordinates.length - PAGE.defaultLimit);
    expect(s.roles.maintainer_of).toHaveLength(PAGE.defaultLimit);
    // The reader holds no role: nothing named, nothing more.
    const r = await as(tok.reader, 'repo_state', {});
    expect(r.roles).toMatchObject({ coordinator_of: [], coordinator_of_more: 0 });
    // The CLI says where the rest are.
    const env = { ...cliEnv(), ZZ_TOKEN: tok.reader };
    const text = await zz(t.dir, env, 'repo', 'state');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`(more Lanes: zz lane list --cursor ${s.lanes_next_cursor})`);
  });

  it('lane_list, repo_state, ask_list and lane_events name the first 50 unreadable Lane refs by ref and count the rest; repo_state does the same for quarantined refs', async () => {
    const n = PAGE.maxListedProblems + 3;
    const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: t.dir,
      input: 'not a lane',
      encoding: 'utf8',
    }).trim();
    const head = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: t.dir,
      encoding: 'utf8',
    }).trim();
    // Refs whose name is no lane id (cheap to refuse) and refs at a blob (each a failed read),
    // named in ref order: the upper-case names sort first.
    const badNames = Array.from({ length: n - 5 }, (_, i) => `BAD-${String(i).padStart(3, '0')}`);
    const atBlob = Array.from({ length: 5 }, (_, i) => `bad-${String(i).padStart(3, '0')}`);
    const bad = [...atBlob, ...badNames].map((id) => `refs/zz/lanes/${id}`);
    const kept = Array.from(
      { length: n },
      (_, i) => `refs/zz-quarantine/origin/lanes/q-${String(i).padStart(3, '0')}`,
    );
    execFileSync('git', ['update-ref', '--stdin'], {
      cwd: t.dir,
      input:
        bad.map((r) => `create ${r} ${blob}\n`).join('') +
        kept.map((r) => `create ${r} ${head}\n`).join(''),
    });
    try {
      const first = [...bad].sort().slice(0, PAGE.maxListedProblems);
      expect(first.filter((r) => r.includes('/bad-'))).toHaveLength(2);
      const refs = (r: { corrupt: Array<{ ref: string }> }) => r.corrupt.map((c) => c.ref);
      for (const [name, args] of [
        // A lane_list page names the bad refs of its own id range (test/core/corrupt.test.ts
        // walks that at limit 1): a page that reads every ref names the first 50.
        ['lane_list', {}],
        ['repo_state', {}],
        ['ask_list', { limit: 1 }],
        ['lane_events', { limit: 1 }],
      ] as const) {
        const r = await as(tok.owner, name, args);
        expect(refs(r), name).toEqual(first);
        expect(r.corrupt_more, name).toBe(3);
      }
      const s = await as(tok.owner, 'repo_state', {});
      expect(s.quarantined.map((q: { ref: string }) => q.ref)).toEqual(
        kept
          .slice(0, PAGE.maxListedProblems)
          .map((r) => r.replace('refs/zz-quarantine/origin/', 'refs/zz/')),
      );
      expect(s.quarantined.every((q: { remote: string }) => q.remote === 'origin')).toBe(true);
      expect(s.quarantined_more).toBe(3);
    } finally {
      execFileSync('git', ['update-ref', '--stdin'], {
        cwd: t.dir,
        input: [...bad, ...kept].map((r) => `delete ${r}\n`).join(''),
      });
    }
    const clean = await as(tok.owner, 'repo_state', {});
    expect(clean).toMatchObject({
      corrupt: [],
      corrupt_more: 0,
      quarantined: [],
      quarantined_more: 0,
    });
  });
});
