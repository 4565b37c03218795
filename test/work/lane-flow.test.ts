import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createModel, type Model } from '../../src/models/index.js';
import { runWorker, type WorkEvent } from '../../src/work/index.js';
import { sh } from '../helpers/temp-repo.js';
import {
  fakeModelServer,
  type FakeModelServer,
  type RecordedRequest,
} from '../models/fake-model-server.js';
import { AGENT, asksOf, demoLane, served, type Served } from './harness.js';

// A whole Lane driven by `zz work`'s loop over real HTTP: a posted `work` Ask is worked by the
// model (structured output), reviewed (granted), submitted, and lands as a commit on main —
// once with an OpenAI-compatible endpoint (fake, on 127.0.0.1) and once with an exec: script.

const GREET = 'export function greet(name) {\n  return `Hello, ${name}!`;\n}\n';
const change = { message: 'Add greet()', files: [{ path: 'src/greet.js', content: GREET }] };
const review = { decision: 'grant', reasons: ['adds exactly what was asked'] };

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

async function openaiModel(): Promise<{ model: Model; requests: () => RecordedRequest[] }> {
  server = await fakeModelServer((req) => {
    const name = req.body.response_format?.json_schema?.name;
    const content = JSON.stringify(name === 'review' ? review : change);
    return {
      body: {
        choices: [{ message: { role: 'assistant', content } }],
        usage: { prompt_tokens: 100, completion_tokens: 20 },
      },
    };
  });
  const srv = server;
  return {
    model: createModel('openai:qwen2.5-coder', {
      env: { OPENAI_BASE_URL: `${srv.url}/v1` },
    }),
    requests: () => srv.requests.map((r) => r),
  };
}

async function anthropicModel(): Promise<{ model: Model; requests: () => RecordedRequest[] }> {
  server = await fakeModelServer((req) => {
    // The structured answer arrives as the forced answer tool's input.
    const props = req.body.tools?.find((t: { name: string }) => t.name === 'zz_answer')
      ?.input_schema?.properties;
    const input = props?.decision ? review : change;
    return {
      body: {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_1', name: 'zz_answer', input }],
        stop_reason: 'tool_use',
        usage: { input_tokens: 100, output_tokens: 20 },
      },
    };
  });
  const srv = server;
  return {
    model: createModel('anthropic:claude-sonnet-4-5', {
      env: { ANTHROPIC_BASE_URL: srv.url, ANTHROPIC_API_KEY: 'sk-ant-test' },
    }),
    // Anthropic requests carry the answer tool; the flows offered the model no other tool.
    requests: () =>
      srv.requests.map((r) => ({
        ...r,
        body: {
          ...r.body,
          tools: r.body.tools?.filter((t: { name: string }) => t.name !== 'zz_answer').length
            ? r.body.tools
            : undefined,
        },
      })),
  };
}

async function execModel(): Promise<{ model: Model; requests: () => RecordedRequest[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'zz-exec-agent-'));
  dirs.push(dir);
  const log = join(dir, 'requests.jsonl');
  const script = join(dir, 'agent.mjs');
  writeFileSync(
    script,
    `import { appendFileSync } from 'node:fs';
const chunks = [];
process.stdin.on('data', (c) => chunks.push(c));
process.stdin.on('end', () => {
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  appendFileSync(${JSON.stringify(log)}, JSON.stringify(req) + '\\n');
  const isReview = !!req.response_schema?.properties?.decision;
  process.stdout.write(JSON.stringify({ object: isReview ? ${JSON.stringify(review)} : ${JSON.stringify(change)}, usage: { input_tokens: 50, output_tokens: 10 } }));
});
`,
  );
  chmodSync(script, 0o755);
  return {
    model: createModel(`exec:node ${script}`),
    requests: () => {
      return readFileSync(log, 'utf8')
        .trim()
        .split('\n')
        .map((l) => ({ path: 'exec', headers: {}, body: JSON.parse(l) }));
    },
  };
}

describe.each([
  ['openai:', openaiModel],
  ['anthropic:', anthropicModel],
  ['exec:', execModel],
])('a Lane driven with %s', (_name, makeModel) => {
  it('takes a posted work Ask through review and submit to a commit on main', async () => {
    s = await served();
    const lane = await demoLane(s);
    const posted = await s.owner('ask_post', {
      lane_id: lane,
      kind: 'work',
      title: 'Add src/greet.js exporting greet(name)',
      body: 'greet("Ada") returns "Hello, Ada!"',
    });
    const workAskId = (posted.ask as { ask_id: string }).ask_id;
    const { model, requests } = await makeModel();

    const events: WorkEvent[] = [];
    const stop = new AbortController();
    let answered = 0;
    const summary = await runWorker({
      call: s.agent,
      model,
      laneId: lane,
      actor: AGENT,
      signal: stop.signal,
      idleWaitMs: 5_000,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'answered') answered++;
        // Work, review and submit answered, and the queue is empty: stop the worker.
        if (e.type === 'idle' && answered >= 3) stop.abort();
      },
    });

    expect(summary).toMatchObject({ asks: 3, answered: 3, released: 0 });
    expect(sh(s.dir, 'show', 'main:src/greet.js') + '\n').toBe(GREET);
    expect(sh(s.dir, 'log', '-1', '--format=%s', 'main')).toBe('Add greet()');

    const asks = await asksOf(s, lane);
    const work = asks.find((a) => a.ask_id === workAskId)!;
    const rev = asks.find((a) => a.kind === 'changeset_review')!;
    const submit = asks.find((a) => a.kind === 'submit_changeset')!;
    expect(work.answer).toMatchObject({
      outcome: 'complete',
      changeset_id: expect.stringMatching(/^cs-/),
    });
    expect(rev.answer?.outcome).toBe('grant');
    expect(rev.payload.changeset_id).toBe(work.answer!.changeset_id);
    expect(submit.answer?.outcome).toBe('complete');
    expect(asks.every((a) => a.state === 'answered')).toBe(true);

    const claimed = events
      .filter((e) => e.type === 'claimed')
      .map((e) => (e as { kind: string }).kind);
    expect(claimed).toEqual(['work', 'changeset_review', 'submit_changeset']);
    // Two model calls (the change, the review); submit is code only. The model was never
    // given tools in these flows: the change travelled as structured output, not arguments.
    const reqs = requests();
    expect(reqs).toHaveLength(2);
    for (const r of reqs) expect(r.body.tools).toBeUndefined();
    const workPrompt = JSON.stringify(reqs[0]!.body.messages);
    expect(workPrompt).toContain('Add src/greet.js exporting greet(name)');
    const reviewPrompt = JSON.stringify(reqs[1]!.body.messages);
    expect(reviewPrompt).toContain('+export function greet(name) {');
    const done = events.at(-1) as Extract<WorkEvent, { type: 'done' }>;
    expect(done.usage.calls).toBe(2);
    expect(done.usage.input_tokens).toBeGreaterThan(0);
  });
});
