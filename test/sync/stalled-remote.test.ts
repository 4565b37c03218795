import { createServer, type Server, type Socket } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { lanePropose } from '../../src/core/index.js';
import { startAutoSync, type AutoSync } from '../../src/core/sync/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { killAll, privateEnv, serve } from '../e2e/zz-process.js';
import { makeCluster, type Cluster } from './git-cluster.js';

// A remote that accepts and never answers (hostile review H3): git's own helper
// (`git remote-http`) outlived the killed `git ls-remote` holding its pipes, and `zz sync`,
// the daemon's auto-sync round and the daemon's shutdown waited for ever. Now a run's whole
// process group is killed at its timeout, the failure says the remote did not answer (exit 7,
// offline), nothing of git is left behind, and shutdown does not wait for a stuck round.

let server: Server | null = null;
let sockets: Socket[] = [];
let cluster: Cluster | null = null;
let auto: AutoSync | null = null;
let port = 0;

beforeEach(async () => {
  sockets = [];
  server = createServer((s) => {
    sockets.push(s); // accepted, read, never answered
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  port = (server.address() as { port: number }).port;
});

afterEach(async () => {
  await killAll();
  await auto?.close();
  auto = null;
  for (const s of sockets) s.destroy();
  await new Promise((r) => server?.close(r));
  cluster?.cleanup();
  cluster = null;
  delete process.env.ZZ_REMOTE_TIMEOUT_MS;
});

/** Processes whose command line names the blackhole's port (git, git remote-http, curl). */
function talkingToBlackhole(): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(`127.0.0.1:${port}/`)) found.push(`${pid}: ${cmd}`);
    } catch {
      /* gone */
    }
  }
  return found;
}

async function stalledClone() {
  cluster = await makeCluster(1);
  const a = cluster.clones[0]!;
  await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
  sh(a.dir, 'remote', 'set-url', 'origin', `http://127.0.0.1:${port}/x.git`);
  return a;
}

describe('a remote that never answers', () => {
  it('zz sync ends at the timeout, says the remote did not answer, exits 7, leaves no git', async () => {
    const a = await stalledClone();
    process.env.ZZ_REMOTE_TIMEOUT_MS = '1500';
    const t0 = Date.now();
    const r = await zz(a.dir, cliEnv(), 'sync');
    const took = Date.now() - t0;
    expect(r.code, r.stderr).toBe(7);
    expect(r.stderr).toMatch(/origin did not answer within 2 s \(git ls-remote timed out/);
    expect(r.stderr).not.toMatch(/without a message/);
    expect(took).toBeLessThan(20_000);
    expect(sockets.length).toBeGreaterThan(0); // it did reach the blackhole
    expect(talkingToBlackhole()).toEqual([]);
  }, 60_000);

  it('an auto-sync round ends offline and the next one runs', async () => {
    const a = await stalledClone();
    process.env.ZZ_REMOTE_TIMEOUT_MS = '1000';
    const offline: Array<string | null> = [];
    auto = startAutoSync(new Map([['a', a.repo]]), {
      intervalMs: 3_600_000,
      onReport: (_r, rep) => offline.push(rep.offline),
      onError: (_r, e) => offline.push(`error: ${e.message}`),
    });
    await auto.ready;
    await auto.syncNow();
    await auto.syncNow();
    expect(offline).toHaveLength(2);
    expect(offline[1]).toMatch(/did not answer within 1 s/);
    expect(talkingToBlackhole()).toEqual([]);
  }, 60_000);

  it('closing the auto-sync does not wait for a round stuck on the remote', async () => {
    const a = await stalledClone();
    // The default timeout (60 s): close() must not wait for it.
    auto = startAutoSync(new Map([['a', a.repo]]), { intervalMs: 3_600_000 });
    await auto.ready;
    void auto.syncNow().catch(() => {});
    while (talkingToBlackhole().length === 0) await new Promise((r) => setTimeout(r, 50));
    const t0 = Date.now();
    await auto.close();
    auto = null;
    expect(Date.now() - t0).toBeLessThan(10_000);
    await new Promise((r) => setTimeout(r, 300));
    expect(talkingToBlackhole()).toEqual([]);
  }, 60_000);
});

describe('zz serve with a remote that never answers', () => {
  it('stops promptly on SIGTERM while its auto-sync round waits on the remote', async () => {
    const a = await stalledClone();
    const served = await serve(a.dir, privateEnv());
    // A tracking ref moved by hand (as a `git fetch` would): the watcher starts a round at
    // once, which waits on the blackhole (the default timeout: a minute).
    sh(a.dir, 'update-ref', 'refs/zz-remotes/origin/lanes/web', sh(a.dir, 'rev-parse', 'HEAD'));
    const deadline = Date.now() + 30_000;
    while (talkingToBlackhole().length === 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await new Promise((r) => setTimeout(r, 50));
    }
    const t0 = Date.now();
    served.child.kill('SIGTERM');
    const end = await served.exited;
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(end.code ?? end.signal, served.log()).not.toBeNull();
    await new Promise((r) => setTimeout(r, 300));
    expect(talkingToBlackhole()).toEqual([]);
  }, 90_000);
});

describe('an https remote that asks for credentials', () => {
  it('is a permission failure with a hint about credential helpers, not fatal', async () => {
    const { classifyTransportError } = await import('../../src/git/index.js');
    // What git 2.39 prints for an https remote answering 401 with no helper and no terminal.
    const f = classifyTransportError(
      "fatal: could not read Username for 'https://example.com': terminal prompts disabled\n",
    );
    expect(f.kind).toBe('permission');
    expect(f.message).toMatch(/credential helper/);
  });
});
