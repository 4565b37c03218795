import { afterEach, describe, expect, it } from 'vitest';
import { httpClient } from '../../src/cli/client.js';
import { ZzError } from '../../src/errors.js';
import { Claims, LaneWatcher } from '../../src/work/claims.js';
import {
  runWorker,
  type CallTool,
  type WorkEvent,
  type WorkOptions,
} from '../../src/work/index.js';
import { cutProxy, type CutProxy } from '../helpers/cut-proxy.js';
import {
  fakeModelServer,
  type FakeModelServer,
  type FakeResponse,
} from '../models/fake-model-server.js';
import {
  AGENT,
  asksOf,
  demoLane,
  goodChange,
  OWNER,
  fakeOpenAI,
  served,
  text,
  type Served,
} from './harness.js';

// Claims whose answers are lost in transit. A worker waiting on an Ask it gave back claims
// other work with ask_claim_next and `exclude`, under an idempotency key kept until an answer
// arrives: the answer cut after the daemon committed the claim (a proxy drops it), the worker
// asks again with the same key and arguments, gets the same Ask back and leaves nothing held.

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

type History = { op: string; ask_id: string | null; actor: string };

describe('a claim whose answer is lost', () => {
  it.each([
    // Cut before a byte of the answer, twice: the immediate retry's replay is lost too, so the
    // worker waits the outage out and the next claim replays the same key once more.
    ['before the answer begins, twice', 'start', 2],
    // Cut after the headers, mid-body: the client must see a lost answer, not a daemon's 500.
    ['mid-body, once', 'body', 1],
  ] as const)(
    'cut %s: the retry gets the same Ask and nothing is left held',
    async (_what, at, count) => {
      s = await served();
      const lane = await demoLane(s);
      const post = async (title: string, priority: number) =>
        (await s!.owner('ask_post', { lane_id: lane, kind: 'work', title, priority })).ask as {
          ask_id: string;
        };
      const poison = await post('Poison', 0);
      const wanted = await post('Wanted', 1);
      const spare = await post('Spare', 2);
      server = await fakeModelServer((req) =>
        JSON.stringify(req.body).includes('Poison') ? text('{not json') : goodChange,
      );
      const model = fakeOpenAI(server);
      proxy = await cutProxy(s.daemon.url);
      const viaProxy = httpClient(proxy.url, s.repoKey, s.agentToken);
      const claimArgs: Record<string, unknown>[] = [];
      const call: CallTool = (tool, args) => {
        if (tool === 'ask_claim_next') claimArgs.push(args);
        return viaProxy.call(tool, args);
      };
      const stop = new AbortController();
      const timer = setTimeout(() => stop.abort(), 60_000);
      const claimed: string[] = [];
      const errors: string[] = [];
      let armed = false;
      await runWorker({
        call,
        model,
        laneId: lane,
        actor: AGENT,
        signal: stop.signal,
        kinds: ['work'],
        failureBackoffMs: 500,
        onEvent: (e) => {
          if (e.type === 'claimed') claimed.push(e.ask_id);
          if (e.type === 'error' && e.ask_id === null) errors.push(e.message);
          // Poison was given back and waits: the claims from now on pass over it.
          // (A prefix of ask_claim too: query-then-claim's claim would be cut the same way.)
          if (e.type === 'backoff' && !armed) {
            armed = true;
            proxy!.cut('/tools/ask_claim', count, at);
          }
          if (e.type === 'answered') stop.abort();
        },
      });
      clearTimeout(timer);
      expect(proxy.cuts.get('/tools/ask_claim')).toBe(count);
      if (at === 'start') expect(errors[0]).toMatch(/cannot reach the zz daemon/);
      // (The answer posted a changeset_review follow-up: not one of these.)
      const asks = (await asksOf(s, lane)).filter((a) => a.kind === 'work');
      const state = Object.fromEntries(asks.map((a) => [a.ask_id, [a.state, a.holder]]));
      expect(state).toEqual({
        [poison.ask_id]: ['open', null],
        [wanted.ask_id]: ['answered', AGENT],
        [spare.ask_id]: ['open', null],
      });
      expect(claimed).toEqual([poison.ask_id, wanted.ask_id]);
      // One claim committed for Wanted (then the replay's renewal); none ever for Spare.
      const r = await s.owner('lane_get', { lane_id: lane, history_limit: 1000 });
      const claimsOf = (id: string) =>
        (r.history as History[]).filter((h) => h.op === 'ask_claim' && h.ask_id === id);
      expect(claimsOf(wanted.ask_id).length).toBe(2);
      expect(claimsOf(spare.ask_id)).toEqual([]);
      // Every claim after the give-back carried the one key and the one exclude.
      const after = claimArgs.slice(1);
      expect(after.length).toBe(count + 1);
      for (const a of after) {
        expect(a).toEqual({ ...after[0], exclude: [poison.ask_id] });
        expect(a.idempotency_key).toBe(after[0]!.idempotency_key);
      }
    },
    90_000,
  );
});

describe('the Asks a worker waits on', () => {
  it('are no longer passed over once the Lane shows them cancelled', async () => {
    s = await served();
    const lane = await demoLane(s);
    const poison = (
      (await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Poison' })).ask as {
        ask_id: string;
      }
    ).ask_id;
    server = await fakeModelServer((req) =>
      JSON.stringify(req.body).includes('Poison') ? text('{not json') : goodChange,
    );
    const model = fakeOpenAI(server);
    const claimArgs: Record<string, unknown>[] = [];
    const call: CallTool = (tool, args) => {
      if (tool === 'ask_claim_next') claimArgs.push(args);
      return s!.agent(tool, args);
    };
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 60_000);
    let gaveBack = false;
    let cancelledAt = -1;
    let busy: Promise<void> | null = null;
    await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      // Poison waits 10 s: the claims below come well inside it.
      failureBackoffMs: 5000,
      onEvent: (e) => {
        if (e.type === 'backoff') gaveBack = true;
        if (e.type === 'idle' && gaveBack && !busy) {
          busy = (async () => {
            cancelledAt = claimArgs.length;
            await s!.owner('ask_cancel', { lane_id: lane, ask_id: poison, reason: 'not needed' });
            await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Fresh' });
          })();
        }
        if (e.type === 'answered') stop.abort();
      },
    });
    clearTimeout(timer);
    await busy;
    // Before the cancel, Poison was passed over; the claim that took Fresh (after the events
    // that showed the cancel, within Poison's wait) no longer names it.
    expect(claimArgs[cancelledAt - 1]!.exclude).toEqual([poison]);
    expect(claimArgs.at(-1)).not.toHaveProperty('exclude');
  }, 90_000);
});

describe('a replayed claim', () => {
  it('is claimed again before it is worked: one that lapsed to someone else is not taken', async () => {
    s = await served();
    const lane = await demoLane(s);
    const post = async (title: string, priority: number) =>
      (
        (await s!.owner('ask_post', { lane_id: lane, kind: 'work', title, priority })).ask as {
          ask_id: string;
        }
      ).ask_id;
    const poison = await post('Poison', 0);
    const wanted = await post('Wanted', 1);
    const spare = await post('Spare', 2);
    proxy = await cutProxy(s.daemon.url);
    const viaProxy = httpClient(proxy.url, s.repoKey, s.agentToken);
    const claims = new Claims((tool, args) => viaProxy.call(tool, args), lane, undefined, 1);
    proxy.cut('/tools/ask_claim_next', 2);
    await expect(claims.next(new Set([poison]))).rejects.toMatchObject({ code: 'unavailable' });
    // Wanted was claimed for 1 s, the answer lost; the lease lapses and the owner takes it.
    await new Promise((r) => setTimeout(r, 1500));
    await s.owner('ask_claim', { lane_id: lane, ask_id: wanted });
    const got = await claims.next(new Set([poison]));
    expect(got).toMatchObject({ ask_id: spare, holder: AGENT });
    const asks = await asksOf(s, lane);
    expect(asks.find((a) => a.ask_id === wanted)).toMatchObject({ holder: OWNER });
  });
});

describe('giving an Ask back', () => {
  it("releases nothing once the lease lapsed unseen and the Ask went to another (a coordinator's token could)", async () => {
    s = await served();
    const lane = await demoLane(s); // the agent coordinates: the daemon lets it release anyone's
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Slow' });
    const claims = new Claims((tool, args) => s!.agent(tool, args), lane, undefined, 1);
    const ask = await claims.next();
    expect(ask).toMatchObject({ holder: AGENT });
    // Asleep past the lease: no renewal saw it lapse, and the owner took the Ask.
    await new Promise((r) => setTimeout(r, 1500));
    await s.owner('ask_claim', { lane_id: lane, ask_id: ask!.ask_id });
    expect(await claims.giveBack(ask!, 'the step failed')).toMatchObject({
      released: false,
      held: null,
      gone: expect.stringMatching(/is claimed by /) as unknown,
    });
    const asks = await asksOf(s, lane);
    expect(asks.find((a) => a.ask_id === ask!.ask_id)).toMatchObject({
      state: 'claimed',
      holder: OWNER,
    });
    expect((await opsOn(lane, ask!.ask_id)).filter((h) => h.op === 'ask_release')).toEqual([]);
  });

  it('sends a release whose answer was lost again with its key: a claim taken meanwhile stands', async () => {
    s = await served();
    const lane = await demoLane(s); // the agent coordinates: a second release would end any claim
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Cut' });
    proxy = await cutProxy(s.daemon.url);
    const viaProxy = httpClient(proxy.url, s.repoKey, s.agentToken);
    const claims = new Claims((tool, args) => viaProxy.call(tool, args), lane, undefined, 60);
    const ask = (await claims.next())!;
    // The release lands; before its answer (then cut) arrives, the owner claims the Ask.
    proxy.cut('/tools/ask_release', 1, 'start', () =>
      s!.owner('ask_claim', { lane_id: lane, ask_id: ask.ask_id }),
    );
    expect(await claims.giveBack(ask, 'stopping')).toEqual({
      released: true,
      held: null,
      lease_expires_at: null,
      gone: null,
    });
    expect(proxy.cuts.get('/tools/ask_release')).toBe(1);
    const asks = await asksOf(s, lane);
    expect(asks.find((a) => a.ask_id === ask.ask_id)).toMatchObject({
      state: 'claimed',
      holder: OWNER,
    });
    expect((await opsOn(lane, ask.ask_id)).map((h) => [h.op, h.actor])).toEqual([
      ['ask_post', OWNER],
      ['ask_claim', AGENT],
      ['ask_claim', AGENT],
      ['ask_release', AGENT],
      ['ask_claim', OWNER],
    ]);
  });

  // The renewal sent before the release moves the lease on: a release that then fails must
  // say the new end, not the one known before it (found in review).
  it('a release that fails after the renewal says when the renewed lease runs out', async () => {
    s = await served();
    const lane = await demoLane(s);
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Stuck' });
    const claims = new Claims(
      async (tool, args) => {
        if (tool === 'ask_release') throw new ZzError('unavailable', 'daemon went away');
        return s!.agent(tool, args);
      },
      lane,
      undefined,
      60,
    );
    const ask = (await claims.next())!;
    await new Promise((r) => setTimeout(r, 50));
    const back = await claims.giveBack(ask, 'stopping');
    const got = await s.owner('ask_get', { lane_id: lane, ask_id: ask.ask_id });
    const stored = got.ask as { lease_expires_at: string };
    expect(back).toMatchObject({ released: false, held: 'daemon went away' });
    expect(back.lease_expires_at).toBe(stored.lease_expires_at);
    expect(Date.parse(back.lease_expires_at!)).toBeGreaterThan(Date.parse(ask.lease_expires_at!));
  });

  it('releases an Ask it still holds', async () => {
    s = await served();
    const lane = await demoLane(s);
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Quick' });
    const claims = new Claims((tool, args) => s!.agent(tool, args), lane, undefined, 60);
    const ask = await claims.next();
    expect(await claims.giveBack(ask!, 'stopping')).toEqual({
      released: true,
      held: null,
      lease_expires_at: null,
      gone: null,
    });
    const asks = await asksOf(s, lane);
    expect(asks.find((a) => a.ask_id === ask!.ask_id)).toMatchObject({ holder: null });
  });
});

describe('a daemon that predates exclude', () => {
  it('still takes other work while an Ask waits (query then claim, without a key)', async () => {
    s = await served();
    const lane = await demoLane(s);
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Poison', priority: 0 });
    await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Fresh', priority: 1 });
    server = await fakeModelServer((req) =>
      JSON.stringify(req.body).includes('Poison') ? text('{not json') : goodChange,
    );
    const model = fakeOpenAI(server);
    // What such a daemon's strict schema answers (the same words as today's for a field it
    // does not know), before anything is claimed.
    const refused: string[] = [];
    const call: CallTool = (tool, args) => {
      if (tool === 'ask_claim_next' && 'exclude' in args) {
        refused.push(tool);
        return Promise.reject(new ZzError('invalid_argument', 'unknown field "exclude"'));
      }
      return s!.agent(tool, args);
    };
    const stop = new AbortController();
    const timer = setTimeout(() => stop.abort(), 60_000);
    const claimed: string[] = [];
    await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      failureBackoffMs: 500,
      onEvent: (e) => {
        if (e.type === 'claimed') claimed.push(e.title);
        if (e.type === 'answered') stop.abort();
      },
    });
    clearTimeout(timer);
    expect(claimed).toEqual(['Poison', 'Fresh']);
    expect(refused).toEqual(['ask_claim_next']); // asked once, then remembered
  }, 90_000);
});

describe('the HTTP client', () => {
  it('takes an answer cut off mid-body for a lost one (unavailable), not a daemon error', async () => {
    s = await served();
    proxy = await cutProxy(s.daemon.url);
    const client = httpClient(proxy.url, s.repoKey, s.agentToken);
    proxy.cut('/tools/repo_state', 1, 'body');
    const e = await client.call('repo_state', {}).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toMatchObject({ code: 'unavailable' });
    expect((e as Error).message).toMatch(
      /^cannot reach the zz daemon at http:\/\/127\.0\.0\.1:\d+: /,
    );
    expect(proxy.cuts.get('/tools/repo_state')).toBe(1);
    expect((await client.call('repo_state', {})).actor).toBe(AGENT);
  });
});

describe('LaneWatcher', () => {
  it('reports the Asks the new events answered or cancelled', async () => {
    s = await served();
    const lane = await demoLane(s);
    const post = async (title: string) =>
      (
        (await s!.owner('ask_post', { lane_id: lane, kind: 'work', title })).ask as {
          ask_id: string;
        }
      ).ask_id;
    const [a, b, c] = [await post('a'), await post('b'), await post('c')];
    const watcher = new LaneWatcher(s.agent, lane);
    await watcher.init();
    await s.owner('ask_claim', { lane_id: lane, ask_id: a });
    await s.owner('ask_answer', { lane_id: lane, ask_id: a, outcome: 'complete', result: 'ok' });
    await s.owner('ask_cancel', { lane_id: lane, ask_id: b, reason: 'not needed' });
    await s.owner('ask_claim', { lane_id: lane, ask_id: c });
    expect(await watcher.wait(10_000)).toEqual([a, b]);
  });
});

async function setup(responder: (i: number) => FakeResponse) {
  s = await served();
  const lane = await demoLane(s);
  const r = await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
  server = await fakeModelServer((_req, i) => responder(i));
  const model = fakeOpenAI(server);
  proxy = await cutProxy(s.daemon.url);
  const viaProxy = httpClient(proxy.url, s.repoKey, s.agentToken);
  const call: CallTool = (tool, args) => viaProxy.call(tool, args);
  const askId = (r.ask as { ask_id: string }).ask_id;
  const events: WorkEvent[] = [];
  /** The agent's worker through the proxy, --once unless told otherwise; events recorded. */
  const work = (o: Partial<WorkOptions> = {}) =>
    runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      once: true,
      ...o,
      onEvent: (e) => {
        events.push(e);
        o.onEvent?.(e);
      },
    });
  /** The Ask as the owner sees it now. */
  const now = async () =>
    (await asksOf(s!, lane)).find((a) => a.ask_id === askId) as unknown as {
      state: string;
      holder: string | null;
      lease_expires_at: string;
    };
  return { lane, askId, call, events, work, now };
}

async function opsOn(lane: string, askId: string) {
  const r = await s!.owner('lane_get', { lane_id: lane, history_limit: 1000 });
  return (r.history as History[]).filter((h) => h.ask_id === askId);
}

// No claim outlives the worker that lost track of it (DESIGN §9: "a crash, Ctrl-C or a failed
// answer releases the claim"), through a proxy that cuts answers in transit or goes away.
describe('zz work leaves no claim held behind it', () => {
  it('--once: a claim whose answer was lost is found by its key and given back on exit', async () => {
    const { lane, askId, events, work, now } = await setup(() => goodChange);
    // The claim and its immediate retry both land but their answers are cut: --once gives up.
    proxy!.cut('/tools/ask_claim_next', 2, 'start');
    await expect(work()).rejects.toMatchObject({ code: 'unavailable' });
    expect(proxy!.cuts.get('/tools/ask_claim_next')).toBe(2);
    expect(await now()).toMatchObject({ state: 'open', holder: null });
    // The claim, the renewal that proved it still ours, the release; never worked.
    expect((await opsOn(lane, askId)).map((h) => [h.op, h.actor])).toEqual([
      ['ask_post', OWNER],
      ['ask_claim', AGENT],
      ['ask_claim', AGENT],
      ['ask_release', AGENT],
    ]);
    expect(events.find((e) => e.type === 'released')).toMatchObject({ ask_id: askId });
    expect(server!.requests).toEqual([]);
  });

  it('--once: says the claim stays, and until when, when the daemon is gone for the release', async () => {
    const { askId, events, work, now } = await setup(() => {
      // The model fails; by the time the worker gives the Ask back, the daemon is unreachable.
      void proxy!.close();
      return { status: 500, body: { error: { message: 'overloaded' } }, delayMs: 300 };
    });
    const summary = await work();
    expect(summary).toMatchObject({ asks: 1, released: 0 });
    expect(summary.failure).toMatchObject({ ask_id: askId, code: 'unavailable' });
    expect(summary.failure!.held).toMatch(/cannot reach the zz daemon/);
    const held = await now();
    expect(held).toMatchObject({ state: 'claimed', holder: AGENT });
    expect(summary.failure!.lease_expires_at).toBe(held.lease_expires_at);
    expect(events.some((e) => e.type === 'released')).toBe(false);
    expect(
      events.find((e) => e.type === 'error' && /could not release/.test(e.message)),
    ).toMatchObject({
      ask_id: askId,
      message: expect.stringContaining(
        `stays claimed until its lease runs out at ${held.lease_expires_at}`,
      ),
    });
  });

  it('Ctrl-C while the claim is in flight: the Ask is given back, not worked', async () => {
    const { call, events, work, now } = await setup(() => goodChange);
    const stop = new AbortController();
    const summary = await work({
      once: false,
      signal: stop.signal,
      call: (tool, args) => {
        if (tool === 'ask_claim_next') stop.abort();
        return call(tool, args);
      },
    });
    expect(summary).toMatchObject({ asks: 1, answered: 0, released: 1, interrupted: true });
    expect(await now()).toMatchObject({ state: 'open', holder: null });
    expect(events.find((e) => e.type === 'released')).toMatchObject({ reason: 'interrupted' });
  });

  it('a claim lost to another is not "given back": a coordinator token must not release theirs', async () => {
    // The agent coordinates the Lane, so the daemon would let it release anyone's claim.
    const { lane, askId, work, now } = await setup(() => ({ hang: true }));
    // Meanwhile a person takes the Ask over: the worker's next renewal finds it theirs. (A
    // renewal landing between their two calls re-takes it; then they try again.)
    const takeOver = async () => {
      for (let i = 0; i < 20; i++) {
        try {
          await s!.owner('ask_release', { lane_id: lane, ask_id: askId, reason: 'mine' });
          await s!.owner('ask_claim', { lane_id: lane, ask_id: askId });
          return;
        } catch {
          /* the worker renewed in between */
        }
      }
    };
    const summary = await work({
      leaseSeconds: 3,
      onEvent: (e) => {
        if (e.type === 'step' && e.step === 'model') void takeOver();
      },
    });
    expect(summary.failure).toMatchObject({ ask_id: askId, held: null });
    expect(summary.failure!.taken).toMatch(/is claimed by /);
    expect(summary.released).toBe(0);
    expect(summary.failure!.reason).toMatch(/lost the claim/);
    expect(await now()).toMatchObject({ state: 'claimed', holder: OWNER });
    const releases = (await opsOn(lane, askId)).filter((h) => h.op === 'ask_release');
    expect(releases.every((h) => h.actor === OWNER)).toBe(true);
  });
});
