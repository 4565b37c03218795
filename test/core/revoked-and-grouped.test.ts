import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { Entity, MemoryStore } from '../../src/store/index.js';
import { ALICE, BOB, call, memoryRepo, rejects } from '../helpers/core-fixture.js';
import { docCodec, type DocState } from '../helpers/doc-codec.js';

// Issue 11.12: tests a wrong implementation used to pass.

const CAROL = { actor: 'carol@example.com' };

describe('a role revoked while holding an Ask', () => {
  it('a maintainer revoked while holding a changeset_review cannot answer it (403)', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'r', title: 'R', maintainers: [BOB.actor] });
    const { ask } = await call(repo, ALICE, 'ask_post', {
      lane_id: 'r',
      kind: 'changeset_review',
      title: 'Review by hand',
    });
    await call(repo, BOB, 'ask_claim', { lane_id: 'r', ask_id: ask.ask_id });
    await call(repo, ALICE, 'lane_grant', {
      lane_id: 'r',
      grantee: BOB.actor,
      role: 'maintainer',
      revoke: true,
    });
    await rejects(
      call(repo, BOB, 'ask_answer', { lane_id: 'r', ask_id: ask.ask_id, outcome: 'grant' }),
      'forbidden',
      /maintainers of lane r/,
    );
    const after = await call(repo, ALICE, 'lane_get', { lane_id: 'r' });
    expect(after.asks[0]!.state).toBe('claimed');
    expect(after.asks[0]!.answer).toBeNull();
  });

  it('a coordinator revoked while holding a submit_changeset cannot answer it (403)', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 's', title: 'S' });
    await call(repo, ALICE, 'lane_grant', {
      lane_id: 's',
      grantee: CAROL.actor,
      role: 'coordinator',
    });
    const { ask } = await call(repo, ALICE, 'ask_post', {
      lane_id: 's',
      kind: 'submit_changeset',
      title: 'Submit by hand',
    });
    await call(repo, CAROL, 'ask_claim', { lane_id: 's', ask_id: ask.ask_id });
    await call(repo, ALICE, 'lane_grant', {
      lane_id: 's',
      grantee: CAROL.actor,
      role: 'coordinator',
      revoke: true,
    });
    await rejects(
      call(repo, CAROL, 'ask_answer', {
        lane_id: 's',
        ask_id: ask.ask_id,
        outcome: 'complete',
        result: 'landed',
      }),
      'forbidden',
      /coordinators of lane s/,
    );
  });
});

describe('expected_revision inside a group commit', () => {
  it('a write queued behind another in the same group is still checked', async () => {
    const e = new Entity<DocState>(new MemoryStore(), 'refs/zz/t', docCodec);
    const put = (path: string, value: string) => ({
      actor: 'a@example.com',
      decide: () => ({ op: 'put', args: { path, value }, summary: `put ${path}` }),
      result: () => null,
    });
    const r0 = (await e.mutate(put('a', '1'))).revision;
    // A no-op keeps the queue busy (or is grouped with them), so the two writes queued
    // behind it drain as one group based on r0: the second expects r0, but the first of its
    // group moves the entity past it.
    const hold = e.mutate({ actor: 'a@example.com', decide: () => [], result: () => null });
    const first = e.mutate(put('b', '2'));
    const second = e.mutate({ ...put('c', '3'), expectedRevision: r0 });
    await hold;
    const r1 = (await first).revision;
    expect(r1).not.toBe(r0);
    const err = await second.then(
      () => null,
      (x: unknown) => x,
    );
    expect(err).toBeInstanceOf(ZzError);
    expect((err as ZzError).code).toBe('revision_mismatch');
    expect((err as ZzError).details).toMatchObject({ current_revision: r1 });
    expect((await e.read()).state.has('c')).toBe(false);
  });
});
