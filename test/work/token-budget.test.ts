import { describe, expect, it } from 'vitest';
import { runWorker, type WorkEvent } from '../../src/work/index.js';
import { fakeModelServer, reply, toolCall } from '../models/fake-model-server.js';
import { AGENT, asksOf, demoLane, endEachTest, fakeOpenAI, served, workOnce } from './harness.js';

// One Ask's model tokens are bounded: an Ask that keeps the model busy is given back once it
// has spent its budget, with the reason, and no further call is made. A real daemon over HTTP
// and a fake model reporting 600 tokens a call.

const t = endEachTest();

/** A model that never answers: it searches again every turn, reporting `usage` each call. */
const searchesForever = (usage: Record<string, number> | undefined) =>
  fakeModelServer((_req, i) => {
    const r = reply('', [toolCall(`c${i}`, 'ladder_search', { query: 'x' })]);
    return { body: { ...(r.body as object), usage } };
  });

describe('the token budget of one Ask', () => {
  it('gives the Ask back once spent, saying so, and calls the model no more', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s, { ask_kinds: { triage: 'member' } });
    await s.owner('ask_post', { lane_id: lane, kind: 'triage', title: 'Keep reading' });
    // Never answers: searches again every turn, 600 tokens a call.
    const model = (t.model = await searchesForever({ prompt_tokens: 500, completion_tokens: 100 }));
    const { summary, events } = await workOnce(s, fakeOpenAI(model), lane, {
      kinds: ['triage'],
      maxTokensPerAsk: 1000,
    });
    // 600 after the first call, 1200 after the second: the third is never made.
    expect(model.requests).toHaveLength(2);
    expect(summary).toMatchObject({ answered: 0, released: 1 });
    expect(summary.failure?.reason).toMatch(/spent 1200 model tokens, past its budget of 1000/);
    expect(events.find((e) => e.type === 'released')).toMatchObject({
      reason: expect.stringContaining('--max-tokens-per-ask'),
    });
    const ask = (await asksOf(s, lane)).find((a) => a.kind === 'triage')!;
    expect(ask).toMatchObject({ state: 'open', holder: null });
  });

  it('counts an estimate (characters / 4) when the endpoint reports no usage', async () => {
    const s = (t.s = await served());
    const lane = await demoLane(s, { ask_kinds: { triage: 'member' } });
    await s.owner('ask_post', { lane_id: lane, kind: 'triage', title: 'Keep reading' });
    // Never answers and reports no usage at all: without the estimate the budget counted 0.
    const model = (t.model = await searchesForever(undefined));
    const { summary } = await workOnce(s, fakeOpenAI(model), lane, {
      kinds: ['triage'],
      maxTokensPerAsk: 1000,
      maxTurns: 20,
    });
    // The prompt (system text and tool specs) alone is past 4,000 characters: one call spends it.
    expect(model.requests).toHaveLength(1);
    expect(summary).toMatchObject({ answered: 0, released: 1 });
    expect(summary.failure?.reason).toMatch(/spent \d+ model tokens, past its budget of 1000/);
  });

  it('parks an Ask past its budget at once: a fresh claim would spend a fresh budget', async () => {
    // Given back as any failure, the same worker claimed it again after its backoff, a fresh
    // 500,000 tokens each time, until 8 give-backs parked it (whole-diff review M2).
    const s = (t.s = await served());
    const lane = await demoLane(s, { ask_kinds: { triage: 'member' } });
    await s.owner('ask_post', { lane_id: lane, kind: 'triage', title: 'Keep reading' });
    const model = (t.model = await searchesForever({ prompt_tokens: 500, completion_tokens: 100 }));
    const stop = new AbortController();
    const events: WorkEvent[] = [];
    const summary = await runWorker({
      call: s.agent,
      model: fakeOpenAI(model),
      laneId: lane,
      actor: AGENT,
      kinds: ['triage'],
      maxTokensPerAsk: 1000,
      signal: stop.signal,
      failureBackoffMs: 2,
      idleWaitMs: 200,
      onEvent: (e) => {
        events.push(e);
        // Well past the Ask's next wait (2 ms doubled), were it not parked.
        if (e.type === 'backoff') setTimeout(() => stop.abort(), 1500);
      },
    });
    expect(summary.asks).toBe(1);
    expect(model.requests).toHaveLength(2);
    expect(events.filter((e) => e.type === 'backoff')).toMatchObject([{ parked: true }]);
  });
});
