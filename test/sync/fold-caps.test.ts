import { describe, expect, it } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import {
  askClaim,
  askPost,
  laneClose,
  laneEvents,
  laneGet,
  laneGrant,
  lanePropose,
  roleGrant,
  type LaneEvent,
} from '../../src/core/index.js';
import { keyAdd, keyList, signAs } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import { LIMITS } from '../../src/schema/limits.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// What the daemon refuses, the guarded fold refuses too when it arrives by sync (DESIGN §7), on
// real git: ops another replica made offline, and ops written past the daemon's checks (an
// older zz, a hand-made commit). Each is kept in the log, shown as refused, alike on every
// replica and after a cold start; both clones end on the same refs.

const OWNER = { actor: 'owner@example.com' };
const ALICE = { actor: 'alice@example.com' };
const BOB = { actor: 'bob@example.com' };
const CAROL = { actor: 'carol@example.com' };
const DAVE = { actor: 'dave@example.com' };
const CO = { actor: 'co@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const refused = (repo: ZzRepo) => refusalsIn(repo, OWNER);

/** A fresh ZzRepo on the clone: a daemon started after the sync folds from scratch. */
const cold = onColdRepo;

async function drain(repo: ZzRepo, cursor: string | undefined) {
  const got: LaneEvent[] = [];
  for (;;) {
    const page = await laneEvents(repo, OWNER, { lane_id: 'web', ...(cursor ? { cursor } : {}) });
    cursor = page.next_cursor;
    if (page.events.length === 0) return { got, cursor };
    got.push(...page.events);
  }
}

/** An ask_claim written past the daemon's checks (what an older zz would have let through). */
async function rawClaim(repo: ZzRepo, actor: string, askId: string): Promise<void> {
  await repo.lane('web').mutate({
    actor,
    // Written past the local checks, as another machine's zz may have: kept even if refused.
    recordRefused: true,
    // The lease ends 600 s after the op's own time, as the fold derives it (lease_mismatch
    // otherwise): from meta.now, not a Date.now() a millisecond away from it.
    decide: (_s, meta) => ({
      op: 'ask_claim',
      summary: `ask_claim ${askId} by ${actor}`,
      args: { lane_id: 'web', ask_id: askId, lease_seconds: 600 },
      out: {
        lease_expires_at: new Date(meta.now.getTime() + 600_000).toISOString(),
        renewed: false,
      },
    }),
    result: () => null,
  });
}

describe('a closed Lane, by sync', () => {
  it('refuses claims and posts that land after the close; work in hand and claims published first stand', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const ids: string[] = [];
    for (const t of ['one', 'two', 'three', 'four']) {
      ids.push(
        (await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: t })).ask.ask_id,
      );
    }
    const [one, two, three, four] = ids as [string, string, string, string];
    await askClaim(a.repo, ALICE, { lane_id: 'web', ask_id: one, lease_seconds: 3600 });
    await a.sync();
    await b.sync();
    // Dave claims on B and publishes it before anyone closes the Lane.
    await askClaim(b.repo, DAVE, { lane_id: 'web', ask_id: three });
    await b.sync();
    // Bob claims on B too, offline: not yet published.
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: two });
    const start = (await drain(b.repo, undefined)).cursor;

    // A, not having fetched Dave's claim, closes the Lane; the merge puts the close after it.
    await laneClose(a.repo, OWNER, { lane_id: 'web', reason: 'done' });
    expect((await a.sync()).claims_lost).toEqual([]);
    // Alice's claim is work in hand: she renews it on the closed Lane.
    await askClaim(a.repo, ALICE, { lane_id: 'web', ask_id: one, lease_seconds: 3600 });
    await a.sync();

    // B merges: its offline claim comes after the close and loses, told like a lost claim.
    const report = await b.sync();
    expect(report.claims_lost).toEqual([
      expect.objectContaining({
        ask_id: two,
        loser: BOB.actor,
        reason: 'lane_closed',
        closed_by: OWNER.actor,
      }),
    ]);
    const lost = (await drain(b.repo, start)).got.filter((e) => e.op === 'claim_lost');
    expect(lost).toEqual([
      expect.objectContaining({
        actor: BOB.actor,
        ask_id: two,
        args: expect.objectContaining({ reason: 'lane_closed', closed_by: OWNER.actor }),
        rejected: expect.objectContaining({ reason: 'lane_closed', closed_by: OWNER.actor }),
      }),
    ]);

    // Ops written past the daemon's checks after the close: refused alike.
    await rawClaim(b.repo, CAROL.actor, four);
    await b.repo.lane('web').mutate({
      actor: OWNER.actor,
      // Written past the local checks, as another machine's zz may have: kept even if refused.
      recordRefused: true,
      decide: () => ({
        op: 'ask_post',
        summary: 'ask_post ask-00000000f0 (work): late',
        args: { lane_id: 'web', kind: 'work', title: 'late', posted_by: OWNER.actor },
        out: { ask_id: 'ask-00000000f0' },
      }),
      result: () => null,
    });
    await b.sync();
    await a.sync();

    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    const expected = [
      ['ask_claim', BOB.actor, 'lane_closed'],
      ['ask_claim', CAROL.actor, 'lane_closed'],
      ['ask_post', OWNER.actor, 'lane_closed'],
    ];
    for (const c of [a, b]) {
      expect(await refused(c.repo)).toEqual(expected);
      const asks = await cold(c, async (repo) => {
        expect(await refused(repo)).toEqual(expected);
        return (await laneGet(repo, OWNER, { lane_id: 'web' })).asks;
      });
      const holder = (id: string) => asks.find((x) => x.ask_id === id)?.holder ?? null;
      expect([one, two, three, four].map(holder)).toEqual([ALICE.actor, null, DAVE.actor, null]);
      expect(asks.map((x) => x.ask_id)).not.toContain('ask-00000000f0');
    }
  });
});

describe('the config fold, by sync', () => {
  it(`takes at most LIMITS.keysPerActor keys per actor from anywhere; the rest is refused alike`, async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    // B signs as the owner (the owner works on both machines), so its key_adds are authentic.
    signAs(b.repo, OWNER.actor, a.key);
    await keyAdd(a.repo, OWNER, { actor: BOB.actor, key: generateSigningKey().key.publicKey });
    await a.sync();
    // Offline on B, past key_add's local refusal (an older zz): more keys than the cap allows.
    const extra = 3;
    const keys = Array.from(
      { length: LIMITS.keysPerActor + extra - 1 },
      () => generateSigningKey().key.publicKey,
    );
    await b.repo.config.mutate({
      actor: OWNER.actor,
      // Written past the local checks, as another machine's zz may have: kept even if refused.
      recordRefused: true,
      decide: () =>
        keys.map((key) => ({
          op: 'key_add' as const,
          summary: `key_add for ${BOB.actor}`,
          args: { actor: BOB.actor, key },
        })),
      result: () => null,
    });
    // The merge puts A's key first: B's last `extra` are past the cap.
    const report = await b.sync();
    expect(report.quarantined).toEqual([]);
    const refusedHere = report.rejected.filter((r) => r.ref === 'refs/zz/config');
    expect(refusedHere.map((r) => [r.op, r.actor, r.reason])).toEqual(
      Array.from({ length: extra }, () => ['key_add', OWNER.actor, 'keys_per_actor']),
    );
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      const seen = await cold(c, async (repo) => ({
        ...(await keyList(repo, { actor: BOB.actor })).keys[0]!,
        rejected: (await repo.config.read()).state.rejected,
      }));
      expect(seen.keys).toHaveLength(LIMITS.keysPerActor);
      expect(seen.refused).toBe(extra);
      expect(seen.keys).not.toContain(keys[keys.length - 1]);
      expect(seen.rejected.map((r) => r.op_id)).toEqual(refusedHere.map((r) => r.op_id));
      // The config still reads, and the owner can still remove a key and add another.
      expect((await keyList(c.repo, { actor: BOB.actor })).keys[0]!.keys).toEqual(seen.keys);
    }
  });

  it('a revoke that would leave no owner, or a Lane with no coordinator, is refused when the two meet', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    signAs(b.repo, OWNER.actor, a.key);
    await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner' });
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: CO.actor, role: 'coordinator' });
    await a.sync();
    await b.sync();
    // A: the owner removes Co from both roles. B, offline: the owner steps down from both,
    // which B allows (Co remains). Together they would leave nobody.
    await roleGrant(a.repo, OWNER, { grantee: CO.actor, role: 'owner', revoke: true });
    await laneGrant(a.repo, OWNER, {
      lane_id: 'web',
      grantee: CO.actor,
      role: 'coordinator',
      revoke: true,
    });
    await a.sync();
    await roleGrant(b.repo, OWNER, { grantee: OWNER.actor, role: 'owner', revoke: true });
    await laneGrant(b.repo, OWNER, {
      lane_id: 'web',
      grantee: OWNER.actor,
      role: 'coordinator',
      revoke: true,
    });
    const report = await b.sync();
    expect(report.rejected.map((r) => [r.ref, r.op, r.reason])).toEqual([
      ['refs/zz/config', 'role_grant', 'last_owner'],
      ['refs/zz/lanes/web', 'lane_grant', 'last_coordinator'],
    ]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      await cold(c, async (repo) => {
        expect((await repo.requireConfig()).owners).toEqual([OWNER.actor]);
        const lane = await laneGet(repo, OWNER, { lane_id: 'web' });
        expect(lane.lane.coordinators).toEqual([OWNER.actor]);
      });
    }
  });
});
