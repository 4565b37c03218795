import { afterEach, describe, expect, it } from 'vitest';
import {
  MAX_CALLS_PER_TURN,
  MAX_CONTENT_KEPT,
  MAX_HISTORY_BYTES,
  MAX_POSTS_PER_ASK,
  MAX_PROPOSALS_PER_ASK,
} from '../../src/work/limits.js';
import {
  fakeModelServer,
  type FakeModelServer,
  type FakeResponse,
  type RecordedRequest,
  reply,
  toolCall,
} from '../models/fake-model-server.js';
import { asksOf, demoLane, fakeOpenAI, served, workOnce, type Served } from './harness.js';

// What one model reply can make the open loop do, against a real daemon over HTTP and a fake
// model endpoint: arguments too big or too deep are answered as errors and not kept in the
// conversation; a turn runs a bounded number of calls; one held Ask posts a bounded number.

let s: Served | null = null;
let server: FakeModelServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
  await s?.cleanup();
  s = null;
});

async function setup() {
  s = await served();
  const lane = await demoLane(s, { ask_kinds: { triage: 'member' } });
  const r = await s.owner('ask_post', {
    lane_id: lane,
    kind: 'triage',
    title: 'Triage',
    priority: 0,
  });
  return { lane, askId: (r.ask as { ask_id: string }).ask_id };
}

async function work(lane: string, respond: (req: RecordedRequest, i: number) => FakeResponse) {
  server = await fakeModelServer(respond);
  return workOnce(s!, fakeOpenAI(server), lane, { kinds: ['triage'] });
}

/** The model's reply that answers the held Ask `complete`. */
const answerSplit = (lane: string, askId: string) =>
  reply('', [
    toolCall(
      'c',
      'ask_answer',
      JSON.stringify({ lane_id: lane, ask_id: askId, outcome: 'complete', result: 'split' }),
    ),
  ]);

const toolMessages = (r: RecordedRequest) =>
  (r.body.messages as { role: string; tool_call_id?: string; content: string }[]).filter(
    (m) => m.role === 'tool',
  );

describe('the open loop under a hostile model', () => {
  it('answers arguments too big or too deep as errors and keeps no bytes of them', async () => {
    const { lane, askId } = await setup();
    const big = JSON.stringify({
      lane_id: lane,
      kind: 'work',
      title: 't',
      body: 'y'.repeat(400_000),
    });
    const deep = '{"query":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    const { summary, events } = await work(lane, (_req, i) =>
      i === 0
        ? reply('', [toolCall('c1', 'ask_post', big), toolCall('c2', 'ladder_search', deep)])
        : reply('', [
            toolCall(
              'c3',
              'ask_answer',
              JSON.stringify({ lane_id: lane, ask_id: askId, outcome: 'complete', result: 'ok' }),
            ),
          ]),
    );
    expect(summary).toMatchObject({ answered: 1, released: 0 });
    const second = server!.requests[1]!;
    // The second request re-sends the conversation: small, with the calls kept as {}.
    expect(JSON.stringify(second.body).length).toBeLessThan(100_000);
    const assistant = second.body.messages.find((m: { role: string }) => m.role === 'assistant');
    expect(
      assistant.tool_calls.map((c: { function: { arguments: string } }) => c.function.arguments),
    ).toEqual(['{}', '{}']);
    const [m1, m2] = toolMessages(second);
    expect(m1!.content).toMatch(/arguments of \d+ bytes are refused: the limit is 256 KiB/);
    expect(m2!.content).toMatch(/nested deeper than 63 levels are refused/);
    const tools = events.filter((e) => e.type === 'tool') as { ok: boolean }[];
    expect(tools.map((t) => t.ok)).toEqual([false, false, true]);
    expect((await asksOf(s!, lane)).filter((a) => a.kind === 'work')).toHaveLength(0);
  });

  it(`refuses a reply of more than ${MAX_CALLS_PER_TURN} calls whole, and posts at most ${MAX_POSTS_PER_ASK} Asks per held Ask`, async () => {
    const { lane, askId } = await setup();
    const post = (id: string) =>
      toolCall(
        id,
        'ask_post',
        JSON.stringify({
          lane_id: lane,
          kind: 'work',
          title: `part ${id}`,
          body: 'z'.repeat(1000),
        }),
      );
    const { summary, events } = await work(lane, (_req, i) => {
      if (i === 0)
        return reply(
          '',
          Array.from({ length: 300 }, (_, k) => post(`a${k}`)),
        );
      if (i === 1)
        return reply(
          '',
          Array.from({ length: MAX_CALLS_PER_TURN }, (_, k) => post(`b${k}`)),
        );
      return answerSplit(lane, askId);
    });
    expect(summary).toMatchObject({ answered: 1 });
    const second = server!.requests[1]!;
    // None of the 300 ran, and none is kept: one error says why.
    expect(toolMessages(second)).toHaveLength(0);
    const last = second.body.messages.at(-1) as { role: string; content: string };
    expect(last.role).toBe('user');
    expect(last.content).toMatch(/sent 300 tool calls and none were run: a turn runs at most 8/);
    expect(JSON.stringify(second.body).length).toBeLessThan(20_000);
    const refusedPosts = toolMessages(server!.requests[2]!).filter((m) =>
      /you may post at most \d+ Asks while working one Ask/.test(m.content),
    );
    expect(refusedPosts).toHaveLength(MAX_CALLS_PER_TURN - MAX_POSTS_PER_ASK);
    const posted = (await asksOf(s!, lane)).filter((a) => a.kind === 'work');
    expect(posted.map((a) => a.title).sort()).toEqual(
      Array.from({ length: MAX_POSTS_PER_ASK }, (_, k) => `part b${k}`).sort(),
    );
    expect(events.filter((e) => e.type === 'tool' && (e as { ok: boolean }).ok)).toHaveLength(
      MAX_POSTS_PER_ASK + 1,
    );
  });

  it('keeps every request bounded: 20,000 calls and 1 MB of text in each reply', async () => {
    const { lane } = await setup();
    const calls = Array.from({ length: 20_000 }, (_, k) =>
      toolCall(`c${k}`, 'ladder_tree', JSON.stringify({})),
    );
    const { summary } = await workOnce(
      s!,
      fakeOpenAI((server = await fakeModelServer(() => reply('漢'.repeat(350_000), calls)))),
      lane,
      { kinds: ['triage'], maxTurns: 3 },
    );
    expect(summary).toMatchObject({ answered: 0, released: 1 });
    const sizes = server!.requests.map((r) => Buffer.byteLength(JSON.stringify(r.body)));
    expect(sizes).toHaveLength(3);
    // Each turn adds at most the clipped text (64 KiB) and one error line.
    for (const size of sizes) expect(size).toBeLessThan(3 * 70 * 1024);
    const kept = server!.requests[2]!.body.messages.filter(
      (m: { role: string }) => m.role === 'assistant',
    ) as { content: string }[];
    expect(kept).toHaveLength(2);
    for (const m of kept) {
      expect(Buffer.byteLength(m.content)).toBeLessThanOrEqual(MAX_CONTENT_KEPT);
      expect(m.content).toMatch(/^漢+$/); // cut at a character, not inside one
    }
  });

  it(`gives the Ask back rather than send a conversation past ${MAX_HISTORY_BYTES} bytes`, async () => {
    const { lane, askId } = await setup();
    // Arguments under the per-call bound, kept in the history: 8 × 250 KB a turn.
    const calls = Array.from({ length: MAX_CALLS_PER_TURN }, (_, k) =>
      toolCall(`q${k}`, 'ladder_search', JSON.stringify({ query: 'q'.repeat(250_000) })),
    );
    const { summary, events } = await work(lane, () => reply('', calls));
    expect(summary).toMatchObject({ answered: 0, released: 1 });
    const sizes = server!.requests.map((r) => Buffer.byteLength(JSON.stringify(r.body)));
    expect(Math.max(...sizes)).toBeLessThan(MAX_HISTORY_BYTES + 100_000);
    const released = events.find((e) => e.type === 'released') as { reason?: string } | undefined;
    expect(JSON.stringify(released)).toMatch(/past the \d+-byte bound/);
    expect((await asksOf(s!, lane)).find((a) => a.ask_id === askId)?.state).toBe('open');
  });

  it('answers a prose reply of 200,000 CJK characters, cut to 256 KiB of UTF-8 at a character', async () => {
    const { lane, askId } = await setup();
    const { summary } = await work(lane, () => reply('漢'.repeat(200_000)));
    expect(summary).toMatchObject({ answered: 1, released: 0 });
    const ask = (await asksOf(s!, lane)).find((a) => a.ask_id === askId)!;
    expect(ask.answer?.outcome).toBe('complete');
    const result = ask.answer!.result!;
    expect(Buffer.byteLength(result)).toBeLessThanOrEqual(256 * 1024);
    expect(Buffer.byteLength(result)).toBeGreaterThan(256 * 1024 - 3);
    expect(result).toMatch(/^漢+$/);
  });

  it(`proposes at most ${MAX_PROPOSALS_PER_ASK} Lanes per held Ask`, async () => {
    const { lane, askId } = await setup();
    const propose = (k: number) =>
      toolCall(
        `p${k}`,
        'lane_propose',
        JSON.stringify({ lane_id: `part-${k}`, title: `Part ${k}` }),
      );
    const { summary, events } = await work(lane, (_req, i) => {
      // Two turns under the per-turn cap, together past the per-Ask one.
      if (i < 2)
        return reply(
          '',
          Array.from({ length: 4 }, (_, k) => propose(i * 4 + k)),
        );
      return answerSplit(lane, askId);
    });
    expect(summary).toMatchObject({ answered: 1 });
    const refused = toolMessages(server!.requests[2]!).filter((m) =>
      /you may propose at most \d+ Lanes while working one Ask/.test(m.content),
    );
    expect(refused).toHaveLength(8 - MAX_PROPOSALS_PER_ASK);
    const lanes = (await s!.owner('lane_list', {})).lanes as { lane_id: string }[];
    expect(lanes.filter((l) => l.lane_id.startsWith('part-'))).toHaveLength(MAX_PROPOSALS_PER_ASK);
    const proposals = events.filter((e) => e.type === 'tool' && e.tool === 'lane_propose');
    expect(proposals.filter((e) => (e as { ok: boolean }).ok)).toHaveLength(MAX_PROPOSALS_PER_ASK);
  });

  it('keeps an API key the endpoint echoes out of the release reason in the Lane', async () => {
    const { lane, askId } = await setup();
    server = await fakeModelServer((req) => ({
      status: 400,
      body: { error: { message: `bad request from ${String(req.headers.authorization)}` } },
    }));
    const model = fakeOpenAI(server, { OPENAI_API_KEY: 'sk-LANE-SECRET-1234' });
    const { events } = await workOnce(s!, model, lane, { kinds: ['triage'] });
    const history = (await s!.owner('lane_get', { lane_id: lane })).history as {
      op: string;
      ask_id: string | null;
      args: { reason?: string };
    }[];
    const release = history.find((h) => h.op === 'ask_release' && h.ask_id === askId);
    expect(release?.args.reason).toMatch(/HTTP 400: bad request from Bearer \[redacted\]/);
    expect(JSON.stringify(history)).not.toContain('sk-LANE-SECRET');
    expect(JSON.stringify(events)).not.toContain('sk-LANE-SECRET');
  });
});
