import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initRepo, ZzRepo } from '../../src/core/index.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { httpClient } from '../../src/cli/client.js';
import type { CallTool } from '../../src/work/index.js';
import { makeRepo } from '../helpers/temp-repo.js';

// A real checkout served by a real daemon on 127.0.0.1 (port 0), with an owner and an agent
// identity, each with a token; tool calls go over HTTP exactly as `zz work` makes them.

export const OWNER = 'owner@example.com';
export const AGENT = 'owner@example.com[bot]';

export interface Served {
  dir: string;
  daemon: Daemon;
  repoKey: string;
  ownerToken: string;
  agentToken: string;
  owner: CallTool;
  agent: CallTool;
  cleanup(): Promise<void>;
}

export async function served(): Promise<Served> {
  const repo = makeRepo('zz-work-');
  const cache = mkdtempSync(join(tmpdir(), 'zz-work-cache-'));
  const zz = await ZzRepo.open(repo.dir);
  const repoKey = zz.key;
  await initRepo(zz, { owner: OWNER, default_branch: 'main' });
  zz.close();
  const daemon = await startDaemon({
    cwd: repo.dir,
    port: 0,
    reposFile: join(cache, 'none.json'),
    cacheDir: cache,
    mcpHandler: null,
  });
  const ownerToken = (await daemon.tokens.create(OWNER, 'login')).token;
  const agentToken = (await daemon.tokens.create(AGENT, 'bot')).token;
  const o = httpClient(daemon.url, repoKey, ownerToken);
  const a = httpClient(daemon.url, repoKey, agentToken);
  return {
    dir: repo.dir,
    daemon,
    repoKey,
    ownerToken,
    agentToken,
    owner: (tool, args) => o.call(tool, args),
    agent: (tool, args) => a.call(tool, args),
    cleanup: async () => {
      await daemon.close();
      repo.cleanup();
      rmSync(cache, { recursive: true, force: true });
    },
  };
}

/** A Lane `demo` coordinated by the owner, with the agent as coordinator and maintainer too. */
export async function demoLane(s: Served, extra: Record<string, unknown> = {}): Promise<string> {
  await s.owner('lane_propose', { lane_id: 'demo', title: 'Demo lane', ...extra });
  for (const role of ['coordinator', 'maintainer']) {
    await s.owner('lane_grant', { lane_id: 'demo', grantee: AGENT, role });
  }
  return 'demo';
}

export interface AskState {
  ask_id: string;
  kind: string;
  state: string;
  holder: string | null;
  answer: { outcome: string; result: string | null; changeset_id: string | null } | null;
  payload: Record<string, unknown>;
}

export async function asksOf(s: Served, laneId: string): Promise<AskState[]> {
  const r = await s.owner('lane_get', { lane_id: laneId });
  return r.asks as AskState[];
}
