import { afterEach, describe, expect, it } from 'vitest';
import { askClaim, askPost, laneGet, lanePropose } from '../../src/core/index.js';
import { formatSyncReport } from '../../src/cli/sync-command.js';
import { fastForwardFromRemotes } from '../../src/core/setup.js';
import { startAutoSync, type AutoSync } from '../../src/core/sync/index.js';
import { sh } from '../helpers/temp-repo.js';
import { makeCluster, refusalsIn, zzRefs, type Clone, type Cluster } from './git-cluster.js';

// An op this clone published and every machine accepted can end refused after a sync that
// writes nothing of ours: a Lane deleted on the remote and recreated by another machine's
// rival lane_propose is answered ours first, and that machine's answer back (its own first, a
// wrap of ours: history-checks.ts wrapsRival) passes as an honest history here, so this clone
// fast-forwards to a fold where its own lane_propose is refused. The round converges; the
// report must say what it did to this clone's ops (report.ts `newly_refused`).

const ALICE = { actor: 'owner@example.com' };
const BOB = { actor: 'bob@example.com' };
const LANE = 'refs/zz/lanes/web';

let cluster: Cluster | null = null;
let auto: AutoSync | null = null;
afterEach(async () => {
  await auto?.close();
  auto = null;
  cluster?.cleanup();
  cluster = null;
});

/**
 * Alice publishes Lane `web`; someone deletes it on the remote; Bob, offline, proposes his own
 * `web` and pushes it; Alice answers ours first; Bob answers that his first. Returns the clones
 * before Alice's next sync, which fast-forwards to Bob's answer.
 */
async function recreatedByRival(): Promise<{ a: Clone; b: Clone }> {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  await lanePropose(a.repo, ALICE, { lane_id: 'web', title: 'Alice web' });
  expect((await a.sync()).pushed).toEqual([LANE]);
  sh(cluster.remote, 'update-ref', '-d', LANE);
  await lanePropose(b.repo, BOB, { lane_id: 'web', title: 'Bob web' });
  expect((await b.sync()).pushed).toEqual([LANE]);
  // Alice: the remote no longer holds what she synced; hers first, Bob's proposal refused.
  const ra = await a.sync();
  expect(ra.merged.map((m) => [m.ref, m.rewritten?.remote_ops])).toEqual([[LANE, 1]]);
  expect(ra.rejected.map((r) => [r.op, r.actor, r.reason, r.origin])).toEqual([
    ['lane_propose', BOB.actor, 'lane_exists', 'remote'],
  ]);
  expect(ra.newly_refused).toEqual([]);
  // Bob: Alice's answer folds his synced proposal after hers, a wrap: his first.
  const rb = await b.sync();
  expect(rb.merged.map((m) => [m.ref, m.rewritten?.wrapped])).toEqual([[LANE, true]]);
  // Alice's proposal, refused there, is the remote's op to Bob's clone; his own stands.
  expect(rb.rejected.map((r) => [r.op, r.actor, r.reason, r.origin])).toEqual([
    ['lane_propose', ALICE.actor, 'lane_exists', 'remote'],
  ]);
  expect(rb.newly_refused).toEqual([]);
  return { a, b };
}

describe("a sync that leaves one of this clone's published ops refused", () => {
  it('zz sync says which Lane, which op and why, in the report and its text', async () => {
    const { a, b } = await recreatedByRival();
    const report = await a.sync();
    expect(report.fast_forwarded).toEqual([LANE]);
    expect(report.newly_refused).toEqual([
      expect.objectContaining({
        ref: LANE,
        op: 'lane_propose',
        actor: ALICE.actor,
        reason: 'lane_exists',
      }),
    ]);
    const opId = report.newly_refused[0]!.op_id;
    expect(formatSyncReport(report)).toContain(
      `  now refused: lane_propose by ${ALICE.actor} in lanes/web (lane_exists): op ${opId}, written on this clone, was accepted until this sync`,
    );
    // It converged: both clones hold one value, Bob's proposal stands on both.
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      expect(await refusalsIn(c.repo, ALICE)).toEqual([
        ['lane_propose', ALICE.actor, 'lane_exists'],
      ]);
      expect((await laneGet(c.repo, ALICE, { lane_id: 'web' })).lane.title).toBe('Bob web');
    }
    // Said once: the next round has nothing new to say.
    const idle = await a.sync();
    expect([idle.newly_refused, idle.pushed, idle.merged]).toEqual([[], [], []]);
  });

  it("a `git pull`'s hook, fast-forwarding what the fetch brought, says so too", async () => {
    const { a } = await recreatedByRival();
    sh(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
    const r = await fastForwardFromRemotes(a.repo);
    expect(r.fast_forwarded).toEqual([LANE]);
    expect(r.newly_refused.map((x) => [x.ref, x.op, x.actor, x.reason])).toEqual([
      [LANE, 'lane_propose', ALICE.actor, 'lane_exists'],
    ]);
  });

  it('an op of ours refused before the round (a lost claim) is not reported again', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, ALICE, { lane_id: 'web', title: 'Web' });
    const ask = (await askPost(a.repo, ALICE, { lane_id: 'web', kind: 'work', title: 'x' })).ask;
    await a.sync();
    await b.sync();
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: ask.ask_id });
    await askClaim(a.repo, ALICE, { lane_id: 'web', ask_id: ask.ask_id });
    await b.sync();
    // Alice's claim is lost in her merge, and reported there as a lost claim only.
    const merged = await a.sync();
    expect(merged.claims_lost.map((c) => c.loser)).toEqual([ALICE.actor]);
    expect(merged.newly_refused).toEqual([]);
    // Bob's later work fast-forwards here: Alice's claim is refused after it as before.
    await b.sync();
    await askPost(b.repo, BOB, { lane_id: 'web', kind: 'work', title: 'y' });
    await b.sync();
    const ff = await a.sync();
    expect(ff.fast_forwarded).toEqual([LANE]);
    expect(ff.newly_refused).toEqual([]);
    expect(await refusalsIn(a.repo, ALICE)).toEqual([['ask_claim', ALICE.actor, 'claim_lost']]);
  });

  it("the daemon's automatic sync logs it", async () => {
    const { a } = await recreatedByRival();
    const lines: string[] = [];
    auto = startAutoSync(new Map([['a', a.repo]]), {
      intervalMs: 3_600_000,
      watchMs: 3_600_000,
      log: (l) => lines.push(l),
    });
    await auto.ready;
    await auto.syncNow();
    expect(lines).toEqual([
      expect.stringMatching(
        /^zz sync .*: lanes\/web: op \S+ \(lane_propose by owner@example\.com\), written here and accepted before, is now refused \(lane_exists\)/,
      ),
    ]);
  });
});
