import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  initRepo,
  ladderBuild,
  ladderCodec,
  LADDER_REF,
  readLadder,
  ZzRepo,
  type LadderState,
  type LadderWriteArgs,
} from '../../src/core/index.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { Entity } from '../../src/store/index.js';
import { daemonOptions } from '../helpers/test-daemon.js';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { addFixture, commitFile } from '../helpers/ladder-fixture.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// The daemon keeps one Ladder search for every repo it serves, current without a restart:
// rungs written by another process (`zz ladder build` from the CLI, here another ZzRepo on the
// same checkout), rungs moved in by native `git update-ref`, and its own ladder_write_rung
// commits all become searchable over HTTP. Write scope is enforced there too.

const OWNER = 'owner@example.com';
const ALICE = 'alice@example.com';
const BOB = 'bob@example.com';
const KEY = 'acme/tern';

let dir: string;
let cleanup: () => void;
let cache: string;
let daemon: Daemon;
let other: ZzRepo;
let owner: JsonClient;
let alice: JsonClient;
let bob: JsonClient;
let anon: JsonClient;

const tool = (name: string) => `/api/repos/${KEY}/tools/${name}`;

async function search(query: string, extra: Record<string, unknown> = {}) {
  const r = await owner.post(tool('ladder_search'), { query, ...extra });
  expect(r.status, r.text).toBe(200);
  return r.json.result as {
    hits: Array<{ repo: string; path: string; kind: string; summary: string; anchor: unknown }>;
  };
}

/**
 * Polls ladder_search until `pred` holds (the watcher debounces; indexing is asynchronous).
 * The bound only ends a failing run: a loaded CI machine can take more than a few seconds.
 */
async function eventually(
  query: string,
  pred: (paths: string[]) => boolean,
  ms = 30_000,
): Promise<string[]> {
  const until = Date.now() + ms;
  for (;;) {
    const paths = (await search(query)).hits.map((h) => h.path);
    if (pred(paths)) return paths;
    if (Date.now() > until)
      throw new Error(`search "${query}" never matched; last hits: ${paths.join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  ({ dir, cleanup } = makeRepo('zz-daemon-search-'));
  sh(dir, 'config', 'zz.repo', KEY);
  addFixture(dir);
  cache = mkdtempSync(join(tmpdir(), 'zz-cache-'));
  // Another process's view of the same checkout: it initialises zz and, later, builds the Ladder.
  other = await ZzRepo.open(dir);
  expect(other.key).toBe(KEY);
  await initRepo(other, { owner: OWNER, default_branch: 'main' });
  daemon = await startDaemon(daemonOptions(dir, { cacheDir: cache }));
  const token = async (actor: string) => (await daemon.tokens.create(actor, 'login')).token;
  owner = jsonClient(daemon.url, { token: await token(OWNER) });
  alice = jsonClient(daemon.url, { token: await token(ALICE) });
  bob = jsonClient(daemon.url, { token: await token(BOB) });
  anon = jsonClient(daemon.url);
});

afterAll(async () => {
  for (const c of [owner, alice, bob, anon]) c?.close();
  await daemon?.close();
  other?.close();
  cleanup?.();
  rmSync(cache, { recursive: true, force: true });
});

describe('daemon search', () => {
  it('has no hits before there is a Ladder', async () => {
    expect((await search('scheduler')).hits).toEqual([]);
    // A served repo without a Ladder is no error, just empty.
    expect((await search('scheduler', { repo: KEY })).hits).toEqual([]);
    expect((await owner.post(tool('ladder_search'), { query: 'x', repo: 'no/such' })).status).toBe(
      404,
    );
  });

  it('indexes a Ladder built by another process without a restart', async () => {
    const r = await ladderBuild(other, { actor: OWNER });
    expect(r.committed).toBe(true);
    const paths = await eventually('cron schedule strings', (p) => p.includes('src/schedule.ts'));
    expect(paths[0]).toBe('src/schedule.ts');
    const hit = (await search('operator guide')).hits.find((h) => h.path === 'docs/guide.md')!;
    expect(hit).toMatchObject({ repo: KEY, kind: 'file' });
    expect(hit.anchor).toEqual({
      commit: sh(dir, 'rev-parse', 'HEAD'),
      oid: sh(dir, 'rev-parse', 'HEAD:docs/guide.md'),
    });
    // The daemon's own reads see the same Ladder.
    const tree = await owner.post(tool('ladder_tree'), {});
    expect(tree.json.result.revision).toBe(r.revision);
    // The shard is persisted in the cache the daemon was given.
    // Written after a debounce: poll (bounded) instead of sleeping a fixed time.
    const persisted = () =>
      existsSync(join(cache, 'search')) &&
      readdirSync(join(cache, 'search')).some((f) => f.endsWith('.json'));
    for (const until = Date.now() + 30_000; !persisted() && Date.now() < until;) {
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(persisted()).toBe(true);
  });

  it('follows an incremental rebuild after a commit (old text gone, new text found)', async () => {
    commitFile(
      dir,
      'src/retry.ts',
      '/**\n * Jittered exponential backoff (full jitter) for failed job runs.\n */\nexport function backoffDelay(n: number): number {\n  return Math.random() * 1000 * 2 ** n;\n}\n',
      'fix(retry): full jitter',
    );
    await ladderBuild(other, { actor: OWNER });
    await eventually('jittered backoff', (p) => p.includes('src/retry.ts'));
    await eventually('capped at one minute', (p) => !p.includes('src/retry.ts'));
  });

  it('indexes rungs moved in by native git update-ref', async () => {
    const before = sh(dir, 'rev-parse', LADDER_REF);
    // A ladder commit made on a scratch ref (as a fetch would bring one), then moved in by git.
    sh(dir, 'update-ref', 'refs/scratch/ladder', before);
    const scratch = new Entity<LadderState>(other.store, 'refs/scratch/ladder', ladderCodec);
    const args: LadderWriteArgs = {
      lane_id: '_repo',
      ask_id: 'ask-0123456789',
      rungs: [
        {
          path: '_topics/observability',
          kind: 'topic',
          title: 'Observability',
          summary:
            'Metrics and tracing for scheduled jobs: Prometheus counters per job, OpenTelemetry spans per run.',
          inputs_hash: 'a'.repeat(40),
          generator: { method: 'human', version: '1' },
        },
      ],
    };
    const w = await scratch.mutate({
      actor: OWNER,
      decide: () => ({
        op: 'ladder_write_rung',
        summary: 'topic',
        args: args as unknown as Record<string, unknown>,
      }),
      result: () => null,
    });
    sh(dir, 'update-ref', LADDER_REF, w.revision, before);
    await eventually('prometheus opentelemetry', (p) => p.includes('_topics/observability'));
    // Moving the ref back removes it again.
    sh(dir, 'update-ref', LADDER_REF, before, w.revision);
    await eventually('prometheus opentelemetry', (p) => !p.includes('_topics/observability'));
  });

  it('enforces write scope over HTTP and indexes its own writes', async () => {
    const lane = await alice.post(tool('lane_propose'), { lane_id: 'docs', title: 'Docs' });
    expect(lane.status, lane.text).toBe(200);
    // Rung writes need a coordinator an owner stands behind (core/rooted-roles.ts).
    const grant = await owner.post(tool('lane_grant'), {
      lane_id: 'docs',
      grantee: ALICE,
      role: 'coordinator',
    });
    expect(grant.status, grant.text).toBe(200);
    const ask = await alice.post(tool('ask_post'), {
      lane_id: 'docs',
      kind: 'ladder_update',
      title: 'Describe the scheduler',
    });
    const askId = ask.json.result.ask.ask_id as string;
    expect((await alice.post(tool('ask_claim'), { lane_id: 'docs', ask_id: askId })).status).toBe(
      200,
    );
    const body = {
      lane_id: 'docs',
      ask_id: askId,
      rungs: [
        {
          path: 'src/scheduler.ts',
          kind: 'file',
          title: 'scheduler.ts',
          summary: 'The heart of Tern: a dispatcher loop that wakes each minute and fans jobs out.',
          commit: sh(dir, 'rev-parse', 'HEAD'),
        },
      ],
    };
    expect((await anon.post(tool('ladder_write_rung'), body)).status).toBe(401);
    const notCoordinator = await bob.post(tool('ladder_write_rung'), body);
    expect(notCoordinator.status).toBe(403);
    expect(notCoordinator.json.code).toBe('forbidden');
    const { commit: _c, ...noCommit } = body.rungs[0]!;
    const missing = await alice.post(tool('ladder_write_rung'), { ...body, rungs: [noCommit] });
    expect(missing.status).toBe(400);
    expect(missing.json.error).toMatch(/must cite the commit/);
    const hostile = await alice.post(tool('ladder_write_rung'), {
      ...body,
      rungs: [{ ...body.rungs[0], path: '../../etc/passwd' }],
    });
    expect(hostile.status).toBe(400);
    const ok = await alice.post(tool('ladder_write_rung'), body);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.result.rungs[0].anchor.oid).toBe(sh(dir, 'rev-parse', 'HEAD:src/scheduler.ts'));
    await eventually('dispatcher loop fans jobs', (p) => p.includes('src/scheduler.ts'));
    // Reads without a token are refused on a private repo.
    expect((await anon.post(tool('ladder_tree'), {})).status).toBe(401);
    expect((await anon.post(tool('ladder_search'), { query: 'tern' })).status).toBe(401);
    // ladder_reindex (any member) rebuilds the entries from the current Ladder.
    const re = await bob.post(tool('ladder_reindex'), {});
    expect(re.status, re.text).toBe(200);
    expect(re.json.result).toMatchObject({
      repo: KEY,
      ladder_oid: (await readLadder(other)).revision,
      source: 'built',
    });
    await eventually('dispatcher loop fans jobs', (p) => p.includes('src/scheduler.ts'));
  });
});

describe('startLadderSync without the watcher', () => {
  it("applies this process's own ladder commits from their ops", async () => {
    const { startLadderSync } = await import('../../src/core/ladder/search-sync.js');
    const { LadderSearch } = await import('../../src/search/index.js');
    const { dir: d2, cleanup: c2 } = makeRepo('zz-sync-');
    addFixture(d2);
    const cache2 = mkdtempSync(join(tmpdir(), 'zz-cache-'));
    const repo = await ZzRepo.open(d2, { key: 'acme/sync' });
    const s = new LadderSearch({ cacheDir: cache2, persistDelayMs: 0 });
    const sync = await startLadderSync(s, new Map([[repo.key, repo]]), { watch: false });
    try {
      await sync.ready;
      expect(s.ladderOid(repo.key)).toBeNull();
      const first = await ladderBuild(repo, { actor: OWNER });
      await sync.refresh(repo); // waits for the queued sync the commit triggered
      expect(s.ladderOid(repo.key)).toBe(first.revision);
      expect(s.search({ query: 'operator guide' }).hits.map((h) => h.path)).toContain(
        'docs/guide.md',
      );
      commitFile(
        d2,
        'docs/guide.md',
        '# Operator guide\n\nRunbooks for on-call engineers.\n',
        'docs: runbooks',
      );
      const second = await ladderBuild(repo, { actor: OWNER });
      await sync.refresh(repo);
      expect(s.stats().shards[0]).toMatchObject({ ladder_oid: second.revision, source: 'diff' });
      expect(s.search({ query: 'runbooks on-call' }).hits[0]?.path).toBe('docs/guide.md');
      expect(s.search({ query: 'rotate logs' }).hits.map((h) => h.path)).not.toContain(
        'docs/guide.md',
      );
    } finally {
      await sync.close();
      await s.close();
      repo.close();
      c2();
      rmSync(cache2, { recursive: true, force: true });
    }
  });
});
