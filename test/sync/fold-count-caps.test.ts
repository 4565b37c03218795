import { execFileSync } from 'node:child_process';
import { describe, expect, it, vi } from 'vitest';
import {
  askAnswer,
  askClaim,
  askPost,
  laneGet,
  lanePropose,
  roleGrant,
  ZzRepo,
} from '../../src/core/index.js';
import { signAs } from '../../src/core/sync/index.js';
import { LIMITS } from '../../src/schema/limits.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// The count caps (Asks per Lane, owners, Lanes per repo), refused locally with a clear error and,
// where the fold can hold them, by the guarded fold for what arrives by sync — alike on every
// replica. The real caps are far above what a test can make in seconds; this file lowers them
// (the same module every layer reads), so the rules and not the numbers are under test.
vi.mock('../../src/schema/limits.js', async (importOriginal) => {
  const m = await importOriginal<{ LIMITS: typeof LIMITS }>();
  return { ...m, LIMITS: { ...m.LIMITS, asksPerLane: 4, owners: 3, lanesPerRepo: 3 } };
});

const OWNER = { actor: 'owner@example.com' };
const CO = { actor: 'co@example.com' };
const CAROL = { actor: 'carol@example.com' };
const DAVE = { actor: 'dave@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const post = (repo: ZzRepo, title: string) =>
  askPost(repo, OWNER, { lane_id: 'web', kind: 'work', title });

const coldLane = (c: Clone) =>
  onColdRepo(c, async (repo) => {
    const lane = await laneGet(repo, OWNER, { lane_id: 'web' });
    return {
      asks: lane.asks.map((x) => x.title),
      refused: lane.history.filter((h) => h.rejected).map((h) => [h.op, h.rejected?.reason]),
    };
  });

describe('count caps, locally and by sync', () => {
  it('a Lane takes at most LIMITS.asksPerLane Asks: the next is refused locally, and by the fold from anywhere', async () => {
    expect(LIMITS.asksPerLane).toBe(4);
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await post(a.repo, 'a1');
    await post(a.repo, 'a2');
    await a.sync();
    await b.sync();
    // Each machine fills the Lane on its own: together they would hold five.
    await post(b.repo, 'b3');
    await post(a.repo, 'a3');
    await post(a.repo, 'a4');
    await expect(post(a.repo, 'a5')).rejects.toMatchObject({
      code: 'precondition_failed',
      details: { lane_full: true, limit: 4 },
    });
    await a.sync();
    const report = await b.sync();
    expect(report.rejected.map((r) => [r.op, r.reason])).toEqual([['ask_post', 'lane_full']]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      expect(await coldLane(c)).toEqual({
        asks: expect.arrayContaining(['a1', 'a2', 'a3', 'a4']),
        refused: [['ask_post', 'lane_full']],
      });
      expect((await coldLane(c)).asks).toHaveLength(4);
    }
  });

  it('an answer whose workflow follow-up would not fit is refused locally; the Ask stays claimed', async () => {
    cluster = await makeCluster(1);
    const [a] = cluster.clones as [Clone];
    const head = execFileSync('git', ['rev-parse', 'HEAD'], {
      cwd: a.dir,
      encoding: 'utf8',
    }).trim();
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const ids: string[] = [];
    for (const t of ['w1', 'w2', 'w3', 'w4']) ids.push((await post(a.repo, t)).ask.ask_id);
    await askClaim(a.repo, OWNER, { lane_id: 'web', ask_id: ids[0]! });
    // A completed changeset asks for a review: a fifth Ask.
    await expect(
      askAnswer(a.repo, OWNER, {
        lane_id: 'web',
        ask_id: ids[0]!,
        outcome: 'complete',
        changeset: { base: head, message: 'x', files: [{ path: 'x.txt', content: 'x\n' }] },
      }),
    ).rejects.toMatchObject({ code: 'precondition_failed', details: { lane_full: true } });
    const lane = await laneGet(a.repo, OWNER, { lane_id: 'web' });
    expect(lane.asks).toHaveLength(4);
    expect(lane.asks.find((x) => x.ask_id === ids[0])).toMatchObject({ state: 'claimed' });
    expect(lane.history.filter((h) => h.rejected)).toEqual([]);
  });

  it('a repository takes at most LIMITS.owners owners: locally, and by the config fold from anywhere', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    signAs(b.repo, OWNER.actor, a.key);
    await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner' });
    await a.sync();
    await b.sync();
    // Each machine grants a third owner: together they would make four.
    await roleGrant(a.repo, OWNER, { grantee: CAROL.actor, role: 'owner' });
    await roleGrant(b.repo, OWNER, { grantee: DAVE.actor, role: 'owner' });
    await expect(
      roleGrant(a.repo, OWNER, { grantee: DAVE.actor, role: 'owner' }),
    ).rejects.toMatchObject({ code: 'precondition_failed' });
    await a.sync();
    const report = await b.sync();
    expect(report.rejected.map((r) => [r.ref, r.op, r.reason])).toEqual([
      ['refs/zz/config', 'role_grant', 'owners_full'],
    ]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      const repo = await ZzRepo.open(c.dir, { key: 'local/test' });
      try {
        expect((await repo.requireConfig()).owners).toEqual([OWNER.actor, CO.actor, CAROL.actor]);
      } finally {
        repo.close();
      }
    }
  });

  it('a repository takes at most LIMITS.lanesPerRepo Lanes (local only); a retry of a made one replays', async () => {
    cluster = await makeCluster(1);
    const [a] = cluster.clones as [Clone];
    // _repo is one of them.
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await lanePropose(a.repo, OWNER, { title: 'Docs', idempotency_key: 'docs' });
    await expect(
      lanePropose(a.repo, OWNER, { lane_id: 'api', title: 'API' }),
    ).rejects.toMatchObject({
      code: 'precondition_failed',
      details: { limit: 3 },
    });
    const again = await lanePropose(a.repo, OWNER, { title: 'Docs', idempotency_key: 'docs' });
    expect(again.replayed).toBe(true);
    expect(await a.repo.laneIds()).toHaveLength(3);
  });

  it('proposals racing at the Lanes cap: only as many as fit are made', async () => {
    cluster = await makeCluster(1);
    const [a] = cluster.clones as [Clone];
    // _repo is one of three: two more fit. Eight proposals at once, each of its own Lane (so
    // each its own ref and its own commit queue); all of them read the Lanes before any lands.
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) =>
        lanePropose(a.repo, OWNER, { lane_id: `race-${i}`, title: `Race ${i}` }),
      ),
    );
    const made = results.filter((r) => r.status === 'fulfilled');
    expect(made).toHaveLength(2);
    for (const r of results) {
      if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'precondition_failed' });
    }
    expect(await a.repo.laneIds()).toHaveLength(3);
  });
});
