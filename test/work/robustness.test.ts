import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { workReporter } from '../../src/cli/work-command.js';
import { ZzError } from '../../src/errors.js';
import { MAX_GIVE_BACKS } from '../../src/work/waiting.js';
import { createModel } from '../../src/models/index.js';
import { runWorker, type CallTool, type WorkEvent } from '../../src/work/index.js';
import {
  fakeModelServer,
  type FakeModelServer,
  type FakeResponse,
} from '../models/fake-model-server.js';
import {
  AGENT,
  asksOf,
  demoLane,
  fakeOpenAI,
  goodChange,
  served,
  text,
  workOnce,
  type Served,
} from './harness.js';

// What happens when things go wrong while an Ask is held: the claim always goes back, with the
// reason; a slow step keeps its lease; an idle worker waits on the Lane's events.

let s: Served | null = null;
let server: FakeModelServer | null = null;
const dirs: string[] = [];
afterEach(async () => {
  await server?.close();
  server = null;
  await s?.cleanup();
  s = null;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function laneWithWork(): Promise<{ lane: string; askId: string }> {
  s = await served();
  const lane = await demoLane(s);
  const r = await s.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
  return { lane, askId: (r.ask as { ask_id: string }).ask_id };
}

async function openai(responses: FakeResponse[] | ((i: number) => FakeResponse)) {
  server = await fakeModelServer(
    typeof responses === 'function' ? (_req, i) => responses(i) : responses,
  );
  return fakeOpenAI(server);
}

describe('zz work when an Ask goes wrong', () => {
  it('releases the claim when the model process crashes mid-Ask, with the reason', async () => {
    const { lane, askId } = await laneWithWork();
    const dir = mkdtempSync(join(tmpdir(), 'zz-crash-'));
    dirs.push(dir);
    const script = join(dir, 'crash.mjs');
    writeFileSync(script, `process.stderr.write('segfault in the model\\n'); process.exit(2);\n`);
    chmodSync(script, 0o755);
    const { summary, events } = await workOnce(s!, createModel(`exec:node ${script}`), lane);
    expect(summary).toMatchObject({ asks: 1, answered: 0, released: 1 });
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null, answer: null });
    const released = events.find((e) => e.type === 'released') as { reason: string };
    expect(released.reason).toMatch(/exited 2: segfault in the model/);
  });

  it('gives invalid structured output one repair round, then releases with the reason', async () => {
    const { lane, askId } = await laneWithWork();
    const model = await openai([text('Sure! Here is the change.'), text('{"message": 5}')]);
    const { events } = await workOnce(s!, model, lane);
    expect(server!.requests).toHaveLength(2);
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask.state).toBe('open');
    const released = events.find((e) => e.type === 'released') as { reason: string };
    expect(released.reason).toMatch(/invalid structured output \(change\) twice.*message/);
  });

  it('releases the claim on Ctrl-C while the model is thinking', async () => {
    const { lane, askId } = await laneWithWork();
    const model = await openai([{ hang: true }]);
    const stop = new AbortController();
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call: s!.agent,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'step' && e.step === 'model') stop.abort();
      },
    });
    expect(summary).toMatchObject({ asks: 1, released: 1, interrupted: true });
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
    expect(events.find((e) => e.type === 'released')).toMatchObject({ reason: 'interrupted' });
  });

  it('renews the lease while a slow step runs, so the answer is still accepted', async () => {
    const { lane, askId } = await laneWithWork();
    // A 1 s lease and a model that takes 2.5 s: without renewal the answer is refused.
    const model = await openai([{ ...goodChange, delayMs: 2500 }]);
    const summary = await runWorker({
      call: s!.agent,
      model,
      laneId: lane,
      actor: AGENT,
      once: true,
      leaseSeconds: 1,
    });
    expect(summary).toMatchObject({ answered: 1, released: 0 });
    const r = await s!.owner('lane_get', { lane_id: lane });
    const claims = (r.history as { op: string; ask_id: string | null }[]).filter(
      (h) => h.op === 'ask_claim' && h.ask_id === askId,
    );
    expect(claims.length).toBeGreaterThan(1);
  });

  it('waits out a daemon outage in a long-running worker, then carries on', async () => {
    const { lane } = await laneWithWork();
    const model = await openai(() => goodChange);
    // The claim and its immediate same-key retry both fail: the worker backs off and tries again.
    let failures = 2;
    const call: CallTool = (tool, args) => {
      if (tool.startsWith('ask_claim') && failures-- > 0) {
        return Promise.reject(new ZzError('unavailable', 'cannot reach the zz daemon'));
      }
      return s!.agent(tool, args);
    };
    const stop = new AbortController();
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'answered') stop.abort();
      },
    });
    expect(summary.answered).toBe(1);
    expect(events.find((e) => e.type === 'error')).toMatchObject({
      ask_id: null,
      message: 'cannot reach the zz daemon',
    });
  });

  it('shows the model a change zz refused, once, and answers with the one it fixes', async () => {
    // A path the changeset policy refuses (.git/, "a//b", a deletion of nothing) was a
    // release with the reason, the model never told: the same Ask failed the same way forever.
    const { lane, askId } = await laneWithWork();
    const model = await openai([
      text(
        JSON.stringify({ message: 'Add notes', files: [{ path: '.git/config', content: 'x' }] }),
      ),
      goodChange,
    ]);
    const summary = await runWorker({
      call: s!.agent,
      model,
      laneId: lane,
      actor: AGENT,
      once: true,
    });
    expect(summary).toMatchObject({ answered: 1, released: 0 });
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask.answer).toMatchObject({ outcome: 'complete' });
    expect(ask.answer!.changeset_id).toMatch(/^cs-/);
    const retry = JSON.stringify(server!.requests[1]!.body.messages);
    expect(retry).toMatch(/zz refused this change.*\.git/);
    // A second refusal is not argued with: the Ask goes back with the reason.
    const again = await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Again' });
    await server!.close();
    const bad = text(JSON.stringify({ message: 'm', files: [{ path: 'a//b', content: 'x' }] }));
    const m2 = await openai([bad, bad]);
    const r2 = await runWorker({
      call: s!.agent,
      model: m2,
      laneId: lane,
      actor: AGENT,
      kinds: ['work'],
      once: true,
    });
    expect(r2.failure).toMatchObject({
      ask_id: (again.ask as { ask_id: string }).ask_id,
      code: 'invalid_argument',
    });
    expect(server!.requests).toHaveLength(2);
  });

  it('backs off after each Ask it gave back, rather than taking the same one at full speed', async () => {
    // A model that always fails (or an Ask it cannot do) made a long-running worker claim and
    // release the same Ask back to back — 20 claims and 40 Lane commits in 15 s, a model call
    // each — until someone stopped it.
    const { lane, askId } = await laneWithWork();
    const model = await openai(() => text('{not json'));
    const stop = new AbortController();
    const at: { type: string; t: number }[] = [];
    const summary = await runWorker({
      call: s!.agent,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      failureBackoffMs: 400,
      onEvent: (e) => {
        at.push({ type: e.type, t: performance.now() });
        if (e.type === 'claimed' && at.filter((x) => x.type === 'claimed').length === 3) {
          stop.abort();
        }
      },
    });
    expect(summary.asks).toBe(3);
    const gaps: number[] = [];
    for (let i = 0; i < at.length; i++) {
      if (at[i]!.type !== 'released') continue;
      const next = at.slice(i).find((x) => x.type === 'claimed');
      if (next) gaps.push(next.t - at[i]!.t);
    }
    // The Ask waits twice the pause: 800 ms after the first, 1600 ms after the second.
    expect(gaps).toHaveLength(2);
    expect(gaps[0]).toBeGreaterThanOrEqual(780);
    expect(gaps[1]).toBeGreaterThanOrEqual(1580);
    expect(at.filter((x) => x.type === 'backoff')).toHaveLength(2);
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
  });

  it(`stops claiming an Ask it gave back ${MAX_GIVE_BACKS} times, saying so, and leaves it open`, async () => {
    // Without a limit an Ask no model can answer was claimed every 5 minutes for as long as
    // the worker ran: a model call each, about 240 an hour with several such Asks.
    const { lane, askId } = await laneWithWork();
    const model = await openai(() => text('{not json'));
    const stop = new AbortController();
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call: s!.agent,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      failureBackoffMs: 2,
      idleWaitMs: 200,
      onEvent: (e) => {
        events.push(e);
        // Longer than its next wait (2 ms doubling: 1 s) would have been, were it not parked.
        if (e.type === 'backoff' && e.parked) setTimeout(() => stop.abort(), 2500);
      },
    });
    expect(summary.asks).toBe(MAX_GIVE_BACKS);
    const backoffs = events.filter((e) => e.type === 'backoff');
    expect(backoffs.map((e) => (e as { parked: boolean }).parked)).toEqual([
      ...Array.from({ length: MAX_GIVE_BACKS - 1 }, () => false),
      true,
    ]);
    const out: string[] = [];
    const report = workReporter(
      { stdout: (x) => out.push(x), stderr: () => {}, env: {}, cwd: '/', isTTY: false },
      false,
      false,
    );
    report(backoffs.at(-1)!);
    expect(out.join('')).toMatch(
      new RegExp(`given back ${MAX_GIVE_BACKS} times: this worker will not claim it again`),
    );
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
  });

  it('takes other work while an Ask it gave back waits, instead of idling behind it', async () => {
    // The pause after a release was the whole worker's: with an Ask it cannot do at the head
    // of the queue, a fresh Ask behind it waited out every pause (up to 5 min) and was never
    // claimed, since the Ask given back was always the next one claimable.
    const { lane } = await laneWithWork();
    await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Poison', body: 'Poison' });
    const r = await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Fresh' });
    const fresh = (r.ask as { ask_id: string }).ask_id;
    server = await fakeModelServer((req) =>
      JSON.stringify(req.body).includes('Poison') ? text('{not json') : goodChange,
    );
    const model = fakeOpenAI(server);
    const stop = new AbortController();
    const answered: string[] = [];
    const claimed: string[] = [];
    const started = performance.now();
    const timer = setTimeout(() => stop.abort(), 20_000);
    await runWorker({
      call: s!.agent,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      kinds: ['work'],
      failureBackoffMs: 1000,
      onEvent: (e) => {
        if (e.type === 'claimed') claimed.push(e.title);
        if (e.type === 'answered') answered.push(e.ask_id);
        if (e.type === 'answered' && e.ask_id === fresh) stop.abort();
      },
    });
    clearTimeout(timer);
    expect(answered).toContain(fresh);
    expect(claimed).toEqual(['Write NOTES.md', 'Poison', 'Fresh']);
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 30_000);

  it('--once with nothing claimable says so and returns', async () => {
    s = await served();
    const lane = await demoLane(s);
    const { summary, events } = await workOnce(s, createModel('exec:true'), lane);
    expect(summary.asks).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['start', 'idle', 'done']);
  });

  it('stops cleanly on Ctrl-C while idle', async () => {
    s = await served();
    const lane = await demoLane(s);
    const stop = new AbortController();
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call: s.agent,
      model: createModel('exec:true'),
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      idleWaitMs: 55_000,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'idle') setTimeout(() => stop.abort(), 100);
      },
    });
    expect(summary).toMatchObject({ asks: 0, interrupted: true });
    expect(events.map((e) => e.type)).toEqual(['start', 'idle', 'done']);
  }, 50_000);

  it('waits on the Lane events when idle and takes work as soon as it is posted', async () => {
    s = await served();
    const lane = await demoLane(s);
    const model = await openai(() => goodChange);
    let waits = 0;
    const call: CallTool = (tool, args) => {
      if (tool === 'lane_events' && args.wait_ms) waits++;
      return s!.agent(tool, args);
    };
    const stop = new AbortController();
    let posted = false;
    const summary = await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      // Far longer than this test may take: only an event can wake the worker in time.
      idleWaitMs: 55_000,
      onEvent: (e) => {
        if (e.type === 'idle' && !posted) {
          posted = true;
          void s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
        }
        if (e.type === 'answered') stop.abort();
      },
    });
    expect(summary.answered).toBe(1);
    // The post woke the one long-poll in progress (a worker that slept the full wait would
    // time this test out).
    expect(waits).toBe(1);
  }, 50_000);

  it('makes no requests while idle: writes elsewhere in the repo do not wake it', async () => {
    s = await served();
    const lane = await demoLane(s);
    await s.owner('lane_propose', { lane_id: 'other', title: 'Another lane' });
    const model = await openai(() => goodChange);
    const calls: string[] = [];
    const call: CallTool = (tool, args) => {
      calls.push(tool);
      return s!.agent(tool, args);
    };
    const stop = new AbortController();
    let whileIdle: string[] | null = null;
    let busy: Promise<void> | null = null;
    const summary = await runWorker({
      call,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      idleWaitMs: 55_000,
      onEvent: (e) => {
        if (e.type === 'idle' && !busy) {
          const from = calls.length;
          busy = (async () => {
            // Real activity for a while (20 writes to another Lane): the idle worker must make
            // no request of its own meanwhile beyond the one long-poll it is parked in.
            for (let i = 0; i < 20; i++) {
              await s!.owner('ask_post', { lane_id: 'other', kind: 'work', title: `Other ${i}` });
            }
            whileIdle = calls.slice(from);
            await s!.owner('ask_post', { lane_id: lane, kind: 'work', title: 'Write NOTES.md' });
          })();
        }
        if (e.type === 'answered') stop.abort();
      },
    });
    await busy;
    expect(summary.answered).toBe(1);
    expect(whileIdle).toEqual(['lane_events']);
  }, 50_000);
});
