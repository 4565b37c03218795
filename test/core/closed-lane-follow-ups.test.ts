import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AGENT, ALICE, BOB, call, gitRepo, rejects, ownerGrants } from '../helpers/core-fixture.js';

// Closing a Lane stops new work, not work in hand (src/core/lane-closed.ts). Work answered
// after the close with a changeset must still be reviewed and landed: before, its review (and
// every later step) could be claimed by nobody, owners included, and nothing reopens a Lane,
// so the finished work was stranded while its worker had been told "answered". Checked red:
// with finishesWorkInHand() false, the review's claim is refused (lane_closed), claim_next
// answers lane_closed with the review waiting, and query_claimable lists nothing.

type Ask = { ask_id: string; kind: string; title: string; state: string };

describe('the follow-ups of work in hand on a closed Lane', () => {
  it('are claimed, listed and worked to a landed changeset; new work stays refused', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    try {
      const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' });
      await call(repo, ALICE, 'lane_propose', {
        lane_id: 'wf',
        title: 'WF',
        maintainers: [BOB.actor],
      });
      await ownerGrants(repo, 'wf', { coordinators: [ALICE], maintainers: [BOB] });
      const post = async (title: string) =>
        (await call(repo, ALICE, 'ask_post', { lane_id: 'wf', kind: 'work', title })).ask as Ask;
      const w = await post('Add hello');
      const idle = await post('Not started');
      await call(repo, AGENT, 'ask_claim', { lane_id: 'wf', ask_id: w.ask_id });
      await call(repo, ALICE, 'lane_close', { lane_id: 'wf', reason: 'wrapping up' });

      // The holder finishes: the answer is taken, and its review is posted.
      const ans = await call(repo, AGENT, 'ask_answer', {
        lane_id: 'wf',
        ask_id: w.ask_id,
        outcome: 'complete',
        changeset: {
          base: head.trim(),
          message: 'Add hello',
          files: [{ path: 'src/hello.txt', content: 'hi\n' }],
        },
      });
      const review = ans.follow_ups[0] as Ask;
      expect(review.kind).toBe('changeset_review');

      // A maintainer sees only the review as claimable, and claim_next hands it out.
      const q = await call(repo, BOB, 'ask_query_claimable', { lane_id: 'wf' });
      expect((q.asks as Ask[]).map((a) => a.ask_id)).toEqual([review.ask_id]);
      expect(q.total).toBe(1);
      const next = await call(repo, BOB, 'ask_claim_next', { lane_id: 'wf' });
      expect(next.ask?.ask_id).toBe(review.ask_id);
      expect(next).not.toHaveProperty('lane_closed');

      // New work is still refused, and with the review taken claim_next says the Lane is shut.
      await rejects(
        call(repo, AGENT, 'ask_claim', { lane_id: 'wf', ask_id: idle.ask_id }),
        'conflict',
        /lane wf was closed by .* \(wrapping up\): it hands out no new claims/,
      );
      const none = await call(repo, AGENT, 'ask_claim_next', { lane_id: 'wf' });
      expect(none.ask).toBeNull();
      expect(none.lane_closed).toMatchObject({ reason: 'wrapping up' });

      // Grant → submit_changeset, claimed by the coordinator, who lands it.
      const granted = await call(repo, BOB, 'ask_answer', {
        lane_id: 'wf',
        ask_id: review.ask_id,
        outcome: 'grant',
        result: 'lgtm',
      });
      const submit = granted.follow_ups[0] as Ask;
      expect(submit.kind).toBe('submit_changeset');
      await call(repo, ALICE, 'ask_claim', { lane_id: 'wf', ask_id: submit.ask_id });
      const landed = await call(repo, ALICE, 'commit_changeset', {
        lane_id: 'wf',
        ask_id: submit.ask_id,
        changeset_id: ans.changeset_id,
      });
      expect(landed.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(
        execFileSync('git', ['show', `${String(landed.commit)}:src/hello.txt`], {
          cwd: dir,
          encoding: 'utf8',
        }),
      ).toBe('hi\n');
    } finally {
      cleanup();
    }
  });
});
