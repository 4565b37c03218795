import { afterEach, describe, expect, it } from 'vitest';
import { httpClient } from '../../src/cli/client.js';
import { createModel } from '../../src/models/index.js';
import { runWorker, type CallTool, type WorkEvent } from '../../src/work/index.js';
import { cutProxy, type CutProxy } from '../helpers/cut-proxy.js';
import {
  fakeModelServer,
  type FakeModelServer,
  type FakeResponse,
} from '../models/fake-model-server.js';
import { AGENT, asksOf, demoLane, OWNER, served, type Served } from './harness.js';

// No claim outlives the worker that lost track of it (DESIGN §9: "a crash, Ctrl-C or a failed
// answer releases the claim"). A real daemon over real HTTP, a real fake model endpoint, and
// a proxy that cuts answers in transit or goes away.

let s: Served | null = null;
let server: FakeModelServer | null = null;
let proxy: CutProxy | null = null;
afterEach(async () => {
  await proxy?.close();
  proxy = null;
  await server?.close();
  server = null;
  await s?.cleanup();
  s = null;
});

const goodChange: FakeResponse = {
  body: {
    choices: [
      {
        message: {
          content: JSON.stringify({
            message: 'Add notes',
            files: [{ path: 'NOTES.md', content: 'notes\n' }],
          }),
        },
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 1 },
  },
};

async function setup(responder: (i: number) => FakeResponse) {
  s = await served();
  const lane = await demoLane(s);
  const r = await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
  server = await fakeModelServer((_req, i) => responder(i));
  const model = createModel('openai:m', {
    env: { OPENAI_BASE_URL: `${server.url}/v1` },
    maxRetries: 0,
  });
  proxy = await cutProxy(s.daemon.url);
  const viaProxy = httpClient(proxy.url, s.repoKey, s.agentToken);
  const call: CallTool = (tool, args) => viaProxy.call(tool, args);
  return { lane, askId: (r.ask as { ask_id: string }).ask_id, model, call };
}

type History = { op: string; ask_id: string | null; actor: string; args: { reason?: string } };
async function opsOn(lane: string, askId: string) {
  const r = await s!.owner('lane_get', { lane_id: lane, history_limit: 1000 });
  return (r.history as History[]).filter((h) => h.ask_id === askId);
}

describe('zz work leaves no claim held behind it', () => {
  it('--once: a claim whose answer was lost is found by its key and given back on exit', async () => {
    const { lane, askId, model, call } = await setup(() => goodChange);
    // The claim and its immediate retry both land but their answers are cut: --once gives up.
    proxy!.cut('/tools/ask_claim_next', 2, 'start');
    const events: WorkEvent[] = [];
    await expect(
      runWorker({
        call,
        model,
        laneId: lane,
        actor: AGENT,
        once: true,
        onEvent: (e) => events.push(e),
      }),
    ).rejects.toMatchObject({ code: 'unavailable' });
    expect(proxy!.cuts.get('/tools/ask_claim_next')).toBe(2);
    expect((await asksOf(s!, lane)).find((a) => a.ask_id === askId)).toMatchObject({
      state: 'open',
      holder: null,
    });
    const ops = (await opsOn(lane, askId)).map((h) => [h.op, h.actor]);
    // The claim, the renewal that proved it still ours, the release; never worked.
    expect(ops).toEqual([
      ['ask_post', OWNER],
      ['ask_claim', AGENT],
      ['ask_claim', AGENT],
      ['ask_release', AGENT],
    ]);
    expect(events.find((e) => e.type === 'released')).toMatchObject({ ask_id: askId });
    expect(server!.requests).toEqual([]);
  });

  it('--once: says the claim stays, and until when, when the daemon is gone for the release', async () => {
    const { lane, askId, model, call } = await setup(() => {
      // The model fails; by the time the worker gives the Ask back, the daemon is unreachable.
      void proxy!.close();
      return { status: 500, body: { error: { message: 'overloaded' } }, delayMs: 300 };
    });
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      once: true,
      onEvent: (e) => events.push(e),
    });
    expect(summary).toMatchObject({ asks: 1, released: 0 });
    expect(summary.failure).toMatchObject({ ask_id: askId, code: 'unavailable' });
    expect(summary.failure!.held).toMatch(/cannot reach the zz daemon/);
    const held = (await asksOf(s!, lane)).find((a) => a.ask_id === askId) as unknown as {
      state: string;
      holder: string | null;
      lease_expires_at: string;
    };
    expect(held).toMatchObject({ state: 'claimed', holder: AGENT });
    expect(summary.failure!.lease_expires_at).toBe(held.lease_expires_at);
    expect(events.some((e) => e.type === 'released')).toBe(false);
    const said = events.find((e) => e.type === 'error' && /could not release/.test(e.message));
    expect(said).toMatchObject({
      ask_id: askId,
      message: expect.stringContaining(
        `stays claimed until its lease runs out at ${held.lease_expires_at}`,
      ),
    });
  });

  it('Ctrl-C while the claim is in flight: the Ask is given back, not worked', async () => {
    const { lane, askId, model, call } = await setup(() => goodChange);
    const stop = new AbortController();
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call: (tool, args) => {
        if (tool === 'ask_claim_next') stop.abort();
        return call(tool, args);
      },
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      onEvent: (e) => events.push(e),
    });
    expect(summary).toMatchObject({ asks: 1, answered: 0, released: 1, interrupted: true });
    expect((await asksOf(s!, lane)).find((a) => a.ask_id === askId)).toMatchObject({
      state: 'open',
      holder: null,
    });
    expect(events.find((e) => e.type === 'released')).toMatchObject({ reason: 'interrupted' });
  });

  it('a claim lost to another is not "given back": a coordinator token must not release theirs', async () => {
    // The agent coordinates the Lane, so the daemon would let it release anyone's claim.
    const { lane, askId, model, call } = await setup(() => ({ hang: true }));
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      once: true,
      leaseSeconds: 3,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'step' && e.step === 'model') {
          // Meanwhile a person takes the Ask over: the worker's next renewal finds it theirs.
          // (A renewal landing between the two re-takes it; then they try again.)
          void (async () => {
            for (let i = 0; i < 20; i++) {
              try {
                await s!.owner('ask_release', { lane_id: lane, ask_id: askId, reason: 'mine' });
                await s!.owner('ask_claim', { lane_id: lane, ask_id: askId });
                return;
              } catch {
                /* the worker renewed in between */
              }
            }
          })();
        }
      },
    });
    expect(summary.failure).toMatchObject({ ask_id: askId, held: null });
    expect(summary.failure!.reason).toMatch(/lost the claim/);
    expect((await asksOf(s!, lane)).find((a) => a.ask_id === askId)).toMatchObject({
      state: 'claimed',
      holder: OWNER,
    });
    const releases = (await opsOn(lane, askId)).filter((h) => h.op === 'ask_release');
    expect(releases.every((h) => h.actor === OWNER)).toBe(true);
  });
});
