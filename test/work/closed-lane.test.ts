import { beforeAll, describe, expect, it } from 'vitest';
import { createModel } from '../../src/models/index.js';
import { runWorker, type WorkEvent } from '../../src/work/index.js';
import { ensureBuilt, privateEnv, spawnZz, zz } from '../e2e/zz-process.js';
import { fakeModelServer } from '../models/fake-model-server.js';
import {
  AGENT,
  OWNER,
  asksOf,
  demoLane,
  endEachTest,
  fakeOpenAI,
  goodChange,
  served,
  text,
} from './harness.js';

// `zz work` on a closed Lane, which keeps work in hand but hands out none (lane-closed.ts):
// the worker stops instead of waiting for work that cannot come — at once when it starts on
// one, promptly when the Lane closes while it waits, and after answering the Ask in hand when
// the Lane closes while it works — saying who closed the Lane, when and why, with exit 9.

const t = endEachTest();
beforeAll(() => ensureBuilt());

const post = async (lane: string, title: string): Promise<string> =>
  ((await t.s!.owner('ask_post', { lane_id: lane, kind: 'work', title })).ask as { ask_id: string })
    .ask_id;

const closeLane = async (lane: string, reason: string): Promise<string> =>
  ((await t.s!.owner('lane_close', { lane_id: lane, reason })).lane as { closed: { at: string } })
    .closed.at;

const stopped = (lane: string, at: string, reason: string) =>
  `zz: lane ${lane} was closed by ${OWNER} at ${at} (${reason}): it hands out no new work, so zz work stopped\n`;

describe('zz work on a closed Lane', () => {
  it('started on a closed Lane, stops at once (--once too) with who, when, why and exit 9', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s);
    // Posted before the close: still open, but no longer handed out.
    const left = await post(lane, 'Left over');
    const at = await closeLane(lane, 'sprint over');
    const model = (t.model = await fakeModelServer([])); // no model call is expected: any would fail
    const env = privateEnv({ ZZ_TOKEN: s.agentToken, OPENAI_BASE_URL: `${model.url}/v1` });
    for (const once of [[], ['--once']]) {
      // A worker that waited instead would be killed at the timeout: code null, not 9.
      const r = await zz(s.dir, env, ['work', '--lane', lane, '--model', 'openai:m', ...once], {
        timeoutMs: 40_000,
      });
      expect(r.stderr).toBe(stopped(lane, at, 'sprint over'));
      expect(r.code).toBe(9);
      const lines = r.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^zz work: lane demo as /);
      expect(lines.slice(1)).toEqual([
        'done: 0 asks (0 answered, 0 released); model usage 0 tokens in, 0 out, 0 calls',
      ]);
    }
    expect(model.requests).toHaveLength(0);
    expect((await asksOf(s, lane)).find((a) => a.ask_id === left)).toMatchObject({
      state: 'open',
      holder: null,
    });
  }, 100_000);

  it('closed while it waits for work: the Lane event wakes it and it stops (exit 9)', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s);
    const model = (t.model = await fakeModelServer([]));
    const env = privateEnv({ ZZ_TOKEN: s.agentToken, OPENAI_BASE_URL: `${model.url}/v1` });
    const child = spawnZz(s.dir, env, ['work', '--lane', lane, '--json', '--model', 'openai:m']);
    child.stdin.end();
    let out = '';
    let err = '';
    child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    await new Promise<void>((resolve) => {
      child.stdout.on('data', (c: Buffer) => {
        out += c.toString('utf8');
        if (out.includes('"type":"idle"')) resolve();
      });
    });
    const at = await closeLane(lane, 'merged upstream');
    const code = await exited;
    expect(err).toBe(stopped(lane, at, 'merged upstream'));
    expect(code).toBe(9);
    const events = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events.map((e) => e.type)).toEqual(['start', 'idle', 'closed', 'done']);
    expect(events[2]).toMatchObject({ lane_id: lane, by: OWNER, at, reason: 'merged upstream' });
  }, 100_000);

  it('stops promptly: woken by the close, not by the end of its idle wait', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s);
    const events: WorkEvent[] = [];
    let idle!: () => void;
    const waiting = new Promise<void>((resolve) => (idle = resolve));
    const run = runWorker({
      call: s.agent,
      model: createModel('exec:false'),
      laneId: lane,
      actor: AGENT,
      // The longest lane_events wait, past the test's timeout: only the Lane's events can end
      // this wait in time.
      idleWaitMs: 60_000,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'idle') idle();
      },
    });
    await waiting;
    const at = await closeLane(lane, 'paused');
    const summary = await run;
    expect(summary).toMatchObject({
      asks: 0,
      interrupted: false,
      closed: { by: OWNER, at, reason: 'paused' },
    });
    expect(events.map((e) => e.type)).toEqual(['start', 'idle', 'closed', 'done']);
  }, 45_000);

  it('closed while it works an Ask: it finishes that work, review and landing included, then stops without taking new work', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s);
    const first = await post(lane, 'Write NOTES.md');
    const second = await post(lane, 'Never handed out');
    let at = '';
    // The Lane closes while the model thinks about the first Ask; then the model answers.
    // The Ask in hand's review is work in hand too (lane-closed.ts): the model grants it, and
    // the submission lands without a model.
    const model = (t.model = await fakeModelServer((_req, i) =>
      i === 1
        ? text(JSON.stringify({ decision: 'grant', reasons: ['fine'] }))
        : i > 1
          ? {
              status: 500,
              body: { error: { message: 'only the work and its review were expected' } },
            }
          : {
              raw: (res) => {
                void closeLane(lane, 'scope cut').then((closedAt) => {
                  at = closedAt;
                  res.writeHead(200, { 'content-type': 'application/json' });
                  res.end(JSON.stringify(goodChange.body));
                });
              },
            },
    ));
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call: s.agent,
      model: fakeOpenAI(model),
      laneId: lane,
      actor: AGENT,
      idleWaitMs: 60_000, // past the test's timeout, as above
      onEvent: (e) => events.push(e),
    });
    expect(model.requests).toHaveLength(2);
    expect(summary).toMatchObject({
      asks: 3,
      answered: 3,
      released: 0,
      failure: null,
      closed: { by: OWNER, at, reason: 'scope cut' },
    });
    const types = events.map((e) => e.type);
    expect(types.filter((t) => t !== 'step')).toEqual([
      'start',
      'claimed',
      'answered',
      'claimed',
      'answered',
      'claimed',
      'answered',
      'closed',
      'done',
    ]);
    const asks = await asksOf(s, lane);
    const work = asks.find((a) => a.ask_id === first)!;
    expect(work).toMatchObject({
      state: 'answered',
      holder: AGENT,
      answer: { outcome: 'complete' },
    });
    // Its review and submission were worked too, and the change is on main.
    const landing = asks.filter((a) => a.payload.work_ask_id === first);
    expect(landing.map((a) => [a.kind, a.state, a.answer?.outcome])).toEqual([
      ['changeset_review', 'answered', 'grant'],
      ['submit_changeset', 'answered', 'complete'],
    ]);
    expect(landing[1]!.answer!.result).toMatch(/^committed [0-9a-f]{40} to main$/);
    // New work was never handed out.
    expect(asks.find((a) => a.ask_id === second)).toMatchObject({ state: 'open', holder: null });
  }, 45_000);
});

describe('zz work: what it says, what it takes', () => {
  it('an Ask given back as the Lane closes: the backoff line promises no more work, then exit 9', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s);
    await post(lane, 'Write NOTES.md');
    let at = '';
    // The Lane closes while the model thinks; then the model (and its repair round) answers
    // what is no change at all, and the worker gives the Ask back.
    const model = (t.model = await fakeModelServer((_req, i) =>
      i > 0
        ? text('not a change')
        : {
            raw: (res) => {
              void closeLane(lane, 'scope cut').then((closedAt) => {
                at = closedAt;
                res.writeHead(200, { 'content-type': 'application/json' });
                res.end(JSON.stringify(text('not a change').body));
              });
            },
          },
    ));
    const env = privateEnv({ ZZ_TOKEN: s.agentToken, OPENAI_BASE_URL: `${model.url}/v1` });
    const r = await zz(s.dir, env, ['work', '--lane', lane, '--model', 'openai:m'], {
      timeoutMs: 60_000,
    });
    expect(r.code, r.stderr).toBe(9);
    expect(r.stderr).toBe(stopped(lane, at, 'scope cut'));
    const lines = r.stdout.trim().split('\n');
    expect(lines.some((l) => / released: /.test(l))).toBe(true);
    // Before: "… waits 4.0s before it is claimed again (given back 1 time); other Asks go on".
    expect(lines.find((l) => / waits /.test(l))).toMatch(
      /^ask-\w+ waits \d+\.\ds before this worker claims it again \(given back 1 time\)$/,
    );
    expect(r.stdout).not.toMatch(/go on/);
  }, 100_000);

  it('an idleWaitMs past lane_events’ 60 s is refused before anything runs', async () => {
    const calls: string[] = [];
    for (const idleWaitMs of [60_001, 0, 1.5, Number.NaN]) {
      await expect(
        runWorker({
          call: (tool) => {
            calls.push(tool);
            return Promise.reject(new Error('no call was expected'));
          },
          model: createModel('exec:false'),
          laneId: 'demo',
          actor: AGENT,
          idleWaitMs,
        }),
      ).rejects.toMatchObject({
        code: 'invalid_argument',
        message: expect.stringMatching(
          /^idleWaitMs must be a whole number of milliseconds from 1 to 60000 \(lane_events waits at most 60 s\)/,
        ),
      });
    }
    expect(calls).toEqual([]);
  });
});
