import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { zzMain } from '../helpers/cli-harness.js';
import { initialiseInProcess } from '../helpers/core-fixture.js';
import { makeRepo } from '../helpers/temp-repo.js';
import {
  callHttp,
  ensureBuilt,
  killAll,
  privateEnv,
  serve,
  zz as spawnedZz,
  type Served,
  type ZzResult,
} from './zz-process.js';

// Logins and agent tokens as a user meets them, with the built zz and a real daemon:
// credentials per repository (13.3), named tokens that a second login or agent never revokes
// (13.4), `ZZ_TOKEN=$(zz agent token NAME)` (13.5), local tools through a daemon (13.7), and
// the fast path's missing-flag message (13.8). The daemons are spawned `zz serve`s; the commands
// run as the built zz runs them (zzMain: the fast path, then the command table) in this process,
// since each spawn cost 0.6-1 s of CPU and what is tested is what the commands do with logins
// and tokens. A few, marked, are spawned, where what the process does is part of the claim: the
// stdout `$(zz agent token NAME)` captures and the exit statuses a script sees. Whether the daemon still honours a
// token is asked over HTTP (`honoured`) once the CLI has shown, with the same token, that it
// sends ZZ_TOKEN to the daemon and maps a refusal to exit 3: the answer is the daemon's either
// way, and each spawn cost more than the request. The checkouts are initialised in this
// process (initialiseInProcess): `zz init` is not what these tests are about.

/** The status the daemon answers a token's repo_state with: 200 honoured, 401 refused. */
async function honoured(url: string, key: string, token: string): Promise<number> {
  return (await callHttp(url, key, 'repo_state', {}, token)).status;
}

beforeAll(ensureBuilt);

const zz = zzMain;

// The first three groups make checkouts, homes and daemons per test (what each asserts about
// logins is the state it made); the last shares one initialised, served and logged-in
// checkout among tests that each read or add only their own things.
const cleanups: Array<() => void> = [];
async function endOfTest(): Promise<void> {
  await killAll();
  for (const c of cleanups.splice(0)) c();
}

function repo(prefix: string) {
  const r = makeRepo(prefix);
  cleanups.push(r.cleanup);
  return r.dir;
}

async function ok(p: Promise<ZzResult>): Promise<ZzResult> {
  const r = await p;
  expect(r.code, `stdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(0);
  return r;
}

describe('credentials per repository', { timeout: 180_000 }, () => {
  afterEach(endOfTest);

  it("a login in a second repository never claims or overwrites the first repository's", async () => {
    const env = privateEnv();
    const a = repo('zz-id-a-');
    const b = repo('zz-id-b-');
    await initialiseInProcess(a);
    await initialiseInProcess(b);
    const d = await serve(a, env);
    const loginA = (await ok(spawnedZz(a, env, ['login', '--json']))).json();
    expect(loginA.server).toBe(d.url);
    // B has no daemon: its login says so and names B, never A's daemon on its port.
    const loginB = await ok(zz(b, env, ['login']));
    expect(loginB.stdout).toMatch(/^Logged in to local\/zz-id-b-\w+ as owner@example\.com/);
    expect(loginB.stdout).toContain('No daemon runs for this checkout');
    expect(loginB.stdout).not.toContain(d.url);
    // Asked to use A's daemon for B, it refuses, and B's stored login is unchanged.
    const wrong = await zz(b, env, ['login', '--server', d.url, '--rotate']);
    expect(wrong.code).toBe(6);
    expect(wrong.stderr).toMatch(/does not serve local\/zz-id-b-\w+ from this checkout/);
    // A's commands still go through A's daemon with A's token.
    expect((await ok(zz(a, env, ['lane', 'list']))).stdout).toMatch(/_repo/);
    const who = (await ok(zz(a, env, ['whoami', '--json']))).json();
    expect(who).toMatchObject({ actor: 'owner@example.com', via: 'stored login', daemon: d.url });
    expect(who.token_id).toBe(loginA.id);
    const creds = JSON.parse(
      readFileSync(join(env.XDG_CONFIG_HOME!, 'zz', 'credentials.json'), 'utf8'),
    ) as { repos: Record<string, { login?: { token: string } }> };
    const tokens = Object.values(creds.repos).map((r) => r.login?.token);
    expect(tokens).toHaveLength(2);
    expect(tokens).toContain(loginA.token);
  });
});

describe('credentials per daemon', { timeout: 180_000 }, () => {
  afterEach(endOfTest);

  it('two repositories with a daemon each keep their own logins; a daemon serving both honours each token only in its repository', async () => {
    const env = privateEnv();
    const a = repo('zz-id-two-a-');
    const b = repo('zz-id-two-b-');
    await initialiseInProcess(a);
    await initialiseInProcess(b);
    const dA = await serve(a, env);
    const dB = await serve(b, env);
    const loginA = (await ok(zz(a, env, ['login', '--json']))).json();
    const loginB = (await ok(zz(b, env, ['login', '--json']))).json();
    expect([loginA.server, loginB.server]).toEqual([dA.url, dB.url]);
    expect(loginB.token).not.toBe(loginA.token);
    await ok(zz(a, env, ['lane', 'propose', '--lane-id', 'in-a', '--title', 'A']));
    await ok(zz(b, env, ['lane', 'propose', '--lane-id', 'in-b', '--title', 'B']));
    // Each checkout's CLI went to its own daemon, as its own login.
    await dA.waitForLog(/lane_propose owner@example\.com 200/);
    await dB.waitForLog(/lane_propose owner@example\.com 200/);
    expect((await ok(zz(a, env, ['whoami', '--json']))).json()).toMatchObject({
      daemon: dA.url,
      token_id: loginA.id,
    });
    expect((await ok(zz(b, env, ['whoami', '--json']))).json()).toMatchObject({
      daemon: dB.url,
      token_id: loginB.id,
    });
    // A's token is no token in B: the CLI refuses it (exit 3), as does B's daemon.
    expect((await spawnedZz(b, { ...env, ZZ_TOKEN: loginA.token }, ['lane', 'list'])).code).toBe(3);

    // One daemon for both (`zz serve --repo`): the stored logins still work, each in its own
    // repository only, and `zz login` in B finds the daemon that now serves it.
    dA.child.kill('SIGTERM');
    dB.child.kill('SIGTERM');
    await Promise.all([dA.exited, dB.exited]);
    // No daemon: commands run in-process as the git identity, and whoami says so (it said
    // "stored login" beside "commands run in-process").
    expect((await ok(zz(a, env, ['whoami', '--json']))).json()).toMatchObject({
      via: 'git identity (in-process)',
      token_id: null,
      daemon: null,
    });
    const both = await serve(a, env, ['--repo', b]);
    expect(both.repoKeys).toHaveLength(2);
    const again = (await ok(zz(b, env, ['login', '--json']))).json();
    expect(again).toMatchObject({ token: loginB.token, reused: true, server: both.url });
    expect((await ok(zz(b, env, ['lane', 'list']))).stdout).toMatch(/in-b/);
    expect((await ok(zz(a, env, ['lane', 'list']))).stdout).toMatch(/in-a/);
    const [keyA, keyB] = both.repoKeys as [string, string];
    expect(await honoured(both.url, keyB, loginB.token)).toBe(200);
    expect(await honoured(both.url, keyB, loginA.token)).toBe(401);
    expect(await honoured(both.url, keyA, loginB.token)).toBe(401);
    expect(await honoured(both.url, keyA, loginA.token)).toBe(200);
  });
});

describe('named tokens: nothing is revoked unless asked', { timeout: 180_000 }, () => {
  afterEach(endOfTest);

  it('a second agent create and a second login keep the running tokens; --rotate, revoke and logout end them', async () => {
    const env = privateEnv();
    const dir = repo('zz-id-tok-');
    await initialiseInProcess(dir);
    const d = await serve(dir, env);
    const status = (token: string) => honoured(d.url, d.repoKeys[0]!, token);
    const first = (await ok(zz(dir, env, ['login', '--json']))).json();
    const t1 = (await ok(zz(dir, env, ['agent', 'create', 'claude', '--json']))).json().token;
    const asAgent = (token: string) => zz(dir, { ...env, ZZ_TOKEN: token }, ['repo', 'state']);
    expect((await asAgent(t1)).stdout).toContain('actor: owner@example.com[claude]');
    // Another `agent create claude` (a second shell): the first agent keeps working.
    const t2 = (await ok(zz(dir, env, ['agent', 'create', 'claude', '--json']))).json().token;
    expect(await status(t1)).toBe(200);
    expect(await status(t2)).toBe(200);
    const list = (await ok(zz(dir, env, ['agent', 'list', '--json']))).json();
    expect(list.agents).toEqual([
      expect.objectContaining({ name: 'claude', tokens: 2, stored_here: true }),
    ]);
    // A second login reuses the stored token; the first keeps working.
    const second = (await ok(zz(dir, env, ['login', '--json']))).json();
    expect(second).toMatchObject({ token: first.token, reused: true });
    expect(await status(first.token)).toBe(200);
    // A login by another machine user (another config home) mints its own; both work.
    const elsewhere = (await ok(zz(dir, privateEnv(), ['login', '--json']))).json();
    expect(elsewhere.token).not.toBe(first.token);
    expect(await status(first.token)).toBe(200);
    expect(await status(elsewhere.token)).toBe(200);
    // --rotate replaces the agent's earlier tokens: the CLI with one of them exits 3.
    const t3 = (await ok(zz(dir, env, ['agent', 'create', 'claude', '--rotate', '--json']))).json();
    expect(t3.revoked).toBe(2);
    expect((await spawnedZz(dir, { ...env, ZZ_TOKEN: t1 }, ['repo', 'state'])).code).toBe(3);
    expect(await status(t2)).toBe(401);
    expect(await status(t3.token)).toBe(200);
    // revoke ends the rest; logout ends the login.
    expect((await ok(zz(dir, env, ['agent', 'revoke', 'claude']))).stdout).toBe(
      'Revoked 1 token(s) of owner@example.com[claude].\n',
    );
    expect(await status(t3.token)).toBe(401);
    // An agent's refused ZZ_TOKEN is not mended by `zz login`: the CLI says what is.
    const refused = await zz(dir, { ...env, ZZ_TOKEN: t3.token }, ['lane', 'list']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toMatch(/refused ZZ_TOKEN \(unknown or revoked\).*zz agent create/);
    await ok(zz(dir, env, ['logout']));
    expect(await status(first.token)).toBe(401);
    expect(await status(elsewhere.token)).toBe(200);
    const who = await zz(dir, env, ['whoami']);
    expect(who.code).toBe(3);
    expect(who.stderr).toMatch(/^zz: not logged in to .*; run `zz login`\n$/);
  }, 300_000); // 114 s seen at CI load with other work beside it, when every command was spawned
});

describe('one served checkout, logged in', () => {
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let d: Served;
  beforeAll(async () => {
    env = privateEnv();
    const r = makeRepo('zz-id-shared-');
    cleanups.push(r.cleanup);
    dir = r.dir;
    await initialiseInProcess(dir);
    d = await serve(dir, env);
    await ok(zz(dir, env, ['login']));
  }, 150_000);
  afterAll(endOfTest);

  describe('ZZ_TOKEN=$(zz agent token NAME)', () => {
    it('prints exactly the token, or fails with one line naming the agent and creates nothing', async () => {
      const created = (await ok(zz(dir, env, ['agent', 'create', 'claude', '--json']))).json();
      const t = await ok(spawnedZz(dir, env, ['agent', 'token', 'claude']));
      expect(t.stdout).toBe(`${created.token}\n`);
      expect(t.stderr).toBe('');
      const ghost = await zz(dir, env, ['agent', 'token', 'ghost']);
      expect(ghost.code).toBe(4);
      expect(ghost.stdout).toBe('');
      expect(ghost.stderr.trim().split('\n')).toHaveLength(1);
      expect(ghost.stderr).toMatch(/no agent ghost \(owner@example\.com\[ghost\]\)/);
      const list = (await ok(zz(dir, env, ['agent', 'list', '--json']))).json();
      expect(list.agents.map((x: { name: string }) => x.name)).toEqual(['claude']);
      expect(readFileSync(join(dir, '.git', 'zz', 'tokens.json'), 'utf8')).not.toContain('ghost');
    });

    it('a token that is not one line is a local mistake, never a network failure', async () => {
      // What `$(zz agent token NAME)` captured when it printed two lines. A stored login is
      // there too: the CLI neither falls back to it nor asks the daemon.
      const bad = await spawnedZz(dir, { ...env, ZZ_TOKEN: 'owner@example.com[x]\nzzt_abc' }, [
        'lane',
        'list',
      ]);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toBe(
        'zz: ZZ_TOKEN is not a token: it holds a line break; set it to the token alone\n',
      );
      expect(bad.stderr).not.toMatch(/reach|network|daemon/);
    });
  });

  describe('through a running daemon', () => {
    it('zz run in-sandbox runs here as the logged-in actor', async () => {
      const logFrom = d.log().length;
      const r = await ok(
        zz(dir, env, [
          'run',
          'in-sandbox',
          '--commit',
          'main',
          '--command',
          'cat',
          '--command',
          'README.md',
        ]),
      );
      expect(r.stdout).toContain('exit_code: 0');
      expect(r.stdout).toContain('A demo repository.');
      // The daemon was asked who the token is, and nothing else (the sandbox ran here).
      const log = d.log().slice(logFrom);
      expect(log).toMatch(/repo_state/);
      expect(log).not.toMatch(/run_in_sandbox/);
    });

    it('a missing flag is named by the CLI, and a search without a Ladder says how to build one, even when the daemon would answer', async () => {
      await ok(zz(dir, env, ['lane', 'propose', '--lane-id', 'x', '--title', 'X']));
      const r = await zz(dir, env, ['ask', 'post', '--lane-id', 'x', '--title', 'T']);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe('zz: missing required flag --kind\n');
      // The fast path (a tool call straight to the daemon) also says how to build a Ladder.
      const search = await ok(zz(dir, env, ['ladder', 'search', '--query', 'demo']));
      expect(search.stderr).toBe(
        'zz: this repository has no Ladder yet; build it with `zz ladder build`\n',
      );
      const v = await zz(dir, env, ['--version']);
      expect(v.code).toBe(0);
      expect(v.stdout).toMatch(/^\d+\.\d+\.\d+\n$/);
    });
  });
});
