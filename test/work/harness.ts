import { afterEach } from 'vitest';
import type { Daemon } from '../../src/daemon/index.js';
import { httpClient } from '../../src/cli/client.js';
import { createModel, type Model } from '../../src/models/index.js';
import {
  runWorker,
  type CallTool,
  type WorkEvent,
  type WorkOptions,
  type WorkSummary,
} from '../../src/work/index.js';
import { startTestDaemon } from '../helpers/test-daemon.js';
import { killAll } from '../e2e/zz-process.js';
import type { FakeModelServer, FakeResponse } from '../models/fake-model-server.js';

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
  /** Tool calls over HTTP as `actor` (a fresh token): a third party, e.g. a plain member. */
  as(actor: string): Promise<CallTool>;
  cleanup(): Promise<void>;
}

export async function served(): Promise<Served> {
  const t = await startTestDaemon({ prefix: 'zz-work-', owner: OWNER });
  const ownerToken = await t.token(OWNER, 'login');
  const agentToken = await t.token(AGENT, 'bot');
  const o = httpClient(t.url, t.key, ownerToken);
  const a = httpClient(t.url, t.key, agentToken);
  return {
    dir: t.dir,
    daemon: t.daemon,
    repoKey: t.key,
    ownerToken,
    agentToken,
    owner: (tool, args) => o.call(tool, args),
    agent: (tool, args) => a.call(tool, args),
    as: async (actor) => {
      const c = httpClient(t.url, t.key, await t.token(actor, 'login'));
      return (tool, args) => c.call(tool, args);
    },
    cleanup: () => t.close(),
  };
}

/** What a work test started: the served daemon and the fake model, each ended after it. */
export interface PerTest {
  s: Served | null;
  model: FakeModelServer | null;
}

/**
 * Call once at the top of a test file: after each test, every zz process it spawned is killed,
 * then the fake model and the served daemon it put in the returned object are closed.
 */
export function endEachTest(): PerTest {
  const t: PerTest = { s: null, model: null };
  afterEach(async () => {
    await killAll();
    await t.model?.close();
    t.model = null;
    await t.s?.cleanup();
    t.s = null;
  });
  return t;
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
  title: string;
  state: string;
  holder: string | null;
  answer: { outcome: string; result: string | null; changeset_id: string | null } | null;
  payload: Record<string, unknown>;
}

export async function asksOf(s: Served, laneId: string): Promise<AskState[]> {
  const r = await s.owner('lane_get', { lane_id: laneId });
  return r.asks as AskState[];
}

/** An OpenAI-style chat reply whose text is `content`, for the fake model server. */
export const text = (content: string): FakeResponse => ({
  body: { choices: [{ message: { content } }], usage: { prompt_tokens: 1, completion_tokens: 1 } },
});

/** A `work` flow's valid change: NOTES.md saying "notes". */
export const goodChange = text(
  JSON.stringify({ message: 'Add notes', files: [{ path: 'NOTES.md', content: 'notes\n' }] }),
);

/** `openai:m` at a fake endpoint, never retried: a fault the test makes shows at once. */
export function fakeOpenAI(server: FakeModelServer, env: Record<string, string> = {}): Model {
  return createModel('openai:m', {
    env: { OPENAI_BASE_URL: `${server.url}/v1`, ...env },
    maxRetries: 0,
  });
}

/**
 * One worker run (`once`) of the agent on `laneId` with `model`, as `zz work --once` makes it:
 * its summary and every event it emitted (`extra.onEvent` sees them too).
 */
export async function workOnce(
  s: Served,
  model: Model,
  laneId: string,
  extra: Partial<WorkOptions> = {},
): Promise<{ summary: WorkSummary; events: WorkEvent[] }> {
  const events: WorkEvent[] = [];
  const summary = await runWorker({
    call: s.agent,
    model,
    laneId,
    actor: AGENT,
    // As `zz work` passes its checkout's key: the Ladder context comes from this repo alone.
    repo: s.repoKey,
    once: true,
    ...extra,
    onEvent: (e) => {
      events.push(e);
      extra.onEvent?.(e);
    },
  });
  return { summary, events };
}
