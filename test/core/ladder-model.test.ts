import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initRepo, ladderBuild, LADDER_REF, readLadder, ZzRepo } from '../../src/core/index.js';
import { OWNER } from '../helpers/core-fixture.js';
import { addFixture } from '../helpers/ladder-fixture.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { fakeModelServer, type RecordedRequest } from '../models/fake-model-server.js';

// `zz ladder build --model` against a fake OpenAI-compatible server on 127.0.0.1: the model
// writes file summaries within the --max-files budget, answers are cached by inputs (a rebuild
// from nothing costs no call), and a failing endpoint leaves extractive text with the rung's
// generator saying so.

let dir: string;
let cleanup: () => void;
let repo: ZzRepo;
let cache: string;
let failing = false;

const completion = (req: RecordedRequest) => {
  if (failing) return { status: 500, body: { error: { message: 'model server down' } } };
  const user = String(req.body.messages.at(-1).content);
  const path = /^Path: (.+)$/m.exec(user)![1]!;
  return {
    status: 200,
    body: {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: 'fake-coder',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: JSON.stringify({ summary: `Model summary of ${path}.` }),
          },
          finish_reason: 'stop',
        },
      ],
      usage: { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 },
    },
  };
};

let server: Awaited<ReturnType<typeof fakeModelServer>>;
const env = () => ({
  ...process.env,
  OPENAI_BASE_URL: `${server.url}/v1`,
  OPENAI_API_KEY: 'sk-test',
  XDG_CACHE_HOME: cache,
});

beforeAll(async () => {
  server = await fakeModelServer(completion);
  cache = mkdtempSync(join(tmpdir(), 'zz-model-cache-'));
  ({ dir, cleanup } = makeRepo('zz-ladder-model-'));
  addFixture(dir);
  repo = await ZzRepo.open(dir, { key: 'acme/tern' });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
});
afterAll(async () => {
  repo.close();
  cleanup();
  await server.close();
  rmSync(cache, { recursive: true, force: true });
});

const build = (maxFiles?: number) =>
  ladderBuild(repo, {
    actor: OWNER.actor,
    model: 'openai:fake-coder',
    env: env(),
    ...(maxFiles === undefined ? {} : { maxFiles }),
  });

describe('ladder build --model', () => {
  it('writes file summaries with the model within the budget, the rest extractive', async () => {
    const r = await build(2);
    expect(r.committed).toBe(true);
    expect(r.model).toMatchObject({ spec: 'openai:fake-coder', written: 2, cached: 0, calls: 2 });
    expect(r.model!.input_tokens).toBe(200);
    expect(r.model!.output_tokens).toBe(20);
    const files = [...(await readLadder(repo)).state.values()].filter((x) => x.kind === 'file');
    const byModel = files.filter((f) => f.generator.method === 'model');
    // Two calls; a copy of an answered file (same blob and name) reuses its answer.
    expect(byModel.length).toBeGreaterThanOrEqual(2);
    for (const f of byModel) {
      expect(f.summary).toMatch(
        new RegExp(`^Model summary of (?:.*/)?${f.path.split('/').pop()!.replace('.', '\\.')}\\.$`),
      );
      expect(f.generator).toEqual({
        method: 'model',
        model: 'openai:fake-coder',
        version: 'prompt-1',
      });
    }
    const rest = files.filter((f) => f.generator.method !== 'model');
    expect(rest.length).toBeGreaterThan(0);
    expect(rest.every((f) => f.generator.method === 'extractive')).toBe(true);
  });

  it('costs no call for a file already answered, even rebuilt from nothing', async () => {
    sh(dir, 'update-ref', '-d', LADDER_REF);
    const calls = server.requests.length;
    const r = await build(2);
    expect(r.model).toMatchObject({ cached: 2, calls: 2 });
    // The two cached ones are free; the budget buys two more.
    expect(server.requests.length - calls).toBe(2);
  });

  it('falls back to extractive text on a failing endpoint, and says so', async () => {
    failing = true;
    try {
      sh(dir, 'update-ref', '-d', LADDER_REF);
      const r = await build(1);
      expect(r.committed).toBe(true);
      expect(r.model!.fallback).toBeGreaterThan(0);
      expect(r.model!.last_error).toMatch(/500|down/);
      const { state } = await readLadder(repo);
      const fellBack = [...state.values()].filter(
        (f) => f.kind === 'file' && f.generator.method === 'extractive',
      );
      expect(fellBack.length).toBeGreaterThan(0);
      expect(fellBack.every((f) => !f.summary.startsWith('Model summary'))).toBe(true);
    } finally {
      failing = false;
    }
  });
});
