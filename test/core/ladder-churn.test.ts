import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  initRepo,
  ladderBuild,
  LADDER_REF,
  readLadder,
  ZzRepo,
  type LadderBuildOptions,
} from '../../src/core/index.js';
import type { Rung } from '../../src/schema/rung.js';
import { zz, cliEnv } from '../helpers/cli-harness.js';
import { ALICE, call, ladderUpdateClaim, OWNER } from '../helpers/core-fixture.js';
import { addFixture, commitFile } from '../helpers/ladder-fixture.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { fakeModelServer, type RecordedRequest } from '../models/fake-model-server.js';

// Switching `zz ladder build` between --model and none must not churn the Ladder (DESIGN §6):
// a rung made from unchanged inputs stands whatever wrote it, except that --model upgrades
// extractive text, and --rebuild replaces another generator's (never a human's). Folders and
// history rungs, which a model build writes extractively too, are never rewritten by a switch.
// A real repository, a fake OpenAI-compatible server on 127.0.0.1 whose answers name the model.

let dir: string;
let cleanup: () => void;
let repo: ZzRepo;
let cache: string;
let failing = false;

const completion = (req: RecordedRequest) => {
  if (failing) return { status: 400, body: { error: { message: 'model refused' } } };
  const user = String(req.body.messages.at(-1).content);
  const path = /^Path: (.+)$/m.exec(user)![1]!;
  const content = JSON.stringify({ summary: `${String(req.body.model)} on ${path}.` });
  return {
    status: 200,
    body: {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      model: req.body.model,
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
    },
  };
};

let server: Awaited<ReturnType<typeof fakeModelServer>>;

beforeAll(async () => {
  server = await fakeModelServer(completion);
  cache = mkdtempSync(join(tmpdir(), 'zz-churn-cache-'));
  ({ dir, cleanup } = makeRepo('zz-ladder-churn-'));
  addFixture(dir);
  commitFile(dir, 'src/util.ts', '/** Small helpers. */\nexport const one = 1;\n', 'util');
  repo = await ZzRepo.open(dir, { key: 'acme/tern' });
  await initRepo(repo, { owner: OWNER.actor, default_branch: 'main' });
});
afterAll(async () => {
  repo.close();
  cleanup();
  await server.close();
  rmSync(cache, { recursive: true, force: true });
});

const build = (model?: string, extra: Partial<LadderBuildOptions> = {}) =>
  ladderBuild(repo, {
    actor: OWNER.actor,
    ...(model
      ? {
          model,
          env: {
            ...process.env,
            OPENAI_BASE_URL: `${server.url}/v1`,
            OPENAI_API_KEY: 'sk-test',
            XDG_CACHE_HOME: cache,
          },
        }
      : {}),
    ...extra,
  });

const ladderOid = () => sh(dir, 'rev-parse', LADDER_REF);
const rungs = async () => new Map((await readLadder(repo)).state);
const byMethod = (s: Map<string, Rung>, kind: string) =>
  [...s.values()]
    .filter((r) => r.kind === kind)
    .map((r) => r.generator.model ?? r.generator.method);

describe('ladder build: switching --model on and off', () => {
  it('a model build upgrades file rungs and leaves history rungs as they were', async () => {
    expect((await build()).committed).toBe(true);
    const before = await rungs();
    const r = await build('openai:alpha');
    expect(r.committed).toBe(true);
    const after = await rungs();
    const files = [...after.values()].filter((x) => x.kind === 'file');
    const readByModel = files.filter((f) => f.generator.method === 'model');
    // Every text file (not the binary, the link or the vendored licence's shape-only rungs).
    expect(readByModel.length).toBeGreaterThanOrEqual(6);
    // (A copy of an answered file reuses its answer, so the summary names its basename.)
    for (const f of readByModel) {
      expect(f.summary.startsWith('alpha on ')).toBe(true);
      expect(f.summary.endsWith(`${f.path.split('/').pop()!}.`)).toBe(true);
    }
    // Changesets and releases are extractive in both builds: the very same files, untouched
    // (the same written_at: no write at all).
    const history = [...before.values()].filter(
      (x) => x.kind === 'changeset' || x.kind === 'release',
    );
    expect(history.length).toBeGreaterThanOrEqual(3);
    for (const h of history) expect(after.get(h.path)).toEqual(h);
    // Only rungs whose text changed were written: the model's files and the folders above them.
    const rewritten = [...after.values()].filter(
      (x) => x.written_at !== before.get(x.path)?.written_at,
    );
    expect(
      rewritten.every((x) => x.kind === 'file' || x.kind === 'directory' || x.kind === 'repo'),
    ).toBe(true);
    expect(r.written).toBe(rewritten.length);
  });

  it('a plain build afterwards keeps every model rung and commits nothing', async () => {
    const oid = ladderOid();
    const before = await rungs();
    const r = await build();
    expect(r.committed).toBe(false);
    expect(r.written).toBe(0);
    expect(r.preserved).toBe(byMethod(before, 'file').filter((m) => m === 'openai:alpha').length);
    expect(ladderOid()).toBe(oid);
    expect(await rungs()).toEqual(before);
  });

  it('switching back to the model costs no call and writes nothing', async () => {
    const oid = ladderOid();
    const calls = server.requests.length;
    const r = await build('openai:alpha');
    expect(r.committed).toBe(false);
    expect(r.model).toMatchObject({ written: 0, calls: 0 });
    expect(server.requests.length).toBe(calls);
    expect(ladderOid()).toBe(oid);
  });

  it('another model keeps the first one’s rungs unless asked to --rebuild', async () => {
    const oid = ladderOid();
    const calls = server.requests.length;
    const kept = await build('openai:beta');
    expect(kept.committed).toBe(false);
    expect(server.requests.length).toBe(calls);
    expect(ladderOid()).toBe(oid);

    const r = await build('openai:beta', { rebuild: true });
    expect(r.committed).toBe(true);
    const s = await rungs();
    expect(byMethod(s, 'file')).toContain('openai:beta');
    expect(byMethod(s, 'file')).not.toContain('openai:alpha');
    // Idempotent: the same build again writes nothing.
    const again = ladderOid();
    expect((await build('openai:beta', { rebuild: true })).committed).toBe(false);
    expect(ladderOid()).toBe(again);
  });

  it('an edited file is rewritten by whichever build runs; the others keep their model text', async () => {
    commitFile(
      dir,
      'src/util.ts',
      '/** Small helpers, now two. */\nexport const two = 2;\n',
      'util 2',
    );
    const r = await build();
    expect(r.committed).toBe(true);
    const s = await rungs();
    expect(s.get('src/util.ts')!.generator.method).toBe('extractive');
    expect(s.get('src/util.ts')!.summary).not.toMatch(/beta on/);
    expect(s.get('src/scheduler.ts')!.summary).toBe('beta on src/scheduler.ts.');
    // A model build upgrades just that file.
    const up = await build('openai:beta');
    expect(up.committed).toBe(true);
    expect(up.model).toMatchObject({ written: 1, calls: 1 });
    expect((await rungs()).get('src/util.ts')!.summary).toBe('beta on src/util.ts.');
  });

  it('a failing model over extractive rungs falls back to the same text: no commit', async () => {
    expect((await build(undefined, { rebuild: true })).committed).toBe(true);
    const s = await rungs();
    expect(byMethod(s, 'file').every((m) => m === 'extractive')).toBe(true);
    const oid = ladderOid();
    failing = true;
    try {
      const r = await build('openai:gamma', { maxFiles: 1 });
      expect(r.model!.fallback).toBeGreaterThan(0);
      expect(r.committed).toBe(false);
      expect(ladderOid()).toBe(oid);
    } finally {
      failing = false;
    }
  });

  it('zz ladder build says what it kept for another generator, and --rebuild replaces it', async () => {
    const env = {
      ...cliEnv(),
      OPENAI_BASE_URL: `${server.url}/v1`,
      OPENAI_API_KEY: 'sk-test',
      XDG_CACHE_HOME: cache,
    };
    const m = await zz(dir, env, 'ladder', 'build', '--model', 'openai:alpha');
    expect(m.code, m.stderr).toBe(0);
    const plain = await zz(dir, env, 'ladder', 'build');
    expect(plain.code, plain.stderr).toBe(0);
    expect(plain.stdout).toMatch(
      /is up to date at [0-9a-f]{12}: \d+ rungs unchanged \((\d+) written by another generator kept; --rebuild rewrites them\); nothing committed/,
    );
    const rb = await zz(dir, env, 'ladder', 'build', '--rebuild', '--json');
    expect(rb.code, rb.stderr).toBe(0);
    expect(rb.json()).toMatchObject({ committed: true, preserved: 0, pruned: 0 });
    const again = await zz(dir, env, 'ladder', 'build');
    expect(again.stdout).toMatch(/: \d+ rungs unchanged; nothing committed/);
  });

  it('--rebuild, with a model or without, never replaces a human’s rung', async () => {
    const askId = await ladderUpdateClaim(repo, ALICE, 'docs', 'Describe retry.ts');
    const words = 'Retries failed runs with a doubling delay; written by a person.';
    await call(repo, ALICE, 'ladder_write_rung', {
      lane_id: 'docs',
      ask_id: askId,
      rungs: [
        {
          path: 'src/retry.ts',
          kind: 'file',
          title: 'retry.ts',
          summary: words,
          commit: sh(dir, 'rev-parse', 'HEAD'),
        },
      ],
    });
    for (const model of [undefined, 'openai:alpha', 'openai:beta']) {
      await build(model, { rebuild: true });
      const r = (await rungs()).get('src/retry.ts')!;
      expect(r.summary).toBe(words);
      expect(r.generator.method).toBe('human');
    }
  });
});
