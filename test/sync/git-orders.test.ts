import { describe, expect, it } from 'vitest';
import { askClaim, askPost, lanePropose, laneGet } from '../../src/core/index.js';
import { fsckProblems } from '../helpers/temp-repo.js';
import { cleanUpClusters, makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// Three clones of one bare remote, offline work on all of them, then sync in every order:
// whatever the order, all converge on one state that holds every op, with one holder per Ask.

let cluster: Cluster | null = null;
cleanUpClusters();

const PERMUTATIONS = [
  [0, 1, 2],
  [0, 2, 1],
  [1, 0, 2],
  [1, 2, 0],
  [2, 0, 1],
  [2, 1, 0],
];

describe('three clones, sync in every order', () => {
  it('converges with every op kept and one holder per Ask', async () => {
    cluster = await makeCluster(3);
    const { clones } = cluster;
    const owner = { actor: 'owner@example.com' };
    await lanePropose(clones[0]!.repo, owner, { lane_id: 'web', title: 'Web' });
    // One fresh Ask per order, everywhere before anyone goes offline: posted together, they
    // cost one round of syncs instead of one per order (this test is ~60 git syncs; at CI's
    // load it crossed its bound with a round per order).
    const shared: { ask_id: string }[] = [];
    for (const n of PERMUTATIONS.keys()) {
      shared.push(
        (
          await askPost(clones[0]!.repo, owner, {
            lane_id: 'web',
            kind: 'work',
            title: `shared ${n}`,
          })
        ).ask,
      );
    }
    await clones[0]!.sync();
    for (const c of clones.slice(1)) await c.sync();
    let posted = shared.length;
    for (const [n, order] of PERMUTATIONS.entries()) {
      // Offline: everyone posts, and everyone claims the same Ask.
      for (let i = 0; i < 3; i++) {
        await askPost(
          clones[i]!.repo,
          { actor: `p${i}@example.com` },
          { lane_id: 'web', kind: 'work', title: `from ${i}` },
        );
        posted++;
        await askClaim(
          clones[i]!.repo,
          { actor: `p${i}@example.com` },
          { lane_id: 'web', ask_id: shared[n]!.ask_id },
        );
      }
      for (const i of order) await clones[i]!.sync();
      // The last to sync fetched the other two's pushes and pushed the merge: only the first
      // two lack something.
      for (const i of order.slice(0, 2)) await clones[i]!.sync();
      const refs = zzRefs(cluster.remote);
      for (const c of clones) expect(zzRefs(c.dir)).toEqual(refs);
      const holders = new Set<string | null>();
      for (const c of clones) {
        const lane = await laneGet(c.repo, owner, { lane_id: 'web' });
        expect(lane.asks).toHaveLength(posted);
        holders.add(
          lane.asks.find((a: { ask_id: string }) => a.ask_id === shared[n]!.ask_id)?.holder ?? null,
        );
      }
      // The first clone in the order pushed first: its claim stands everywhere.
      expect([...holders]).toEqual([`p${order[0]}@example.com`]);
    }
    for (const c of clones) expect(fsckProblems(c.dir)).toEqual([]);
  }, 400_000);
});
