import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { createModel, retryAfterMs, type ToolSpec } from '../../src/models/index.js';
import {
  fakeModelServer,
  loadTranscript,
  type FakeModelServer,
  type FakeResponse,
} from './fake-model-server.js';

// The OpenAI-compatible and Anthropic adapters against fake endpoints on 127.0.0.1 replaying
// recorded transcripts (fixtures/models/): wire shapes both ways, usage, structured output with
// its repair round, retries honouring Retry-After, timeouts.

const review = z.object({ decision: z.enum(['grant', 'deny']), reasons: z.array(z.string()) });
const readTool: ToolSpec = {
  name: 'ladder_read',
  description: 'Read one rung',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

let server: FakeModelServer | null = null;
/** A 200 whose body is exactly `text` (the fake server would send `{}` for a null body). */
const literal = (text: string): FakeResponse => ({
  raw: (res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(text);
  },
});
afterEach(async () => {
  await server?.close();
  server = null;
});

const openai = (s: FakeModelServer, extra: Record<string, unknown> = {}) =>
  createModel('openai:llama3.1', {
    env: { OPENAI_BASE_URL: `${s.url}/v1`, OPENAI_API_KEY: 'sk-test-secret' },
    baseDelayMs: 1,
    ...extra,
  });
const anthropic = (s: FakeModelServer, extra: Record<string, unknown> = {}) =>
  createModel('anthropic:claude-sonnet-4-5', {
    env: { ANTHROPIC_BASE_URL: s.url, ANTHROPIC_API_KEY: 'sk-ant-secret' },
    baseDelayMs: 1,
    ...extra,
  });

describe('openai: adapter', () => {
  it('runs a tool-calling round trip and sums usage', async () => {
    server = await fakeModelServer(loadTranscript('openai-tool-round.json'));
    const m = openai(server);
    const first = await m.chat({
      system: 'You are an agent.',
      messages: [{ role: 'user', content: 'What is src/index.ts?' }],
      tools: [readTool],
    });
    expect(first.tool_calls).toEqual([
      { id: 'call_x1k9', name: 'ladder_read', arguments: { path: 'src/index.ts' } },
    ]);
    const second = await m.chat({
      system: 'You are an agent.',
      messages: [
        { role: 'user', content: 'What is src/index.ts?' },
        { role: 'assistant', content: '', tool_calls: first.tool_calls },
        { role: 'tool', tool_call_id: 'call_x1k9', content: '{"summary":"exports"}' },
      ],
      tools: [readTool],
    });
    expect(second.content).toBe('src/index.ts re-exports the public API.');
    expect(m.usage()).toEqual({ input_tokens: 892, output_tokens: 33, calls: 2 });

    const [r1, r2] = server.requests;
    expect(r1!.path).toBe('/v1/chat/completions');
    expect(r1!.headers.authorization).toBe('Bearer sk-test-secret');
    expect(r1!.body.model).toBe('llama3.1');
    expect(r1!.body.messages[0]).toEqual({ role: 'system', content: 'You are an agent.' });
    expect(r1!.body.tools[0]).toEqual({
      type: 'function',
      function: {
        name: 'ladder_read',
        description: 'Read one rung',
        parameters: readTool.input_schema,
      },
    });
    expect(r2!.body.messages[2].tool_calls[0].function).toEqual({
      name: 'ladder_read',
      arguments: '{"path":"src/index.ts"}',
    });
    expect(r2!.body.messages[3]).toEqual({
      role: 'tool',
      tool_call_id: 'call_x1k9',
      content: '{"summary":"exports"}',
    });
  });

  it('asks for strict json_schema output and validates it', async () => {
    server = await fakeModelServer(loadTranscript('openai-structured.json'));
    const r = await openai(server).object({
      system: 's',
      messages: [{ role: 'user', content: 'review' }],
      schema: review,
      name: 'review',
    });
    expect(r.object).toEqual({ decision: 'grant', reasons: ['the change is small and tested'] });
    expect(r.repaired).toBe(false);
    const rf = server.requests[0]!.body.response_format;
    expect(rf.type).toBe('json_schema');
    expect(rf.json_schema.name).toBe('review');
    expect(rf.json_schema.strict).toBe(true);
    expect(rf.json_schema.schema.required).toEqual(['decision', 'reasons']);
  });

  it('gives invalid structured output one repair round, then fails clearly', async () => {
    const bad = { choices: [{ message: { content: '{"decision":"maybe","reasons":[]}' } }] };
    const good = {
      choices: [{ message: { content: '```json\n{"decision":"deny","reasons":["x"]}\n```' } }],
    };
    server = await fakeModelServer([{ body: bad }, { body: good }]);
    const r = await openai(server).object({
      system: 's',
      messages: [{ role: 'user', content: 'q' }],
      schema: review,
    });
    expect(r).toMatchObject({ object: { decision: 'deny', reasons: ['x'] }, repaired: true });
    const repair = server.requests[1]!.body.messages;
    expect(repair.at(-2)).toEqual({
      role: 'assistant',
      content: '{"decision":"maybe","reasons":[]}',
    });
    expect(repair.at(-1).content).toMatch(/decision/);
    await server.close();

    server = await fakeModelServer([{ body: bad }, { body: bad }, { body: good }]);
    await expect(
      openai(server).object({
        system: 's',
        messages: [{ role: 'user', content: 'q' }],
        schema: review,
      }),
    ).rejects.toMatchObject({ code: 'unavailable', details: { reason: 'invalid_output' } });
    expect(server.requests).toHaveLength(2);
  });

  it('retries 429 and 5xx, honouring Retry-After', async () => {
    const ok = loadTranscript('openai-structured.json')[0]!;
    server = await fakeModelServer([
      { status: 429, headers: { 'retry-after': '1' }, body: { error: { message: 'slow down' } } },
      { status: 503, headers: { 'retry-after-ms': '20' }, body: 'overloaded' },
      { status: 502, body: {} },
      ok,
    ]);
    const retries: { attempt: number; delayMs: number; reason: string }[] = [];
    const m = openai(server, { onRetry: (i: (typeof retries)[number]) => retries.push(i) });
    const r = await m.chat({ system: 's', messages: [{ role: 'user', content: 'q' }] });
    expect(r.content).toContain('grant');
    expect(retries.map((x) => x.delayMs).slice(0, 2)).toEqual([1000, 20]);
    expect(retries[0]!.reason).toMatch(/HTTP 429: slow down/);
    expect(retries).toHaveLength(3);
    expect(m.usage().calls).toBe(1);
  });

  it('never lets a Retry-After of zero or in the past shorten the backoff', async () => {
    const ok = loadTranscript('openai-structured.json')[0]!;
    const past = new Date(Date.now() - 3_600_000).toUTCString();
    server = await fakeModelServer([
      { status: 503, headers: { 'retry-after-ms': '0' }, body: {} },
      { status: 429, headers: { 'retry-after': past }, body: {} },
      { status: 429, headers: { 'retry-after': '0' }, body: {} },
      ok,
    ]);
    // Jitter at its top, so the backoff is exactly base·2^attempt.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.999999);
    try {
      const delays: number[] = [];
      const m = openai(server, {
        baseDelayMs: 40,
        onRetry: (i: { delayMs: number }) => delays.push(i.delayMs),
      });
      await m.chat({ system: 's', messages: [{ role: 'user', content: 'q' }] });
      expect(delays).toEqual([40, 80, 160]);
    } finally {
      random.mockRestore();
    }
  });

  it('fails clearly when Retry-After is longer than it will wait, without hammering', async () => {
    server = await fakeModelServer([
      { status: 429, headers: { 'retry-after': '3600' }, body: {} },
      loadTranscript('openai-structured.json')[0]!,
    ]);
    await expect(
      openai(server).chat({ system: 's', messages: [{ role: 'user', content: 'q' }] }),
    ).rejects.toThrow(/retry after 3600 s/);
    expect(server.requests).toHaveLength(1);
  });

  it('does not retry a 400 and quotes the endpoint error', async () => {
    server = await fakeModelServer([
      { status: 400, body: { error: { message: 'model "nope" not found' } } },
    ]);
    await expect(
      openai(server).chat({ system: 's', messages: [{ role: 'user', content: 'q' }] }),
    ).rejects.toThrow(/HTTP 400: model "nope" not found/);
    expect(server.requests).toHaveLength(1);
  });

  it('times out a call that never answers, per attempt, then gives up', async () => {
    server = await fakeModelServer([{ hang: true }, { hang: true }]);
    const m = openai(server, { timeoutMs: 200, maxRetries: 1 });
    await expect(
      m.chat({ system: 's', messages: [{ role: 'user', content: 'q' }] }),
    ).rejects.toThrow(/failed after 2 attempts: no answer within 200 ms/);
    expect(server.requests).toHaveLength(2);
  });

  it('stops reading an answer at 32 MiB, not when the endpoint stops sending', async () => {
    // A chunked body has no content-length to refuse up front; it was read whole before its
    // size was checked, so an endpoint that never stops sending grew zz by GiBs until the
    // call's timeout (1.3 GiB after 15 s on loopback), then the retries began again.
    server = await fakeModelServer([
      {
        raw: (res) => {
          res.writeHead(200, { 'content-type': 'application/json' });
          const chunk = Buffer.alloc(1 << 20, 32);
          const more = () => {
            while (!res.destroyed && res.write(chunk));
            if (!res.destroyed) res.once('drain', more);
          };
          more();
        },
      },
    ]);
    const started = Date.now();
    const err = await openai(server, { timeoutMs: 60_000, maxRetries: 0 })
      .chat({ system: 's', messages: [{ role: 'user', content: 'q' }] })
      .catch((e: Error) => e);
    expect(String((err as Error).message)).toMatch(/sent more than 32 MiB/);
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 150_000);

  it('says an answer was cut off, not that it could not connect', async () => {
    server = await fakeModelServer([
      {
        raw: (res) => {
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
          res.write('{"choices":[{"message":{"content":"');
          setTimeout(() => res.destroy(), 50);
        },
      },
    ]);
    await expect(
      openai(server, { maxRetries: 0 }).chat({
        system: 's',
        messages: [{ role: 'user', content: 'q' }],
      }),
    ).rejects.toThrow(/failed after 1 attempt: the answer was cut off/);
  });

  it('refuses an answer of the wrong shape clearly, and counts only numeric usage', async () => {
    // The wire answer was cast, not checked: `null` made a TypeError ("internal error", exit 1,
    // "a bug in zz"), and string token counts were concatenated into the usage line.
    server = await fakeModelServer([
      literal('null'),
      { body: { choices: [{ message: { content: 5 } }] } },
      { body: { choices: [{ message: { content: '', tool_calls: 'x' } }] } },
      {
        body: {
          choices: [{ message: { content: 'ok' } }],
          usage: { prompt_tokens: 'lots', completion_tokens: -5 },
        },
      },
    ]);
    const m = openai(server, { maxRetries: 0 });
    const ask = () => m.chat({ system: 's', messages: [{ role: 'user', content: 'q' }] });
    for (const why of [/answered without choices/, /content.*not a string/, /tool_calls.*array/]) {
      const err = (await ask().catch((e: unknown) => e)) as { code?: string; message?: string };
      expect(err.code, err.message).toBe('unavailable');
      expect(err.message).toMatch(why);
    }
    expect((await ask()).usage).toMatchObject({ input_tokens: 0, output_tokens: 0 });
  });

  it('keeps the API key out of error messages', async () => {
    server = await fakeModelServer([{ status: 401, body: { error: { message: 'bad key' } } }]);
    const err = await openai(server)
      .chat({ system: 's', messages: [{ role: 'user', content: 'q' }] })
      .catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'unauthorized' });
    expect(String((err as Error).message)).not.toContain('sk-test-secret');
  });
});

describe('secrets in adapter errors', () => {
  it('refuses a base URL with a password, naming the key variable, never the password', () => {
    for (const [spec, env] of [
      ['openai:x', { OPENAI_BASE_URL: 'http://user:sk-PASSWORD@127.0.0.1:9/v1' }],
      ['anthropic:x', { ANTHROPIC_BASE_URL: 'http://user:sk-PASSWORD@127.0.0.1:9' }],
    ] as const) {
      let err: unknown;
      try {
        createModel(spec, { env });
      } catch (e) {
        err = e;
      }
      expect(err).toMatchObject({ code: 'invalid_argument' });
      expect(String((err as Error).message)).toMatch(/_API_KEY instead/);
      expect(String((err as Error).message)).not.toContain('PASSWORD');
    }
  });

  it('takes a key the endpoint echoes back out of retry reasons and the final error', async () => {
    // An endpoint (a proxy, a debug server) that quotes the request headers in its error body.
    const echo = (status: number) => (req: { headers: Record<string, unknown> }) => ({
      status,
      body: {
        error: {
          message: `denied: auth=${String(req.headers.authorization)} key=${String(req.headers['x-api-key'])}`,
        },
      },
    });
    for (const status of [500, 400]) {
      server = await fakeModelServer([echo(status), echo(status)]);
      for (const m of [openai, anthropic]) {
        const reasons: string[] = [];
        const err = await m(server, {
          maxRetries: 1,
          onRetry: (i: { reason: string }) => reasons.push(i.reason),
        })
          .chat({ system: 's', messages: [{ role: 'user', content: 'q' }] })
          .catch((e: Error) => e);
        const texts = [String((err as Error).message), ...reasons];
        expect(texts.join('\n')).toMatch(/denied: auth=/);
        for (const t of texts) {
          expect(t).not.toContain('sk-test-secret');
          expect(t).not.toContain('sk-ant-secret');
        }
        server.requests.length = 0;
      }
      await server.close();
      server = null;
    }
  });
});

describe('secrets echoed in forms and places the exact match misses', () => {
  // A key with `/`, `+` and `=`, so its percent-encoded and JSON-escaped forms differ from it.
  const KEY = 'sk-test/AbC+dEf=0123456789abcdefghijklmnopqrstuv';
  const raw = (text: string): FakeResponse => ({
    raw: (res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(text);
    },
  });
  it('redacts a key cut by the quote, percent-encoded or JSON-escaped', async () => {
    const bodies = [
      // The key at offset ~250: the 300-character quote cuts it, so it must go before the cut.
      JSON.stringify({ error: { message: `${'x'.repeat(250)} key ${KEY} is bad` } }),
      // A cut falling inside the key even when the key itself is not echoed whole.
      JSON.stringify({ error: { message: `${'y'.repeat(280)} ${KEY.slice(0, 30)}` } }),
      JSON.stringify({ error: { message: `bad request for /v1?key=${encodeURIComponent(KEY)}` } }),
      `<html>${JSON.stringify({ key: KEY }).replace(/\//g, '\\/')}</html>`,
    ];
    server = await fakeModelServer(bodies.map(raw));
    for (let i = 0; i < bodies.length; i++) {
      const err = await createModel('openai:gpt-x', {
        env: { OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: KEY },
        maxRetries: 0,
      })
        .chat({ system: 's', messages: [{ role: 'user', content: 'hi' }] })
        .catch((e: Error) => e);
      const msg = String((err as Error).message);
      expect(msg, `body ${i}`).toContain('[redacted]');
      for (const piece of ['AbC', '0123456789', 'dEf'])
        expect(msg, `body ${i}`).not.toContain(piece);
    }
  });
});

describe('tool-call arguments over the caps', () => {
  it('refuses Anthropic input too deep or too big, keeping {} (no stack overflow)', async () => {
    const block = (id: string, input: string) =>
      `{"type":"tool_use","id":"${id}","name":"ladder_search","input":${input}}`;
    const deep = '{"q":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}';
    const big = JSON.stringify({ q: 'x'.repeat(300_000) });
    server = await fakeModelServer([
      literal(
        `{"content":[${block('t1', deep)},${block('t2', big)},${block('t3', '{"q":"ok"}')}]}`,
      ),
    ]);
    const r = await anthropic(server).chat({
      system: 's',
      messages: [{ role: 'user', content: 'q' }],
      tools: [readTool],
    });
    expect(r.tool_calls).toEqual([
      expect.objectContaining({
        id: 't1',
        arguments: {},
        parse_error: expect.stringMatching(/nested deeper than 63/),
      }),
      expect.objectContaining({
        id: 't2',
        arguments: {},
        parse_error: expect.stringMatching(/the limit is 256 KiB/),
      }),
      { id: 't3', name: 'ladder_search', arguments: { q: 'ok' } },
    ]);
  });
});

describe('redirects', () => {
  it('does not follow a redirect, so the key never reaches the host it names', async () => {
    const elsewhere = await fakeModelServer(() => loadTranscript('openai-structured.json')[0]!);
    try {
      for (const status of [301, 302, 307, 308]) {
        server = await fakeModelServer(() => ({
          status,
          headers: { location: `${elsewhere.url}/v1/messages` },
          body: {},
        }));
        for (const m of [openai, anthropic]) {
          await expect(
            m(server).chat({ system: 's', messages: [{ role: 'user', content: 'q' }] }),
          ).rejects.toThrow(new RegExp(`redirected the request \\(HTTP ${status} to http`));
        }
        await server.close();
        server = null;
      }
      expect(elsewhere.requests).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });
});

describe('anthropic: adapter', () => {
  it('runs a tool-calling round trip in the Messages wire format', async () => {
    server = await fakeModelServer(loadTranscript('anthropic-tool-round.json'));
    const m = anthropic(server);
    const first = await m.chat({
      system: 'You are an agent.',
      messages: [{ role: 'user', content: 'What is src/index.ts?' }],
      tools: [readTool],
    });
    expect(first.content).toBe('I will read the rung first.');
    expect(first.tool_calls).toEqual([
      {
        id: 'toolu_01A09q90qw90lq917835lq9',
        name: 'ladder_read',
        arguments: { path: 'src/index.ts' },
      },
    ]);
    await m.chat({
      system: 'You are an agent.',
      messages: [
        { role: 'user', content: 'What is src/index.ts?' },
        { role: 'assistant', content: first.content, tool_calls: first.tool_calls },
        { role: 'tool', tool_call_id: first.tool_calls[0]!.id, content: 'one' },
        { role: 'tool', tool_call_id: 'toolu_other', content: 'two' },
      ],
      tools: [readTool],
    });
    expect(m.usage()).toEqual({ input_tokens: 1112, output_tokens: 54, calls: 2 });
    const [r1, r2] = server.requests;
    expect(r1!.path).toBe('/v1/messages');
    expect(r1!.headers['x-api-key']).toBe('sk-ant-secret');
    expect(r1!.headers['anthropic-version']).toBe('2023-06-01');
    expect(r1!.body.system).toBe('You are an agent.');
    expect(r1!.body.max_tokens).toBe(4096);
    expect(r1!.body.tools[0]).toEqual(readTool);
    expect(r2!.body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'What is src/index.ts?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'I will read the rung first.' },
          {
            type: 'tool_use',
            id: 'toolu_01A09q90qw90lq917835lq9',
            name: 'ladder_read',
            input: { path: 'src/index.ts' },
          },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01A09q90qw90lq917835lq9', content: 'one' },
          { type: 'tool_result', tool_use_id: 'toolu_other', content: 'two' },
        ],
      },
    ]);
  });

  it('refuses a null answer clearly, not with a TypeError', async () => {
    server = await fakeModelServer([literal('null')]);
    const err = (await anthropic(server)
      .chat({ system: 's', messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e)) as { code?: string; message?: string };
    expect(err.code, err.message).toBe('unavailable');
    expect(err.message).toMatch(/without a content array/);
  });

  it('gets structured output through a forced answer tool', async () => {
    server = await fakeModelServer(loadTranscript('anthropic-structured.json'));
    const r = await anthropic(server).object({
      system: 's',
      messages: [{ role: 'user', content: 'review' }],
      schema: review,
    });
    expect(r.object).toEqual({ decision: 'deny', reasons: ['no test covers the new branch'] });
    const body = server.requests[0]!.body;
    expect(body.tool_choice).toEqual({ type: 'tool', name: 'zz_answer' });
    expect(body.tools[0].input_schema.properties.decision.enum).toEqual(['grant', 'deny']);
  });
});

describe('model specs and Retry-After', () => {
  it('rejects unknown providers and missing keys with a clear message', () => {
    expect(() => createModel('gpt-4o')).toThrow(
      /openai:<model>, anthropic:<model>, exec:<command>/,
    );
    expect(() => createModel('openai:gpt-4o', { env: {} })).toThrow(/OPENAI_API_KEY is not set/);
    expect(() => createModel('anthropic:claude', { env: {} })).toThrow(/ANTHROPIC_API_KEY/);
  });

  it('parses Retry-After as seconds, HTTP date and retry-after-ms', () => {
    const now = Date.parse('2026-12-01T00:00:00Z');
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Tue, 01 Dec 2026 00:00:05 GMT' }), now)).toBe(
      5000,
    );
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '150', 'retry-after': '9' }), now)).toBe(
      150,
    );
    expect(retryAfterMs(new Headers({ 'retry-after': 'soon' }), now)).toBeNull();
  });
});
