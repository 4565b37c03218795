import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import {
  AGENT,
  ALICE,
  BOB,
  call,
  memoryRepo,
  rejects,
  shipAsks,
  shipLanes,
} from '../helpers/core-fixture.js';

// commit_changeset on real repositories whose `main` is checked out in the served worktree:
// every test checks what git itself sees afterwards (refs, trees, the checkout, fsck).

const setup = shipLanes();
const asks = shipAsks;

describe('commit_changeset', () => {
  it('fast-forwards when the base is the head, updates the checkout and answers the Ask', async () => {
    const env = await setup();
    const h0 = env.head();
    const { csId, askId } = await env.changeset([{ path: 'src/hello.txt', content: 'hi\n' }]);
    const cs = env.git('rev-parse', `refs/zz/changesets/${csId}`);
    const r = await env.commit({ ask_id: askId, changeset_id: csId });
    expect(r).toMatchObject({
      commit: cs,
      branch: 'main',
      merged: false,
      fast_forward: true,
      previous_head: h0,
      changeset_id: csId,
      worktree_updated: true,
      replayed: false,
    });
    expect(env.head()).toBe(cs);
    expect(env.read('src/hello.txt')).toBe('hi\n');
    expect(env.status()).toBe('');
    // The Ask it cites is answered complete, naming the commit, on the record.
    expect(r.ask.state).toBe('answered');
    expect(r.ask.answer).toMatchObject({
      outcome: 'complete',
      changeset_id: csId,
      answered_by: ALICE.actor,
    });
    expect(r.ask.answer!.result).toContain(cs);
    const lane = await call(env.repo, ALICE, 'lane_get', { lane_id: 'ship' });
    const ops = lane.history.map((h: { op: string }) => h.op);
    expect(ops.slice(-2)).toEqual(['commit_changeset', 'ask_answer']);
    expect(lane.history.at(-2)!.out).toMatchObject({ commit: cs, previous_head: h0 });
    // Author: whoever made the changeset; committer: zz. The reflog records the move.
    expect(env.git('log', '-1', '--format=%an <%ae>|%cn <%ce>', 'main')).toBe(
      `${AGENT.actor} <alice@example.com>|zz <zz@localhost>`,
    );
    expect(env.git('reflog', '-1', '--format=%H %gs', 'main')).toBe(
      `${cs} zz commit_changeset (${ALICE.actor}): ${csId}`,
    );
    // A second landing citing the answered Ask is refused.
    await rejects(env.commit({ ask_id: askId, changeset_id: csId }), 'conflict', /answered/);
    env.assertFsck();
  });

  it('merges cleanly onto a branch that moved (another file changed meanwhile)', async () => {
    const env = await setup();
    const h0 = env.head();
    const { csId, askId } = await env.changeset(
      [{ path: 'a.txt', content: 'from the agent\n' }],
      h0,
    );
    const h1 = env.userCommit({ 'b.txt': 'from the user\n' });
    const r = await env.commit({ ask_id: askId, changeset_id: csId });
    expect(r).toMatchObject({ merged: true, fast_forward: false, previous_head: h1 });
    expect(env.head()).toBe(r.commit);
    expect(env.git('rev-parse', `${r.commit}^@`)).toBe(h1);
    expect(env.git('ls-tree', '-r', '--name-only', r.commit).split('\n')).toEqual([
      'README.md',
      'a.txt',
      'b.txt',
    ]);
    expect(env.git('log', '-1', '--format=%s|%an|%cn', r.commit)).toBe(`Change|${AGENT.actor}|zz`);
    expect(env.read('a.txt')).toBe('from the agent\n');
    expect(env.read('b.txt')).toBe('from the user\n');
    expect(env.status()).toBe('');
    expect(r.ask.answer!.result).toContain(r.commit);
    env.assertFsck();
  });

  it('commits whole files on expected_head, authored by the caller', async () => {
    const env = await setup();
    const askId = await env.submitAsk();
    const h0 = env.head();
    const r = await env.commit({
      ask_id: askId,
      message: 'Add docs\n\nWith a body.',
      expected_head: h0,
      files: [
        { path: 'docs/guide.md', content: '# Guide\n' },
        {
          path: 'bin.dat',
          content: Buffer.from([0, 1, 2, 255]).toString('base64'),
          encoding: 'base64',
        },
        { path: 'README.md', content: null },
      ],
    });
    expect(r).toMatchObject({
      fast_forward: true,
      merged: false,
      previous_head: h0,
      changeset_id: null,
    });
    expect(env.git('rev-parse', `${r.commit}^@`)).toBe(h0);
    expect(env.git('log', '-1', '--format=%an <%ae>|%cn|%B', r.commit)).toBe(
      `${ALICE.actor} <${ALICE.actor}>|zz|Add docs\n\nWith a body.`,
    );
    expect(env.read('docs/guide.md')).toBe('# Guide\n');
    expect([...readFileSync(join(env.dir, 'bin.dat'))]).toEqual([0, 1, 2, 255]);
    expect(existsSync(join(env.dir, 'README.md'))).toBe(false);
    expect(env.status()).toBe('');
    // The Ask was not held by ALICE (posted, not claimed): it stays open.
    expect(r.ask.state).toBe('open');
    // A stale expected_head is a 409 naming the current head; nothing moves.
    const e = await rejects(
      env.commit({
        ask_id: askId,
        message: 'x',
        expected_head: h0,
        files: [{ path: 'x', content: 'x' }],
      }),
      'conflict',
      /expected_head/,
    );
    expect((e.details as { current_head: string }).current_head).toBe(r.commit);
    expect(env.head()).toBe(r.commit);
    env.assertFsck();
  });

  it('on a conflict answers 409 merge_conflict and posts a resolve_conflict Ask', async () => {
    const env = await setup();
    const h0 = env.head();
    const { csId, askId } = await env.changeset(
      [{ path: 'README.md', content: '# agent\n' }],
      h0,
      'Retitle',
    );
    const h1 = env.userCommit({ 'README.md': '# user\n' });
    const e = await rejects(
      env.commit({ ask_id: askId, changeset_id: csId }),
      'merge_conflict',
      /README\.md/,
    );
    expect(e.status).toBe(409);
    const d = e.details as Record<string, unknown>;
    expect(d).toMatchObject({ changeset_id: csId, head: h1, conflicting_paths: ['README.md'] });
    const resolve = (await asks(env)).filter(
      (a: { kind: string }) => a.kind === 'resolve_conflict',
    );
    expect(resolve).toHaveLength(1);
    expect(resolve[0]).toMatchObject({
      ask_id: d.resolve_conflict_ask_id,
      state: 'open',
      posted_by: 'zz@localhost',
      origin: { ask_id: askId, reason: 'merge conflict at commit time' },
      payload: { changeset_id: csId, head: h1, base: h0, conflicting_paths: ['README.md'] },
    });
    // Nothing moved; the submit Ask is still held; a retry cites the same Ask, no duplicate.
    expect(env.head()).toBe(h1);
    expect(env.read('README.md')).toBe('# user\n');
    expect(env.status()).toBe('');
    await rejects(env.commit({ ask_id: askId, changeset_id: csId }), 'merge_conflict');
    expect(
      (await asks(env)).filter((a: { kind: string }) => a.kind === 'resolve_conflict'),
    ).toHaveLength(1);
    // The coordinator resolves it with whole files on the current head, citing that Ask.
    await call(env.repo, ALICE, 'ask_claim', { lane_id: 'ship', ask_id: resolve[0]!.ask_id });
    const r = await env.commit({
      ask_id: resolve[0]!.ask_id,
      message: 'Retitle (resolved)',
      expected_head: h1,
      files: [{ path: 'README.md', content: '# agent and user\n' }],
    });
    expect(r.ask).toMatchObject({ state: 'answered', answer: { outcome: 'complete' } });
    expect(env.read('README.md')).toBe('# agent and user\n');
    env.assertFsck();
  });

  it('a conflict replayed by idempotency_key fails the same way without posting again', async () => {
    const env = await setup();
    const { csId, askId } = await env.changeset([{ path: 'README.md', content: 'A\n' }]);
    env.userCommit({ 'README.md': 'B\n' });
    const args = { ask_id: askId, changeset_id: csId, idempotency_key: 'land-1' };
    const e1 = await rejects(env.commit(args), 'merge_conflict');
    const e2 = await rejects(env.commit(args), 'merge_conflict');
    expect(e2.details).toEqual(e1.details);
    expect(
      (await asks(env)).filter((a: { kind: string }) => a.kind === 'resolve_conflict'),
    ).toHaveLength(1);
  });

  it('of concurrent commits on the same expected_head exactly one wins', async () => {
    const env = await setup();
    const h0 = env.head();
    const ids = await Promise.all(Array.from({ length: 6 }, () => env.submitAsk()));
    const results = await Promise.allSettled(
      ids.map((askId, i) =>
        env.commit({
          ask_id: askId,
          message: `racer ${i}`,
          expected_head: h0,
          files: [{ path: `racer-${i}.txt`, content: `${i}\n` }],
        }),
      ),
    );
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(5);
    for (const l of lost) {
      expect(l.reason).toBeInstanceOf(ZzError);
      expect((l.reason as ZzError).code).toBe('conflict');
      expect((l.reason as ZzError).status).toBe(409);
    }
    const winner = (won[0] as PromiseFulfilledResult<{ commit: string }>).value.commit;
    expect(env.head()).toBe(winner);
    expect(env.git('rev-list', '--count', `${h0}..main`)).toBe('1');
    expect(env.status()).toBe('');
    env.assertFsck();
  });

  it('concurrent changesets on one base all land, merged one after another', async () => {
    const env = await setup();
    const h0 = env.head();
    const sets = [];
    for (let i = 0; i < 3; i++)
      sets.push(await env.changeset([{ path: `f${i}.txt`, content: `${i}\n` }], h0));
    const rs = await Promise.all(
      sets.map((s) => env.commit({ ask_id: s.askId, changeset_id: s.csId })),
    );
    expect(rs.filter((r) => r.fast_forward)).toHaveLength(1);
    expect(rs.filter((r) => r.merged)).toHaveLength(2);
    expect(env.git('rev-list', '--count', `${h0}..main`)).toBe('3');
    for (let i = 0; i < 3; i++) expect(env.read(`f${i}.txt`)).toBe(`${i}\n`);
    expect(env.status()).toBe('');
    env.assertFsck();
  });

  it('refuses hostile paths with 400 and moves nothing', async () => {
    const env = await setup();
    symlinkSync('/tmp', join(env.dir, 'outside'));
    symlinkSync('..', join(env.dir, 'up'));
    const h1 = env.userCommit({ 'dir/file.txt': 'f\n' }, 'links');
    const askId = await env.submitAsk();
    for (const path of [
      '../x',
      '/etc/passwd',
      '.git/config',
      'a/../../b',
      'dir/./x',
      '.GIT/hooks/pre-commit',
      'outside/x',
      'up/escape.txt',
      'outside',
      'dir',
      'dir/file.txt/x',
    ]) {
      await rejects(
        env.commit({
          ask_id: askId,
          message: 'evil',
          expected_head: h1,
          files: [{ path, content: 'x' }],
        }),
        'invalid_argument',
      );
    }
    // ask_answer refuses a changeset through the symlink when it is recorded (hardening 11.8);
    // one whose ref arrived another way (a sync, a push) is still refused at landing.
    await rejects(
      env.changeset([{ path: 'outside/passwd', content: 'x' }]),
      'invalid_argument',
      /symlink/,
    );
    const idx = join(env.dir, '.git', 'evil-index');
    const plumb = (...args: string[]) =>
      execFileSync('git', args, {
        cwd: env.dir,
        encoding: 'utf8',
        env: { ...process.env, GIT_INDEX_FILE: idx },
      }).trim();
    plumb('read-tree', h1);
    const blob = plumb('hash-object', '-w', '--stdin');
    plumb('update-index', '--add', '--replace', '--cacheinfo', `100644,${blob},outside/passwd`);
    const evil = plumb('commit-tree', plumb('write-tree'), '-p', h1, '-m', 'evil');
    const csId = 'cs-00000e0e0e';
    env.git('update-ref', `refs/zz/changesets/${csId}`, evil);
    const e = await rejects(
      env.commit({ ask_id: await env.submitAsk(), changeset_id: csId }),
      'invalid_argument',
      /symlink/,
    );
    expect(e.status).toBe(400);
    expect(env.head()).toBe(h1);
    expect(env.status()).toBe('');
    env.assertFsck();
  });

  it('lands a changeset by id only once a maintainer granted its review (412 before, nothing moved)', async () => {
    const env = await setup();
    const h = env.head();
    const w = (
      await call(env.repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' })
    ).ask;
    await call(env.repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
    const ans = await call(env.repo, AGENT, 'ask_answer', {
      lane_id: 'ship',
      ask_id: w.ask_id,
      outcome: 'complete',
      changeset: { base: h, message: 'w', files: [{ path: 'evil.sh', content: 'x\n' }] },
    });
    const csId = ans.changeset_id as string;
    // A coordinator's hand-posted submit_changeset (as a model obeying an injected Ask made it).
    const askId = await env.submitAsk();
    await call(env.repo, ALICE, 'ask_claim', { lane_id: 'ship', ask_id: askId });
    const e = await rejects(
      env.commit({ ask_id: askId, changeset_id: csId }),
      'precondition_failed',
      /no granted changeset_review/,
    );
    expect(e.status).toBe(412);
    expect(env.head()).toBe(h);
    // A denied review is no grant either.
    const review = ans.follow_ups[0]!.ask_id;
    await call(env.repo, BOB, 'ask_claim', { lane_id: 'ship', ask_id: review });
    await call(env.repo, BOB, 'ask_answer', { lane_id: 'ship', ask_id: review, outcome: 'deny' });
    await rejects(env.commit({ ask_id: askId, changeset_id: csId }), 'precondition_failed');
    expect(env.head()).toBe(h);
    expect(env.status()).toBe('');
  });

  it('only coordinators of the Lane may commit; the Ask must be a landing Ask of that Lane', async () => {
    const env = await setup();
    const { csId, askId } = await env.changeset([{ path: 'x.txt', content: 'x\n' }]);
    const h = env.head();
    const e = await rejects(env.commit({ ask_id: askId, changeset_id: csId }, BOB), 'forbidden');
    expect(e.status).toBe(403);
    await rejects(env.commit({ ask_id: askId, changeset_id: csId }, AGENT), 'forbidden');
    await rejects(env.commit({ ask_id: askId, changeset_id: csId, actor: BOB.actor }), 'forbidden');
    await rejects(env.commit({ ask_id: 'ask-0000000000', changeset_id: csId }), 'not_found');
    await rejects(
      env.commit({ ask_id: askId, changeset_id: 'cs-0000000000' }),
      'invalid_argument',
      new RegExp(`submits ${csId}`),
    );
    await rejects(
      env.commit({ ask_id: await env.submitAsk(), changeset_id: 'cs-0000000000' }),
      'not_found',
    );
    const work = (
      await call(env.repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' })
    ).ask.ask_id;
    await rejects(env.commit({ ask_id: work, changeset_id: csId }), 'invalid_argument', /work/);
    // Both forms at once, or neither, or files without expected_head.
    await rejects(env.commit({ ask_id: askId }), 'invalid_argument');
    await rejects(
      env.commit({ ask_id: askId, changeset_id: csId, files: [{ path: 'a', content: 'a' }] }),
      'invalid_argument',
    );
    await rejects(
      env.commit({ ask_id: askId, message: 'm', files: [{ path: 'a', content: 'a' }] }),
      'invalid_argument',
      /expected_head/,
    );
    await rejects(
      call(env.repo, ALICE, 'commit_changeset', {
        lane_id: 'nope',
        ask_id: askId,
        changeset_id: csId,
      }),
      'not_found',
    );
    expect(env.head()).toBe(h);
  });

  it('a retry with the same idempotency_key returns the original landing', async () => {
    const env = await setup();
    const askId = await env.submitAsk();
    const h0 = env.head();
    const args = {
      ask_id: askId,
      message: 'once',
      expected_head: h0,
      files: [{ path: 'once.txt', content: '1\n' }],
      idempotency_key: 'k-1',
    };
    const a = await env.commit(args);
    const b = await env.commit(args);
    expect(b).toMatchObject({ commit: a.commit, replayed: true, previous_head: h0 });
    expect(env.git('rev-list', '--count', `${h0}..main`)).toBe('1');
    await rejects(env.commit({ ...args, message: 'other' }), 'idempotency_conflict');
  });

  it('needs a git repository', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'ship', title: 'Ship' });
    const ask = (
      await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'submit_changeset', title: 't' })
    ).ask;
    await rejects(
      call(repo, ALICE, 'commit_changeset', {
        lane_id: 'ship',
        ask_id: ask.ask_id,
        changeset_id: 'cs-0000000000',
      }),
      'precondition_failed',
    );
  });
});
