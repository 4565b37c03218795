import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { askPost, initRepo, laneGet, lanePropose, ZzRepo } from '../../src/core/index.js';
import { readDaemonInfo, startDaemon, type Daemon } from '../../src/daemon/index.js';
import { TokenStore } from '../../src/core/token-store.js';
import { ALL_TOOLS, defineTool, Registry, WRITE } from '../../src/tools/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { jsonClient } from '../helpers/http-client.js';
import { daemonOptions } from '../helpers/test-daemon.js';
import { fsckProblems, makeRepo } from '../helpers/temp-repo.js';
import { countObjects } from '../../src/git/index.js';

const OWNER = { actor: 'owner@example.com' };
const cleanups: Array<() => unknown> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function repoDir(): string {
  const r = makeRepo();
  cleanups.push(r.cleanup);
  return r.dir;
}

async function start(
  dir: string,
  extra: Partial<Parameters<typeof startDaemon>[0]> = {},
): Promise<Daemon> {
  const d = await startDaemon(daemonOptions(dir, extra));
  cleanups.push(() => d.close());
  return d;
}

const gitdirOf = (dir: string) => join(dir, '.git');

/** Resolves once a connection to `port` on loopback is refused (its listener closed). */
async function refused(port: number): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    const open = await new Promise<boolean>((resolve) => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => (sock.destroy(), resolve(true)));
      sock.once('error', () => resolve(false));
    });
    if (!open) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`port ${port} still accepts connections`);
}

describe('startDaemon', () => {
  it('refuses a second daemon for the same checkout, naming the first', async () => {
    const dir = repoDir();
    const first = await start(dir);
    expect(first.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const info = await readDaemonInfo(gitdirOf(dir));
    expect(info).toMatchObject({ pid: process.pid, url: first.url });
    await expect(start(dir)).rejects.toThrow(
      `zz serve is already running for this repository at ${first.url} (pid ${process.pid})`,
    );
    // From a subdirectory (or a linked worktree) it is the same repository.
    mkdirSync(join(dir, 'sub'));
    await expect(start(join(dir, 'sub'))).rejects.toMatchObject({ code: 'conflict' });
    await first.close();
    expect(existsSync(join(gitdirOf(dir), 'zz', 'daemon.json'))).toBe(false);
    expect(await readDaemonInfo(gitdirOf(dir))).toBeNull();
    // And it can start again.
    const again = await start(dir);
    expect((await readDaemonInfo(gitdirOf(dir)))?.url).toBe(again.url);
  });

  it('takes over a daemon.json left by a dead process', async () => {
    const dir = repoDir();
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    mkdirSync(join(gitdirOf(dir), 'zz'), { recursive: true });
    const file = join(gitdirOf(dir), 'zz', 'daemon.json');
    writeFileSync(
      file,
      JSON.stringify({ pid: dead, url: 'http://127.0.0.1:1', started_at: '2020-01-01T00:00:00Z' }),
    );
    expect(await readDaemonInfo(gitdirOf(dir))).toBeNull();
    const d = await start(dir);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ pid: process.pid, url: d.url });
    // A garbled file is taken over too.
    await d.close();
    writeFileSync(file, '{not json');
    const d2 = await start(dir);
    expect((await readDaemonInfo(gitdirOf(dir)))?.url).toBe(d2.url);
  });

  it('refuses a directory that is not a repository with one line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zz-not-repo-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const e = await start(dir).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'not_a_repository' });
    expect((e as Error).message).not.toContain('\n');
  });

  it('serves extra repositories from --repo and repos.json, skipping missing ones', async () => {
    const main = repoDir();
    const extra = repoDir();
    const listed = repoDir();
    const cfg = mkdtempSync(join(tmpdir(), 'zz-xdg-'));
    cleanups.push(() => rmSync(cfg, { recursive: true, force: true }));
    mkdirSync(join(cfg, 'zz'));
    writeFileSync(
      join(cfg, 'zz', 'repos.json'),
      JSON.stringify({ repos: [{ path: listed }, { path: join(cfg, 'gone') }, { path: main }] }),
    );
    for (const [d, k] of [
      [main, 'acme/main'],
      [extra, 'acme/extra'],
      [listed, 'acme/listed'],
    ] as const) {
      spawnSync('git', ['config', 'zz.repo', k], { cwd: d });
    }
    const logs: string[] = [];
    const prev = process.env.XDG_CONFIG_HOME;
    process.env.XDG_CONFIG_HOME = cfg;
    try {
      const d = await startDaemon({
        cwd: main,
        port: 0,
        repos: [extra],
        log: (l) => logs.push(l),
        mcpHandler: null,
      });
      cleanups.push(() => d.close());
      expect([...d.repos.keys()]).toEqual(['acme/main', 'acme/extra', 'acme/listed']);
      expect(logs.some((l) => l.includes('gone'))).toBe(true);
      // Named to a caller holding a token of each (none is public: the anonymous list is empty).
      const anon = jsonClient(d.url);
      expect((await anon.get('/api/repos')).json.repos).toEqual([]);
      anon.close();
      const [first] = await Promise.all(
        [...d.repos.keys()].map((k) => d.tokensFor(k)!.create('owner@example.com', 'login')),
      );
      const http = jsonClient(d.url, { token: first!.token });
      const repos = await http.get('/api/repos');
      http.close();
      expect(repos.json.repos.map((r: { repo: string }) => r.repo)).toEqual([
        'acme/main',
        'acme/extra',
        'acme/listed',
      ]);
      // Every served checkout finds this daemon, under its own key.
      expect(await readDaemonInfo(gitdirOf(extra))).toMatchObject({
        url: d.url,
        repo: 'acme/extra',
      });
      // Served here, so a daemon of its own is refused.
      await expect(start(extra)).rejects.toMatchObject({ code: 'conflict' });
      await d.close();
      expect(await readDaemonInfo(gitdirOf(extra))).toBeNull();
    } finally {
      if (prev === undefined) delete process.env.XDG_CONFIG_HOME;
      else process.env.XDG_CONFIG_HOME = prev;
    }
    await expect(
      startDaemon({
        cwd: extra,
        port: 0,
        repos: [join(cfg, 'missing')],
        reposFile: join(cfg, 'x.json'),
        mcpHandler: null,
      }),
    ).rejects.toMatchObject({ code: 'not_a_repository' });
    // A failed start leaves no daemon.json behind.
    expect(await readDaemonInfo(gitdirOf(extra))).toBeNull();
  });

  it('honours a token only in the repository whose store minted it (zz serve --repo other)', async () => {
    const main = repoDir();
    const other = repoDir();
    spawnSync('git', ['config', 'zz.repo', 'acme/main'], { cwd: main });
    spawnSync('git', ['config', 'zz.repo', 'acme/other'], { cwd: other });
    const logs: string[] = [];
    const d = await start(main, { repos: [other], log: (l) => logs.push(l) });
    for (const repo of d.repos.values())
      await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
    // `zz login` in each checkout writes that checkout's own store.
    const mainToken = (await d.tokens.create(OWNER.actor, 'login')).token;
    const otherToken = (await new TokenStore(gitdirOf(other)).create(OWNER.actor, 'login')).token;
    expect(d.tokensFor('acme/other')!.file).toBe(join(gitdirOf(other), 'zz', 'tokens.json'));
    const http = jsonClient(d.url);
    const call = (repo: string, token: string) =>
      http.post(`/api/repos/${repo}/tools/lane_list`, {}, token);
    expect((await call('acme/main', mainToken)).status).toBe(200);
    expect((await call('acme/other', otherToken)).status).toBe(200);
    const crossed = await call('acme/other', mainToken);
    expect(crossed.status).toBe(401);
    expect(crossed.json.code).toBe('unauthorized');
    expect((await call('acme/main', otherToken)).status).toBe(401);
    // The event stream and MCP authenticate against the same per-repo store.
    const ev = await http.get('/api/repos/acme/other/events', mainToken);
    expect(ev.status).toBe(401);
    http.close();
    // The CLI in the other checkout finds this daemon, and the key to address it by.
    expect(await readDaemonInfo(gitdirOf(other))).toMatchObject({
      url: d.url,
      pid: process.pid,
      repo: 'acme/other',
    });
    expect(await readDaemonInfo(gitdirOf(main))).toMatchObject({ url: d.url, repo: 'acme/main' });
    // And the CLI there goes through it: the other repo's token works, the first repo's does not.
    const env = cliEnv();
    const viaDaemon = await zz(other, { ...env, ZZ_TOKEN: otherToken }, 'lane', 'list', '--json');
    expect(viaDaemon.code, viaDaemon.stderr).toBe(0);
    expect(
      logs.filter((l) => / acme\/other lane_list owner@example\.com 200 /.test(l)),
    ).toHaveLength(2);
    const crossedCli = await zz(other, { ...env, ZZ_TOKEN: mainToken }, 'lane', 'list');
    expect(crossedCli.code, crossedCli.stderr).toBe(3);
    await d.close();
    expect(existsSync(join(gitdirOf(other), 'zz', 'daemon.json'))).toBe(false);
  });

  it('runs git gc --auto in the background: a write load leaves few loose objects', async () => {
    const dir = repoDir();
    // git packs once it estimates more than gc.auto loose objects; a low bar keeps this quick.
    spawnSync('git', ['config', 'gc.auto', '100'], { cwd: dir });
    // git estimates the loose count from objects/17/ alone (more than ceil(gc.auto/256) there),
    // so a small load may or may not pass the bar by chance: two blobs known to hash into 17/
    // make the estimate certain. They are also objects written but not yet referenced (as by
    // a concurrent writer), which gc must keep.
    const fresh = ['seed-47', 'seed-209'].map((text) =>
      spawnSync('git', ['hash-object', '-w', '--stdin'], {
        cwd: dir,
        input: `${text}\n`,
        encoding: 'utf8',
      }).stdout.trim(),
    );
    expect(fresh.every((o) => o.startsWith('17'))).toBe(true);
    const d = await start(dir, { gc: { everyCommits: 40 } });
    const repo = [...d.repos.values()][0]!;
    await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
    const { token } = await d.tokens.create(OWNER.actor, 'login');
    const http = jsonClient(d.url, { token });
    for (let i = 0; i < 160; i++) {
      const r = await http.post(`/api/repos/${repo.key}/tools/lane_propose`, {
        lane_id: `load-${i}`,
        title: `Load ${i}`,
      });
      expect(r.status).toBe(200);
    }
    await d.maintenance.idle();
    http.close();
    const counts = await countObjects(gitdirOf(dir));
    // 160 Lanes wrote several hundred objects; most must now be in packs.
    expect(counts.inPack).toBeGreaterThan(300);
    expect(counts.count).toBeLessThan(200);
    for (const o of fresh)
      expect(spawnSync('git', ['cat-file', '-e', o], { cwd: dir }).status).toBe(0);
    expect(fsckProblems(dir)).toEqual([]);
    const lane = await laneGet(repo, OWNER, { lane_id: 'load-0' });
    expect(lane.lane.title).toBe('Load 0');
  });

  it('close() waits for an in-flight write, then refuses new connections', async () => {
    const dir = repoDir();
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    // The write finishes only after close() has begun: no sleep decides the order.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const slow = defineTool({
      name: 'test_slow_post',
      summary: 'ask_post after a pause (tests)',
      toolset: 'asks',
      annotations: WRITE,
      input: z.strictObject({ title: z.string() }),
      output: z.looseObject({}),
      handler: async (args, ctx) => {
        entered();
        await released;
        return askPost(ctx.repo, ctx.caller, { lane_id: 'l', kind: 'work', title: args.title });
      },
    });
    const d = await start(dir, { registry: new Registry([...ALL_TOOLS, slow]) });
    const repo = [...d.repos.values()][0]!;
    await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
    await lanePropose(repo, OWNER, { lane_id: 'l', title: 'L' });
    const { token } = await d.tokens.create(OWNER.actor, 'login');
    const http = jsonClient(d.url, { token });
    const pending = http.post(`/api/repos/${repo.key}/tools/test_slow_post`, {
      title: 'in flight',
    });
    await inHandler;
    const closed = d.close();
    // The port is given up while the write is still in flight; by then daemon.json no longer
    // names this daemon, or a CLI would send its token to whatever binds the freed port.
    try {
      await refused(d.port);
      expect(existsSync(join(gitdirOf(dir), 'zz', 'daemon.json'))).toBe(false);
    } finally {
      release();
    }
    const res = await pending;
    await closed;
    http.close();
    expect(res.status).toBe(200);
    expect(existsSync(join(gitdirOf(dir), 'zz', 'daemon.json'))).toBe(false);
    await expect(fetch(`${d.url}/healthz`)).rejects.toThrow();
    // The write is on the ref, as a fresh process sees it.
    const reopened = await ZzRepo.open(dir);
    try {
      const lane = await laneGet(reopened, OWNER, { lane_id: 'l' });
      expect(lane.asks.map((a) => a.title)).toEqual(['in flight']);
    } finally {
      reopened.close();
    }
  });

  it('close() ends long-polls instead of waiting out their wait_ms', async () => {
    const dir = repoDir();
    const d = await start(dir);
    const repo = [...d.repos.values()][0]!;
    await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
    const { token } = await d.tokens.create(OWNER.actor, 'login');
    const http = jsonClient(d.url, { token });
    const now = await http.post(`/api/repos/${repo.key}/tools/lane_events`, {});
    // The long-poll is waiting once it listens for the next commit: close() then, not after a
    // guessed delay (which could close before the request even reached its handler).
    const listening = new Promise<void>((resolve) => {
      const onCommit = repo.onCommit.bind(repo);
      repo.onCommit = (l) => {
        resolve();
        return onCommit(l);
      };
    });
    const pending = http.post(`/api/repos/${repo.key}/tools/lane_events`, {
      cursor: now.json.result.next_cursor,
      wait_ms: 60_000,
    });
    await listening;
    await d.close();
    const res = await pending;
    http.close();
    expect(res.status).toBe(200);
    expect(res.json.result.events).toEqual([]);
    // No timing assertion: a close() that waited out wait_ms (60 s) fails by this test's timeout.
  }, 20_000);
});
