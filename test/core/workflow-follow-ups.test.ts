import { describe, expect, it } from 'vitest';
import type { ZzError } from '../../src/errors.js';
import { laneCodec, laneStateFromFiles, laneRef } from '../../src/core/index.js';
import {
  AGENT,
  ALICE,
  BOB,
  call,
  FakeClock,
  gitRepo,
  parsedLaneOp,
} from '../helpers/core-fixture.js';

// The server's follow-ups on a git repository (work → changeset_review → submit_changeset, deny
// → rework) and claims under concurrency. Lanes and Asks themselves: lanes-asks.test.ts.

describe('workflow follow-ups (on git)', () => {
  it('work → changeset_review → submit_changeset; deny → rework', async () => {
    const clock = new FakeClock();
    const { repo, dir, cleanup } = await gitRepo(clock);
    try {
      const { execFileSync } = await import('node:child_process');
      const head = execFileSync('git', ['rev-parse', 'HEAD'], {
        cwd: dir,
        encoding: 'utf8',
      }).trim();
      await call(repo, ALICE, 'lane_propose', {
        lane_id: 'wf',
        title: 'WF',
        maintainers: [BOB.actor],
      });
      const w = (
        await call(repo, ALICE, 'ask_post', { lane_id: 'wf', kind: 'work', title: 'Add hello' })
      ).ask;
      await call(repo, AGENT, 'ask_claim', { lane_id: 'wf', ask_id: w.ask_id });
      const ans = await call(repo, AGENT, 'ask_answer', {
        lane_id: 'wf',
        ask_id: w.ask_id,
        outcome: 'complete',
        changeset: {
          base: head,
          message: 'Add hello',
          files: [{ path: 'src/hello.txt', content: 'hi\n' }],
        },
      });
      expect(ans.changeset_id).toMatch(/^cs-[0-9a-f]{10}$/);
      expect(ans.follow_ups).toHaveLength(1);
      const review = ans.follow_ups[0]!;
      expect(review.kind).toBe('changeset_review');
      expect(review.payload.changeset_id).toBe(ans.changeset_id);
      expect(review.origin).toEqual({
        ask_id: w.ask_id,
        reason: 'work completed with a changeset',
      });
      // The changeset is a real commit whose parent is the base.
      const cs = execFileSync('git', ['rev-parse', `refs/zz/changesets/${ans.changeset_id}^`], {
        cwd: dir,
        encoding: 'utf8',
      }).trim();
      expect(cs).toBe(head);
      expect(
        execFileSync('git', ['show', `refs/zz/changesets/${ans.changeset_id}:src/hello.txt`], {
          cwd: dir,
          encoding: 'utf8',
        }),
      ).toBe('hi\n');
      await call(repo, BOB, 'ask_claim', { lane_id: 'wf', ask_id: review.ask_id });
      const denied = await call(repo, BOB, 'ask_answer', {
        lane_id: 'wf',
        ask_id: review.ask_id,
        outcome: 'deny',
        result: 'needs tests',
      });
      const rework = denied.follow_ups[0]!;
      expect(rework.kind).toBe('work');
      expect(rework.title).toBe('Rework: Add hello');
      expect(rework.payload.review).toBe('needs tests');
      await call(repo, AGENT, 'ask_claim', { lane_id: 'wf', ask_id: rework.ask_id });
      const ans2 = await call(repo, AGENT, 'ask_answer', {
        lane_id: 'wf',
        ask_id: rework.ask_id,
        outcome: 'complete',
        changeset: {
          base: head,
          message: 'Add hello with tests',
          files: [
            { path: 'src/hello.txt', content: 'hi\n' },
            { path: 'test/hello.txt', content: 'ok\n' },
          ],
        },
      });
      const review2 = ans2.follow_ups[0]!;
      await call(repo, BOB, 'ask_claim', { lane_id: 'wf', ask_id: review2.ask_id });
      const granted = await call(repo, BOB, 'ask_answer', {
        lane_id: 'wf',
        ask_id: review2.ask_id,
        outcome: 'grant',
        result: 'lgtm',
      });
      expect(granted.follow_ups[0]!.kind).toBe('submit_changeset');
      expect(granted.follow_ups[0]!.payload.changeset_id).toBe(ans2.changeset_id);
      // Fold invariant: replaying the op log reproduces the stored tree.
      const snap = await repo.lane('wf').read();
      const stored = laneStateFromFiles(await repo.store.readAll(snap.revision!));
      expect(stored.lane).toEqual(snap.state.lane);
      // By ask id: files come back in the tree's order (git's), not the Asks' creation order.
      expect(Object.fromEntries(stored.asks)).toEqual(Object.fromEntries(snap.state.asks));
      const folded = laneCodec.empty();
      for (const c of await repo.store.history(laneRef('wf')))
        for (const op of c.ops) laneCodec.apply(folded, parsedLaneOp(op));
      expect(folded.asks).toEqual(snap.state.asks);
      execFileSync('git', ['fsck', '--strict', '--no-dangling'], { cwd: dir });
    } finally {
      cleanup();
    }
  });

  it('32 concurrent claimers on 1,000 Asks: each claimed exactly once', async () => {
    const { repo, cleanup } = await gitRepo();
    try {
      await call(repo, ALICE, 'lane_propose', { lane_id: 'race', title: 'Race' });
      const ids: string[] = [];
      await Promise.all(
        Array.from({ length: 1000 }, async (_, i) => {
          ids.push(
            (await call(repo, ALICE, 'ask_post', { lane_id: 'race', kind: 'work', title: `t${i}` }))
              .ask.ask_id,
          );
        }),
      );
      const wins = new Map<string, string[]>();
      let conflicts = 0;
      await Promise.all(
        Array.from({ length: 32 }, async (_, w) => {
          const me = { actor: `agent${w}@example.com` };
          for (let i = 0; i < ids.length; i++) {
            const id = ids[(i + w * 31) % ids.length]!;
            try {
              await call(repo, me, 'ask_claim', { lane_id: 'race', ask_id: id });
              wins.set(id, [...(wins.get(id) ?? []), me.actor]);
            } catch (e) {
              if ((e as ZzError).code !== 'already_claimed') throw e;
              conflicts++;
            }
          }
        }),
      );
      expect(wins.size).toBe(1000);
      for (const holders of wins.values()) expect(holders).toHaveLength(1);
      expect(conflicts).toBe(32 * 1000 - 1000);
      const snap = await repo.lane('race').read();
      for (const [id, [holder]] of wins) expect(snap.state.asks.get(id)!.holder).toBe(holder);
    } finally {
      cleanup();
    }
  });
});
