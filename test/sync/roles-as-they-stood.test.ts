import { describe, expect, it } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import {
  askAnswer,
  askClaim,
  askPost,
  laneClose,
  laneGet,
  laneGrant,
  lanePropose,
  roleGrant,
} from '../../src/core/index.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// Scopes and roles re-checked as they stood at that point of the log (DESIGN §7), on real git:
// a role revoked on machine A while its holder keeps writing offline on machine B. After sync,
// B's later ops are refused (scope_denied) on every replica, from a warm daemon's fold and from
// a cold one, and what they would have changed did not happen anywhere.

const OWNER = { actor: 'owner@example.com' };
const MAINT = { actor: 'mia@example.com' };
const CO = { actor: 'co@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const refused = (repo: ZzRepo, lane = 'web') => refusalsIn(repo, OWNER, lane);

/** The same verdict on a fresh ZzRepo (a daemon started after the sync folds from scratch). */
const cold = (c: Clone, lane = 'web') =>
  onColdRepo(c, async (repo) => ({
    refused: await refused(repo, lane),
    lane: await laneGet(repo, OWNER, { lane_id: lane }),
  }));

describe('roles as they stood at that point of the log (real git, two clones)', () => {
  it('a maintainer revoked on A who keeps working offline on B is refused everywhere', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: MAINT.actor, role: 'maintainer' });
    const review = (
      await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'changeset_review', title: 'Review x' })
    ).ask;
    await a.sync();
    await b.sync();

    // A: the owner revokes Mia and publishes it. B has not heard: Mia claims and grants there.
    await laneGrant(a.repo, OWNER, {
      lane_id: 'web',
      grantee: MAINT.actor,
      role: 'maintainer',
      revoke: true,
    });
    await a.sync();
    await askClaim(b.repo, MAINT, { lane_id: 'web', ask_id: review.ask_id });
    const answered = await askAnswer(b.repo, MAINT, {
      lane_id: 'web',
      ask_id: review.ask_id,
      outcome: 'grant',
    });
    // B's daemon honoured it offline (it could not know), follow-up and all.
    expect(answered.follow_ups.map((f) => f.kind)).toEqual(['submit_changeset']);

    const report = await b.sync();
    // The claim needed the role Mia no longer held; the answer then came from no holder, and
    // the follow-up it posted is not posted.
    const expected = [
      ['ask_claim', MAINT.actor, 'scope_denied'],
      ['ask_answer', MAINT.actor, 'not_holder'],
      ['ask_post', MAINT.actor, 'follow_up_of_refused_answer'],
    ];
    expect(report.rejected.map((r) => [r.op, r.actor, r.reason])).toEqual(expected);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      expect(await refused(c.repo)).toEqual(expected);
      const fresh = await cold(c);
      expect(fresh.refused).toEqual(expected);
      const asks = fresh.lane.asks;
      // The review is still open, nobody holds it, and its follow-up was never posted.
      expect(asks.find((x) => x.ask_id === review.ask_id)).toMatchObject({
        state: 'open',
        holder: null,
      });
      expect(asks.filter((x) => x.kind === 'submit_changeset')).toEqual([]);
      expect(fresh.lane.lane.maintainers).not.toContain(MAINT.actor);
    }
  });

  it('an owner revoked on A who closes a Lane offline on B (after the revocation) is refused', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner' });
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    // The owner revokes the co-owner on A first (the recorded times order the two logs).
    await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner', revoke: true });
    await a.sync();
    // Only an owner (Co is no coordinator of web) may close it; B still thinks Co is one.
    await laneClose(b.repo, CO, { lane_id: 'web', reason: 'done' });
    expect((await laneGet(b.repo, OWNER, { lane_id: 'web' })).lane.closed).toBeTruthy();
    // The Lane did not diverge (only B wrote to it): B's sync takes A's config and pushes
    // its Lane as it is, and says which of its ops the new roles refuse.
    const report = await b.sync();
    expect(report.fast_forwarded).toEqual(['refs/zz/config']);
    expect(report.pushed).toEqual(['refs/zz/lanes/web']);
    expect(report.rejected.map((r) => [r.op, r.actor, r.reason, r.needed])).toEqual([
      ['lane_close', CO.actor, 'scope_denied', 'coordinator_or_owner'],
    ]);
    await a.sync();
    for (const c of [a, b]) {
      // The warm daemon on B folded its Lane before the config moved: it folds again.
      expect(await refused(c.repo)).toEqual([['lane_close', CO.actor, 'scope_denied']]);
      const fresh = await cold(c);
      expect(fresh.refused).toEqual([['lane_close', CO.actor, 'scope_denied']]);
      expect(fresh.lane.lane.closed ?? null).toBeNull();
    }
  });

  it('an op made while the role was held stays honoured after a later revocation', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: MAINT.actor, role: 'maintainer' });
    const review = (
      await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'changeset_review', title: 'Review x' })
    ).ask;
    await a.sync();
    await b.sync();
    // Mia claims on B and publishes first; the revocation on A comes after it in the log.
    await askClaim(b.repo, MAINT, { lane_id: 'web', ask_id: review.ask_id });
    await b.sync();
    await laneGrant(a.repo, OWNER, {
      lane_id: 'web',
      grantee: MAINT.actor,
      role: 'maintainer',
      revoke: true,
    });
    await a.sync();
    await b.sync();
    for (const c of [a, b]) {
      expect(await refused(c.repo)).toEqual([]);
      const ask = (await cold(c)).lane.asks.find((x) => x.ask_id === review.ask_id);
      expect(ask).toMatchObject({ state: 'claimed', holder: MAINT.actor });
    }
  });
});
