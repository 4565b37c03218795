import { afterEach, describe, expect, it } from 'vitest';
import type { Caller } from '../../src/core/index.js';
import { ALICE, call, gitRepo, rejects } from '../helpers/core-fixture.js';
import { sh } from '../helpers/temp-repo.js';

// Hardening 11.12, the landing side: a coordinator revoked while holding a submit_changeset
// must not land it through commit_changeset either (ask_answer is covered in
// test/core/revoked-and-grouped.test.ts): 403, the branch unmoved, the Ask still claimed.

const CAROL: Caller = { actor: 'carol@example.com' };
let done: (() => void) | null = null;
afterEach(() => done?.());

describe('a revoked coordinator holding a submit_changeset', () => {
  it('cannot land it with commit_changeset (403), and main does not move', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    done = cleanup;
    await call(repo, ALICE, 'lane_propose', { lane_id: 's', title: 'S' });
    await call(repo, ALICE, 'lane_grant', {
      lane_id: 's',
      grantee: CAROL.actor,
      role: 'coordinator',
    });
    const { ask } = await call(repo, ALICE, 'ask_post', {
      lane_id: 's',
      kind: 'submit_changeset',
      title: 'Land by hand',
    });
    await call(repo, CAROL, 'ask_claim', { lane_id: 's', ask_id: ask.ask_id });
    await call(repo, ALICE, 'lane_grant', {
      lane_id: 's',
      grantee: CAROL.actor,
      role: 'coordinator',
      revoke: true,
    });
    const head = sh(dir, 'rev-parse', 'main');
    const e = await rejects(
      call(repo, CAROL, 'commit_changeset', {
        lane_id: 's',
        ask_id: ask.ask_id,
        message: 'm',
        expected_head: head,
        files: [{ path: 'landed.txt', content: 'x\n' }],
      }),
      'forbidden',
    );
    expect(e.status).toBe(403);
    expect(sh(dir, 'rev-parse', 'main')).toBe(head);
    const got = await call(repo, ALICE, 'ask_get', { lane_id: 's', ask_id: ask.ask_id });
    expect(got.ask.state).toBe('claimed');
  });
});
