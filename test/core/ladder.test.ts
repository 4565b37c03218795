import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ladderBuild,
  LADDER_REF,
  readLadder,
  type LadderBuildArgs,
  type LadderBuildResult,
} from '../../src/core/index.js';
import { ALICE, BOB, call, OWNER, rejects, ownerGrants } from '../helpers/core-fixture.js';
import type { ToolOutput } from '../../src/tools/index.js';
import {
  commitFile,
  FIXTURE_FILES,
  ladderDir as dir,
  ladderRepo as repo,
  ladderTestRepo,
  revParse,
} from '../helpers/ladder-fixture.js';
import { sh } from '../helpers/temp-repo.js';

// The Ladder on a small real repository: a full build, no-op rebuilds, an incremental rebuild
// after one commit (exactly which rungs are rewritten), staleness, moves that reuse summaries,
// ladder_write_rung's scope and anchors, history, and hostile paths.

ladderTestRepo();
let cache: string;
const prevCache = process.env.XDG_CACHE_HOME;

beforeAll(() => {
  // ladder_search in-process persists its one-off index in the user cache: keep it private.
  cache = mkdtempSync(join(tmpdir(), 'zz-cache-'));
  process.env.XDG_CACHE_HOME = cache;
});

afterAll(() => {
  rmSync(cache, { recursive: true, force: true });
  if (prevCache === undefined) delete process.env.XDG_CACHE_HOME;
  else process.env.XDG_CACHE_HOME = prevCache;
});

const build = (actor = OWNER.actor) => ladderBuild(repo, { actor });
const ladderHead = () => sh(dir, 'rev-parse', '--verify', '-q', LADDER_REF);

/** Paths the latest ladder_build op upserted and removed. */
async function lastBuildOp(): Promise<LadderBuildArgs> {
  const snap = await readLadder(repo);
  const op = [...snap.log].reverse().find((o) => o.op === 'ladder_build');
  return op!.args as unknown as LadderBuildArgs;
}

const read = (path: string) => call(repo, OWNER, 'ladder_read', { path });
const stale = async (path: string) => (await read(path)).stale as boolean;

describe('ladder build', () => {
  let first: LadderBuildResult;

  it('gives every file, folder and the repo a rung with a useful summary, in one commit', async () => {
    const before = sh(dir, 'for-each-ref', '--format=%(refname)', 'refs/zz/');
    expect(before).not.toContain(LADDER_REF);
    first = await build();
    expect(first.committed).toBe(true);
    expect(first.revision).toBe(ladderHead());
    // One commit on top of the ladder ref's fixed root (shared by every clone).
    expect(sh(dir, 'rev-list', '--count', '--min-parents=1', LADDER_REF)).toBe('1');
    expect(first.files).toBe(Object.keys(FIXTURE_FILES).length);
    // yarn.lock cannot be a rung path (".lock" components are refused everywhere).
    expect(first.skipped).toBe(1);
    // The second LICENSE is the same blob under the same name: summarised once. The PNG is
    // recognised by name and never read.
    expect(first.summarized).toBe(first.files - 3);

    const { rungs } = await call(repo, OWNER, 'ladder_tree', {});
    const byPath = new Map<
      string,
      { kind: string; summary: string; title: string; stale: boolean }
    >(rungs.map((r) => [r.path, r]));
    const files = Object.keys(FIXTURE_FILES).filter((p) => p !== 'yarn.lock');
    const folders = ['src', 'src/util', 'docs', 'vendor', 'assets'];
    for (const p of files) expect(byPath.get(p)?.kind, p).toBe('file');
    for (const p of folders) expect(byPath.get(p)?.kind, p).toBe('directory');
    expect(byPath.get('_repo')?.kind).toBe('repo');
    expect(byPath.has('yarn.lock')).toBe(false);
    for (const p of [...files, ...folders, '_repo']) {
      const r = byPath.get(p)!;
      expect(r.summary.length, `${p}: ${r.summary}`).toBeGreaterThan(15);
      expect(r.stale, p).toBe(false);
    }
    // What the summaries say comes from the code and docs themselves.
    expect(byPath.get('src/scheduler.ts')!.summary).toMatch(
      /Runs registered jobs when their schedule fires/,
    );
    expect(byPath.get('src/scheduler.ts')!.summary).toMatch(/Scheduler/);
    expect(byPath.get('src/retry.ts')!.summary).toMatch(/Exponential backoff/);
    expect(byPath.get('src/schedule.ts')!.summary).toMatch(/cron-like schedule strings/);
    expect(byPath.get('docs/guide.md')!.title).toBe('Operator guide');
    expect(byPath.get('docs/guide.md')!.summary).toMatch(/How to run Tern in production/);
    expect(byPath.get('README.md')!.summary).toMatch(/tiny task scheduler/);
    expect(byPath.get('LICENSE')!.summary).toMatch(/MIT/);
    expect(byPath.get('assets/logo.png')!.summary).toMatch(/^Binary file/);
    expect(byPath.get('src')!.summary).toMatch(/scheduler\.ts/);
    expect(byPath.get('docs')!.summary).toMatch(/guide\.md: How to run Tern/);
    expect(byPath.get('_repo')!.title).toBe('acme/tern');
    expect(byPath.get('_repo')!.summary).toMatch(
      /cron-like task scheduler with retries and backoff/,
    );
    expect(byPath.get('_repo')!.summary).toMatch(/src\//);
    // Releases from tags, changesets from recent commits.
    expect(byPath.get('_releases/v1.0.0')!.summary).toMatch(/v1\.0\.0: 2 commits/);
    expect(byPath.get('_releases/v1.0.0')!.summary).toMatch(
      /scheduler, retries and the operator guide/,
    );
    const head = revParse('HEAD');
    expect(byPath.get(`_changesets/${head}`)!.summary).toMatch(/^feat: scheduler/);
    expect(byPath.get(`_changesets/${revParse('HEAD~1')}`)?.kind).toBe('changeset');

    // Anchors: the path's object at the head commit; the repo's root tree; the tag's commit.
    const r = await read('src/retry.ts');
    expect(r.rung.anchor).toEqual({ commit: head, oid: revParse('HEAD:src/retry.ts') });
    expect(r.rung.generator).toEqual({ method: 'extractive', version: expect.any(String) });
    expect(r.rung.author).toBe(OWNER.actor);
    expect((await read('src')).rung.anchor!.oid).toBe(revParse('HEAD:src'));
    expect((await read('_repo')).rung.anchor!.oid).toBe(revParse('HEAD^{tree}'));
    expect((await read('_releases/v1.0.0')).rung.anchor!.oid).toBe(revParse('v1.0.0^{commit}'));
    // The ladder tree mirrors the repository.
    const files2 = sh(dir, 'ls-tree', '-r', '--name-only', LADDER_REF).split('\n');
    expect(files2).toContain('src/retry.ts.rung.json');
    expect(files2).toContain('src.rung.json');
    expect(files2).toContain('_repo.rung.json');
    expect(files2).toContain('_releases/v1.0.0.rung.json');
  });

  it('makes no commit when nothing changed', async () => {
    const rev = ladderHead();
    const again = await build();
    expect(again).toMatchObject({
      committed: false,
      written: 0,
      removed: 0,
      summarized: 0,
      revision: rev,
    });
    expect(again.unchanged).toBe(first.written);
    expect(ladderHead()).toBe(rev);
  });

  it('after one commit: that file is stale, then only it, its changed ancestors and the new changeset are rewritten', async () => {
    const rev = ladderHead();
    const oldSrc = (await read('src')).rung;
    const oldRepo = (await read('_repo')).rung;
    const head = commitFile(
      dir,
      'src/retry.ts',
      `/**\n * Exponential backoff with jitter for failed job runs, capped at one minute.\n */\nexport function backoffDelay(attempt: number, max: number): number {\n  return Math.min(60_000, 1000 * 2 ** Math.min(attempt, max));\n}\n\nexport const MAX_DELAY_MS = 60_000;\n`,
      'fix(retry): add jitter',
    );
    // Before the rebuild: the file and the folders above it are stale, untouched ones are not.
    expect(await stale('src/retry.ts')).toBe(true);
    expect(await stale('src')).toBe(true);
    expect(await stale('_repo')).toBe(true);
    for (const p of [
      'src/scheduler.ts',
      'src/util',
      'src/util/clock.ts',
      'docs',
      'docs/guide.md',
      'README.md',
    ]) {
      expect(await stale(p), p).toBe(false);
    }
    expect(await stale('_releases/v1.0.0')).toBe(false);

    const r = await build();
    expect(r.committed).toBe(true);
    expect(sh(dir, 'rev-list', '--count', `${rev}..${LADDER_REF}`)).toBe('1');
    expect(r.summarized).toBe(1);
    const op = await lastBuildOp();
    expect(op.upsert.map((x) => x.path).sort()).toEqual(
      ['_changesets/' + head, '_repo', 'src', 'src/retry.ts'].sort(),
    );
    expect(op.remove).toEqual([]);
    // src/ lists retry.ts's first sentence, so its inputs changed and it was regenerated; the
    // repo rung sees only src/'s first line, which did not change: it is only re-anchored.
    const src = op.upsert.find((x) => x.path === 'src')!;
    expect(src.inputs_hash).not.toBe(oldSrc.inputs_hash);
    expect(src.summary).toMatch(/with jitter/);
    const repoRung = op.upsert.find((x) => x.path === '_repo')!;
    expect(repoRung.inputs_hash).toBe(oldRepo.inputs_hash);
    expect(repoRung.summary).toBe(oldRepo.summary);
    expect(repoRung.anchor).toEqual({ commit: head, oid: revParse('HEAD^{tree}') });
    expect(r.reanchored).toBe(1);
    expect(r.written).toBe(4);
    for (const p of ['src/retry.ts', 'src', '_repo', 'src/scheduler.ts', 'docs/guide.md']) {
      expect(await stale(p), p).toBe(false);
    }
    // Untouched rungs keep their original anchor commit.
    expect((await read('docs/guide.md')).rung.anchor!.commit).toBe(revParse('HEAD~1'));
  });

  it('a body-only edit re-anchors the folders above without regenerating them', async () => {
    const oldSrc = (await read('src')).rung;
    const head = commitFile(
      dir,
      'src/schedule.ts',
      (FIXTURE_FILES['src/schedule.ts'] as string).replace("f === '*'", "f.trim() === '*'"),
      'refactor(schedule): trim fields',
    );
    const r = await build();
    const op = await lastBuildOp();
    expect(op.upsert.map((x) => x.path).sort()).toEqual(
      ['_changesets/' + head, '_repo', 'src', 'src/schedule.ts'].sort(),
    );
    const src = op.upsert.find((x) => x.path === 'src')!;
    expect(src.inputs_hash).toBe(oldSrc.inputs_hash);
    expect(src.summary).toBe(oldSrc.summary);
    expect(src.anchor!.oid).toBe(revParse('HEAD:src'));
    expect(r.reanchored).toBe(2);
  });

  it('moves reuse summaries by blob (no read) and remove the old paths', async () => {
    const guide = (await read('docs/guide.md')).rung;
    sh(dir, 'mv', 'docs', 'manual');
    sh(dir, 'commit', '-q', '-m', 'docs: rename docs/ to manual/');
    const r = await build();
    expect(r.summarized).toBe(0);
    const op = await lastBuildOp();
    expect(op.remove.sort()).toEqual(['docs', 'docs/guide.md']);
    const moved = (await read('manual/guide.md')).rung;
    expect(moved.summary).toBe(guide.summary);
    expect(moved.anchor!.oid).toBe(guide.anchor!.oid);
    await rejects(read('docs/guide.md'), 'not_found');
    // History keeps the removed rung.
    const h = await call(repo, OWNER, 'ladder_history', { path: 'docs/guide.md' });
    expect(h.revisions.map((x: { removed: boolean }) => x.removed)).toEqual([true, false]);
  });

  it('refuses a model that is not a model spec, and a bad --max-files, before building', async () => {
    await rejects(
      ladderBuild(repo, { actor: OWNER.actor, model: 'gpt-4o' }),
      'invalid_argument',
      /is not one of openai:<model>, anthropic:<model>, exec:<command>/,
    );
    await rejects(
      ladderBuild(repo, { actor: OWNER.actor, model: 'openai:x', maxFiles: -1 }),
      'invalid_argument',
      /--max-files/,
    );
  });
});

describe('ladder_write_rung', () => {
  let askId: string;
  let openAsk: string;

  beforeAll(async () => {
    await call(repo, ALICE, 'lane_propose', { lane_id: 'docs', title: 'Documentation' });
    await ownerGrants(repo, 'docs', { coordinators: [ALICE] });
    askId = (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'docs',
        kind: 'ladder_update',
        title: 'Describe retry.ts',
      })
    ).ask.ask_id;
    openAsk = (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'docs',
        kind: 'ladder_update',
        title: 'Unclaimed',
      })
    ).ask.ask_id;
    await call(repo, ALICE, 'ask_claim', { lane_id: 'docs', ask_id: askId });
  });

  const fileRung = (extra: Record<string, unknown> = {}) => ({
    path: 'src/retry.ts',
    kind: 'file',
    title: 'retry.ts',
    summary:
      'Backoff policy for failed runs: doubles the delay per attempt, with jitter, up to one minute.',
    commit: revParse('HEAD'),
    ...extra,
  });
  const write = (caller: typeof ALICE, args: Record<string, unknown>) =>
    call(repo, caller, 'ladder_write_rung', {
      lane_id: 'docs',
      ask_id: askId,
      rungs: [fileRung()],
      ...args,
    });

  it('is refused to non-coordinators, to callers not holding the cited Ask, and without a token', async () => {
    await rejects(write(BOB, {}), 'forbidden', /coordinators of lane docs/);
    await rejects(write(ALICE, { ask_id: openAsk }), 'conflict', /not claimed/);
    await rejects(write(ALICE, { ask_id: 'ask-0000000000' }), 'not_found');
    await rejects(write(ALICE, { lane_id: 'nope' }), 'not_found');
    await call(repo, ALICE, 'lane_grant', {
      lane_id: 'docs',
      grantee: BOB.actor,
      role: 'coordinator',
    });
    await rejects(write(BOB, {}), 'forbidden', /held by alice@example\.com/);
    await rejects(write(ALICE, { actor: BOB.actor }), 'forbidden');
    await expect(
      call(repo, null, 'ladder_write_rung', {
        lane_id: 'docs',
        ask_id: askId,
        rungs: [fileRung()],
      }),
    ).rejects.toMatchObject({
      code: 'unauthorized',
    });
  });

  it('requires a commit for code rungs and anchors them to the path at that commit', async () => {
    const { commit: _c, ...noCommit } = fileRung();
    await rejects(
      write(ALICE, { rungs: [noCommit] }),
      'invalid_argument',
      /rungs\.0\.commit: a file rung must cite the commit/,
    );
    await rejects(
      write(ALICE, { rungs: [fileRung({ path: 'src/missing.ts' })] }),
      'invalid_argument',
      /does not exist at commit/,
    );
    await rejects(
      write(ALICE, { rungs: [fileRung({ path: 'src' })] }),
      'invalid_argument',
      /src is a directory/,
    );
    await rejects(
      write(ALICE, { rungs: [fileRung({ commit: 'deadbeef' })] }),
      'invalid_argument',
      /not a commit/,
    );
    await rejects(
      write(ALICE, {
        rungs: [
          {
            path: '_topics/retries',
            kind: 'topic',
            title: 'Retries',
            summary: 'How retries work.',
            commit: revParse('HEAD'),
          },
        ],
      }),
      'invalid_argument',
      /cites no commit/,
    );
    await rejects(
      write(ALICE, { rungs: [fileRung({ kind: 'release' })] }),
      'invalid_argument',
      /under "_releases\/"/,
    );

    const old = revParse('v1.0.0^{commit}');
    const rungs = [
      fileRung({ commit: old.slice(0, 12) }),
      {
        path: 'src',
        kind: 'directory',
        title: 'src/',
        summary: 'The scheduler, schedules and retries.',
        commit: old,
      },
      {
        path: '_repo',
        kind: 'repo',
        title: 'acme/tern',
        summary: 'Tern: a tiny cron-like scheduler.',
        commit: old,
      },
      {
        path: '_topics/retries',
        kind: 'topic',
        title: 'Retries',
        summary: 'Failed runs back off exponentially.',
      },
      {
        path: `_changesets/${revParse('HEAD~1')}`,
        kind: 'changeset',
        title: 'x',
        summary: 'Trims schedule fields.',
        commit: old,
      },
    ];
    const r = await write(ALICE, { idempotency_key: 'describe-retry-1', rungs });
    expect(r.replayed).toBe(false);
    expect(r.revision).toBe(ladderHead());
    const anchors = Object.fromEntries(
      r.rungs.map((x: { path: string; anchor: unknown }) => [x.path, x.anchor]),
    );
    expect(anchors['src/retry.ts']).toEqual({ commit: old, oid: revParse(`${old}:src/retry.ts`) });
    expect(anchors.src).toEqual({ commit: old, oid: revParse(`${old}:src`) });
    expect(anchors._repo).toEqual({ commit: old, oid: revParse(`${old}^{tree}`) });
    expect(anchors['_topics/retries']).toBeNull();
    expect(anchors[`_changesets/${revParse('HEAD~1')}`]).toEqual({
      commit: old,
      oid: revParse('HEAD~1'),
    });
    // Written against an older commit whose retry.ts differs: stale right away.
    const got = await read('src/retry.ts');
    expect(got.rung).toMatchObject({
      author: ALICE.actor,
      generator: { method: 'human', version: '1' },
    });
    expect(got.rung.summary).toMatch(/doubles the delay/);
    expect(got.stale).toBe(true);
    expect((await read('_topics/retries')).stale).toBe(false);

    // A retry with the same key replays; with other arguments it is a conflict.
    const again = await write(ALICE, { idempotency_key: 'describe-retry-1', rungs });
    expect(again).toEqual({ ...r, replayed: true });
    await rejects(write(ALICE, { idempotency_key: 'describe-retry-1' }), 'idempotency_conflict');
  });

  it('history lists every write of a rung, newest first, with actor, generator and the cited Ask', async () => {
    // A current human rung stands through a rebuild; a stale one is replaced (history keeps it).
    await write(ALICE, { rungs: [fileRung()] });
    expect((await read('src/retry.ts')).stale).toBe(false);
    const r = await build();
    const op = await lastBuildOp();
    expect(r.committed).toBe(true); // the stale human src/ and _repo rungs are rebuilt
    expect(op.upsert.map((x) => x.path)).not.toContain('src/retry.ts');
    expect((await read('src/retry.ts')).rung.generator.method).toBe('human');

    const h = await call(repo, OWNER, 'ladder_history', { path: 'src/retry.ts' });
    const ops = h.revisions.map((x: { op: string }) => x.op);
    expect(ops).toEqual(['ladder_write_rung', 'ladder_write_rung', 'ladder_build', 'ladder_build']);
    expect(h.revisions[0]).toMatchObject({
      actor: ALICE.actor,
      lane_id: 'docs',
      ask_id: askId,
      removed: false,
      generator: { method: 'human' },
    });
    expect(h.revisions[2]).toMatchObject({
      actor: OWNER.actor,
      lane_id: null,
      generator: { method: 'extractive' },
    });
    expect(h.revisions[2]!.summary).toMatch(/with jitter/);
    expect(h.revisions[3]!.summary).toMatch(/1 s, 2 s, 4 s/);
    const page = await call(repo, OWNER, 'ladder_history', { path: 'src/retry.ts', limit: 3 });
    expect(page.revisions).toHaveLength(3);
    const rest = await call(repo, OWNER, 'ladder_history', {
      path: 'src/retry.ts',
      limit: 3,
      cursor: page.next_cursor,
    });
    expect(rest.revisions).toEqual(h.revisions.slice(3));
    expect(rest.next_cursor).toBeNull();
    await rejects(call(repo, OWNER, 'ladder_history', { path: 'never/written.ts' }), 'not_found');
  });

  it('is refused once the Ask is answered', async () => {
    await call(repo, ALICE, 'ask_answer', {
      lane_id: 'docs',
      ask_id: askId,
      outcome: 'complete',
      result: 'described',
    });
    await rejects(write(ALICE, {}), 'conflict', /already answered/);
  });
});

describe('ladder reads', () => {
  it('refuses hostile paths before touching anything', async () => {
    const hostile = [
      '../etc/passwd',
      'src/../../x',
      '.git/config',
      'src/.GIT/x',
      '/etc/passwd',
      '-rf',
      'a//b',
      'x.lock',
      'a\u0000b',
      'a\\b',
      '',
    ];
    for (const path of hostile) {
      for (const tool of ['ladder_read', 'ladder_history'] as const) {
        await rejects(call(repo, OWNER, tool, { path }), 'invalid_argument');
      }
      await rejects(
        call(repo, OWNER, 'ladder_write_rung', {
          lane_id: 'docs',
          ask_id: 'ask-0000000000',
          rungs: [{ path, kind: 'topic', title: 't', summary: 's' }],
        }),
        'invalid_argument',
      );
    }
    await rejects(
      call(repo, OWNER, 'ladder_read', { path: 'src', extra: 1 }),
      'invalid_argument',
      /unknown field/,
    );
  });

  it('pages a long detail by character offset', async () => {
    const head = revParse('v1.0.0^{commit}');
    const full = (await read(`_changesets/${head}`)).rung;
    expect(full.detail).toMatch(/Files \(\+added -deleted path\)/);
    expect(full.detail_chars).toBe(full.detail!.length);
    const parts: string[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page: ToolOutput<'ladder_read'> = await call(repo, OWNER, 'ladder_read', {
        path: `_changesets/${head}`,
        offset,
        limit: 40,
      });
      parts.push(page.rung.detail!);
      offset = page.next_offset;
    }
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.join('')).toBe(full.detail);
    await rejects(
      call(repo, OWNER, 'ladder_read', { path: 'src', offset: 10 }),
      'invalid_argument',
      /no detail/,
    );
    await rejects(read('nothing/here'), 'not_found');
  });

  it('ladder_tree is one call and public on a public repo; other reads need a token', async () => {
    await rejects(call(repo, null, 'ladder_tree', {}), 'unauthorized');
    await repo.config.mutate({
      actor: OWNER.actor,
      decide: () => ({
        op: 'repo_set_visibility',
        summary: 'public',
        args: { visibility: 'public' },
      }),
      result: () => null,
    });
    expect((await repo.config.read()).state.config?.visibility).toBe('public');
    const t = await call(repo, null, 'ladder_tree', {});
    expect(t.rungs.length).toBeGreaterThan(10);
    expect(t.revision).toBe(ladderHead());
    await rejects(call(repo, null, 'ladder_read', { path: 'src' }), 'unauthorized');
    await rejects(call(repo, null, 'ladder_search', { query: 'retry' }), 'unauthorized');
  });

  it('ladder_search works in-process (a one-off index) and ladder_reindex rebuilds it', async () => {
    const r = await call(repo, OWNER, 'ladder_search', { query: 'cron schedule strings' });
    expect(r.hits[0]).toMatchObject({ repo: 'acme/tern', path: 'src/schedule.ts', kind: 'file' });
    expect(r.hits[0]!.anchor!.oid).toBe(revParse('HEAD:src/schedule.ts'));
    expect(r.hits[0]!.stale).toBe(false);
    // A commit that changes the file (no rebuild): the hit says its rung is stale.
    const before = readFileSync(join(dir, 'src/schedule.ts'), 'utf8');
    commitFile(dir, 'src/schedule.ts', `${before}\n// touched\n`, 'chore: touch schedule');
    const after = await call(repo, OWNER, 'ladder_search', { query: 'cron schedule strings' });
    const hit = after.hits.find((h: { path: string }) => h.path === 'src/schedule.ts');
    expect(hit!.stale).toBe(true);
    expect(after.hits.filter((h: { stale: boolean }) => h.stale)).toHaveLength(
      after.hits.filter((h: { path: string }) =>
        ['src/schedule.ts', 'src', '_repo'].includes(h.path),
      ).length,
    );
    const files = await call(repo, OWNER, 'ladder_search', {
      query: 'operator guide',
      kind: 'directory',
    });
    expect(files.hits.every((h: { kind: string }) => h.kind === 'directory')).toBe(true);
    const re = await call(repo, OWNER, 'ladder_reindex', {});
    expect(re).toMatchObject({ repo: 'acme/tern', ladder_oid: ladderHead(), source: 'built' });
    expect(re.docs).toBe((await readLadder(repo)).state.size);
    await rejects(
      call(repo, OWNER, 'ladder_search', { query: 'x', repo: 'other/repo' }),
      'not_found',
    );
    await rejects(
      call(repo, OWNER, 'ladder_search', { query: 'x', limit: 51 }),
      'invalid_argument',
    );
  });
});
