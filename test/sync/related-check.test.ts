import { describe, expect, it } from 'vitest';
import { laneAddRelated, laneGet, lanePropose, type ZzRepo } from '../../src/core/index.js';
import { cleanUpClusters, makeCluster, pushRaw, type Clone, type Cluster } from './git-cluster.js';

// lane_add_related arriving by sync is role-checked like every other op (DESIGN §7): its actor
// must have been a coordinator of the Lane it writes, or an owner (not merely a coordinator of
// the related Lane, which any member becomes by proposing one). The daemon
// refuses anyone else; a hand-made commit that skips the daemon is quarantined on import.

const OWNER = { actor: 'owner@example.com' };
const BOB = { actor: 'bob@example.com' };
const MALLORY = { actor: 'mallory@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

/** Writes lane_add_related straight into the Lane's log, as a hand-made commit would. */
async function forgeRelated(repo: ZzRepo, actor: string, lane: string, related: string) {
  await repo.lane(lane).mutate({
    actor,
    // Written past the local checks, as another machine's zz may have: kept even if refused.
    recordRefused: true,
    decide: () => ({
      op: 'lane_add_related',
      summary: `lane_add_related ${lane} → ${related}`,
      args: { lane_id: lane, related_lane_id: related },
    }),
    result: () => null,
  });
}

const relatedOf = async (repo: ZzRepo, lane: string) =>
  (await laneGet(repo, OWNER, { lane_id: lane })).lane.related_lanes;

describe('lane_add_related on import', () => {
  it('from a member with no role on either Lane: quarantined, the relation not taken', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await lanePropose(a.repo, OWNER, { lane_id: 'api', title: 'API' });
    await a.sync();
    await b.sync();
    // Through the daemon Mallory is refused…
    await expect(
      laneAddRelated(b.repo, MALLORY, { lane_id: 'web', related_lane_id: 'api' }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    // …so she writes the op by hand on her clone; her zz sync holds it back, so she pushes it
    // with git (a remote takes anything).
    await forgeRelated(b.repo, MALLORY.actor, 'web', 'api');
    expect((await b.sync()).held_back).toEqual([
      expect.objectContaining({ ref: 'refs/zz/lanes/web' }),
    ]);
    pushRaw(b, 'refs/zz/lanes/web');
    const r = await a.sync();
    expect(r.quarantined).toEqual([
      expect.objectContaining({
        ref: 'refs/zz/lanes/web',
        reason: expect.stringMatching(/lane_add_related by mallory@example\.com/),
      }),
    ]);
    expect(await relatedOf(a.repo, 'web')).toEqual([]);
  });

  it('from a coordinator of the related Lane only (a Lane it proposed itself): quarantined', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    // Bob proposes a Lane on b (so coordinates it) and links it from his own side: fine. Linking
    // it into web, whose list only web's coordinators and owners write, the daemon refuses…
    await lanePropose(b.repo, BOB, { lane_id: 'web-2', title: 'Web 2', related_lanes: ['web'] });
    await expect(
      laneAddRelated(b.repo, BOB, { lane_id: 'web', related_lane_id: 'web-2' }),
    ).rejects.toMatchObject({ code: 'forbidden' });
    // …and an op written past it, pushed with git, is quarantined on import.
    await forgeRelated(b.repo, BOB.actor, 'web', 'web-2');
    await b.sync();
    pushRaw(b, 'refs/zz/lanes/web');
    const r = await a.sync();
    expect(r.quarantined).toEqual([
      expect.objectContaining({
        ref: 'refs/zz/lanes/web',
        reason: expect.stringMatching(/lane_add_related by bob@example\.com/),
      }),
    ]);
    expect(await relatedOf(a.repo, 'web')).toEqual([]);
    expect((await laneGet(a.repo, OWNER, { lane_id: 'web-2' })).lane.related_lanes).toEqual([
      'web',
    ]);
  });
});
