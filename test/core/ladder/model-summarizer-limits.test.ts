import { afterEach, describe, expect, it } from 'vitest';
import {
  MAX_FAILURES_IN_A_ROW,
  MODEL_CONCURRENCY,
  modelSummarizer,
} from '../../../src/core/ladder/model-summarizer.js';
import { createModel } from '../../../src/models/index.js';
import { fakeModelServer, type FakeModelServer } from '../../models/fake-model-server.js';

// `zz ladder build --model` against a failing endpoint on loopback: a bounded number of calls
// at once, and none after a few failures in a row (at once after a refused key); every file
// still gets its extractive summary.

let server: FakeModelServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function failing(status: number) {
  let inflight = 0;
  const seen = { max: 0 };
  server = await fakeModelServer(() => {
    inflight++;
    seen.max = Math.max(seen.max, inflight);
    return {
      raw: (res) =>
        setTimeout(() => {
          inflight--;
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { message: `status ${status}` } }));
        }, 100),
    };
  });
  const model = createModel('openai:m', {
    env: { OPENAI_BASE_URL: `${server.url}/v1` },
    maxRetries: 0,
  });
  return { model, seen };
}

const files = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => [`src/f${i}.ts`, Buffer.from(`export const f${i} = 1;\n`)] as const,
  );

describe('the model summariser against a failing endpoint', () => {
  it(`runs at most ${MODEL_CONCURRENCY} calls at once and stops after ${MAX_FAILURES_IN_A_ROW} failures in a row`, async () => {
    const { model, seen } = await failing(500);
    const s = modelSummarizer({ model });
    const out = await Promise.all(files(64).map(([p, c]) => s.file(p, c)));
    expect(seen.max).toBeLessThanOrEqual(MODEL_CONCURRENCY);
    // The calls in flight when the third failure came back may still fail; no more start.
    expect(server!.requests.length).toBeLessThanOrEqual(
      MAX_FAILURES_IN_A_ROW + MODEL_CONCURRENCY - 1,
    );
    expect(out.every((e) => e?.generator?.method === 'extractive')).toBe(true);
    expect(s.stats.fallback).toBe(64);
    expect(s.stats.lastError).toMatch(/stopped calling the model after \d+ failures in a row/);
  });

  it('stops at once when the endpoint refuses the key (401)', async () => {
    const { model } = await failing(401);
    const s = modelSummarizer({ model, concurrency: 1 });
    await Promise.all(files(16).map(([p, c]) => s.file(p, c)));
    expect(server!.requests).toHaveLength(1);
    expect(s.stats.lastError).toMatch(/after 1 failure in a row/);
  });
});
