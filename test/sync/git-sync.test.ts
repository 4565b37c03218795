import { relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { askClaim, askPost, lanePropose, laneGet } from '../../src/core/index.js';
import { fsckProblems, sh } from '../helpers/temp-repo.js';
import { cleanUpClusters, makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// zz sync on real git: a bare remote and clones that work offline, then sync in every order.

const OWNER = { actor: 'owner@example.com' };
const ALICE = { actor: 'alice@example.com' };
const BOB = { actor: 'bob@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

async function laneState(c: Cluster, i: number, lane: string) {
  const r = await laneGet(c.clones[i]!.repo, OWNER, { lane_id: lane });
  return r;
}

describe('zz sync on real git', () => {
  it('a second clone adopts, offline work on both merges, everything converges; a no-op sync commits nothing', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    expect(zzRefs(b.dir).get('refs/zz/config')).toBe(zzRefs(a.dir).get('refs/zz/config'));
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const ask = (await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'one' })).ask;
    expect((await a.sync()).pushed).toEqual(['refs/zz/lanes/web']);
    expect((await b.sync()).adopted).toEqual(['refs/zz/lanes/web']);
    // Offline on both: each posts an Ask.
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'from a' });
    await askPost(b.repo, ALICE, { lane_id: 'web', kind: 'work', title: 'from b' });
    const ra = await a.sync();
    expect(ra.pushed).toEqual(['refs/zz/lanes/web']);
    const rb = await b.sync();
    expect(rb.merged.map((m) => m.ref)).toEqual(['refs/zz/lanes/web']);
    expect(rb.pushed).toEqual(['refs/zz/lanes/web']);
    await a.sync();
    const refsA = zzRefs(a.dir);
    expect(zzRefs(b.dir)).toEqual(refsA);
    expect(zzRefs(cluster.remote)).toEqual(refsA);
    const titles = (s: Awaited<ReturnType<typeof laneState>>) =>
      s.asks.map((x: { title: string }) => x.title).sort();
    expect(titles(await laneState(cluster, 0, 'web'))).toEqual(['from a', 'from b', 'one']);
    expect(titles(await laneState(cluster, 1, 'web'))).toEqual(['from a', 'from b', 'one']);
    // The merge commit: parents [remote tip, local tip], Zz-Op: merge, no op block.
    const merge = rb.merged[0]!.commit;
    const parents = sh(b.dir, 'rev-list', '--parents', '-n1', merge).split(' ').slice(1);
    expect(parents).toHaveLength(2);
    expect(sh(b.dir, 'log', '-1', '--format=%B', merge)).toMatch(/Zz-Op: merge\nZz-Lamport: \d+/);
    // Nothing new: no commit, no push, no ref moves.
    const before = zzRefs(a.dir);
    const again = await a.sync();
    expect(again.pushed).toEqual([]);
    expect(again.merged).toEqual([]);
    expect(zzRefs(a.dir)).toEqual(before);
    expect(fsckProblems(a.dir)).toEqual([]);
    expect(fsckProblems(b.dir)).toEqual([]);
    void ask;
  });

  it('a remote named by a relative path, as git resolves it (from the top of the checkout)', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    // `git remote add origin ../hub.git`: git's own fetch works from anywhere in the checkout.
    sh(b.dir, 'remote', 'set-url', 'origin', relative(b.dir, cluster.remote));
    sh(b.dir, 'fetch', '-q', 'origin');
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    expect((await b.sync()).adopted).toEqual(['refs/zz/lanes/web']);
    await askPost(b.repo, ALICE, { lane_id: 'web', kind: 'work', title: 'from b' });
    expect((await b.sync()).pushed).toEqual(['refs/zz/lanes/web']);
    expect(zzRefs(cluster.remote)).toEqual(zzRefs(b.dir));
  });

  it('a pushed claim is never taken back by an offline one with a smaller clock; the loser is told', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const ask = (await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'x' })).ask;
    await a.sync();
    await b.sync();
    // b claims offline first (and writes more, so its clock runs ahead), a claims and pushes.
    await askPost(b.repo, BOB, { lane_id: 'web', kind: 'work', title: 'pad' });
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: ask.ask_id });
    await askClaim(a.repo, ALICE, { lane_id: 'web', ask_id: ask.ask_id });
    await a.sync();
    const rb = await b.sync();
    expect(rb.claims_lost).toEqual([
      expect.objectContaining({ ask_id: ask.ask_id, loser: BOB.actor, winner: ALICE.actor }),
    ]);
    await a.sync();
    for (const i of [0, 1]) {
      const s = await laneState(cluster, i, 'web');
      const x = s.asks.find((q: { ask_id: string }) => q.ask_id === ask.ask_id);
      expect(x?.holder).toBe(ALICE.actor);
    }
  });

  it('a ref deleted on the remote is recreated with a must-not-exist lease; a force-pushed rewind loses nothing', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'one' });
    await a.sync();
    const first = zzRefs(cluster.remote).get('refs/zz/lanes/web')!;
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'two' });
    await a.sync();
    await b.sync();
    // Someone deletes the lane on the remote.
    sh(cluster.remote, 'update-ref', '-d', 'refs/zz/lanes/web');
    const r = await b.sync();
    expect(r.recreated).toEqual(['refs/zz/lanes/web']);
    expect(zzRefs(cluster.remote).get('refs/zz/lanes/web')).toBe(
      zzRefs(b.dir).get('refs/zz/lanes/web'),
    );
    // Someone force-pushes the lane back to an older commit.
    sh(cluster.remote, 'update-ref', 'refs/zz/lanes/web', first);
    const r2 = await a.sync();
    expect(r2.pushed).toEqual(['refs/zz/lanes/web']);
    const s = await laneState(cluster, 0, 'web');
    expect(s.asks.map((x: { title: string }) => x.title).sort()).toEqual(['one', 'two']);
    expect(zzRefs(cluster.remote).get('refs/zz/lanes/web')).toBe(
      zzRefs(a.dir).get('refs/zz/lanes/web'),
    );
  });

  it('offline: one clear report, nothing lost, local state intact', async () => {
    cluster = await makeCluster(1);
    const [a] = cluster.clones;
    await lanePropose(a!.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const before = zzRefs(a!.dir);
    sh(a!.dir, 'remote', 'set-url', 'origin', cluster.remote + '-gone');
    const r = await a!.sync();
    expect(r.offline).toMatch(/does not appear to be a git repository|Could not read/);
    expect(zzRefs(a!.dir)).toEqual(before);
  });

  it('two independent zz inits merge: one config, both owners\u2019 work kept', async () => {
    cluster = await makeCluster(2, { initAll: true });
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    await lanePropose(b.repo, OWNER, { lane_id: 'api', title: 'API' });
    const rb = await b.sync();
    expect(rb.merged.map((m) => m.ref)).toContain('refs/zz/config');
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    expect((await a.repo.requireConfig()).owners).toContain('owner@example.com');
    expect((await laneState(cluster, 0, 'api')).lane.title).toBe('API');
  });
});
