import { describe, expect, it } from 'vitest';
import {
  askClaim,
  askPost,
  laneEvents,
  laneGet,
  lanePropose,
  type LaneEvent,
  type ZzRepo,
} from '../../src/core/index.js';
import { cleanUpClusters, makeCluster, type Cluster } from './git-cluster.js';

// The loser of a claim race made offline learns it after sync, on every replica: lane_get
// marks the refused claim with the winner, and a lane_events cursor taken before the merge
// gets a claim_lost event naming the winner.

const OWNER = { actor: 'owner@example.com' };
const ALICE = { actor: 'alice@example.com' };
const BOB = { actor: 'bob@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

async function drain(repo: ZzRepo, cursor: string | undefined) {
  const got: LaneEvent[] = [];
  for (;;) {
    const page = await laneEvents(repo, OWNER, { lane_id: 'web', ...(cursor ? { cursor } : {}) });
    cursor = page.next_cursor;
    if (page.events.length === 0) return { got, cursor };
    got.push(...page.events);
  }
}

const refusedClaims = async (repo: ZzRepo) =>
  (await laneGet(repo, OWNER, { lane_id: 'web' })).history.filter((h) => h.rejected);

describe('loser visibility after sync (real git, two clones)', () => {
  it('the offline loser sees claim_lost naming the winner, in lane_get and lane_events', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const ask = (await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'x' })).ask;
    await a.sync();
    await b.sync();
    const start = (await drain(b.repo, undefined)).cursor;
    // Bob claims offline on b and his agent sees its own claim; Alice claims on a and pushes.
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: ask.ask_id });
    const { got, cursor } = await drain(b.repo, start);
    expect(got.map((e) => [e.op, e.actor, e.rejected])).toEqual([
      ['ask_claim', BOB.actor, undefined],
    ]);
    await askClaim(a.repo, ALICE, { lane_id: 'web', ask_id: ask.ask_id });
    await a.sync();
    expect(await refusedClaims(b.repo)).toEqual([]);
    const waiting = laneEvents(b.repo, OWNER, { lane_id: 'web', cursor, wait_ms: 60_000 });
    await b.sync();
    const after = [
      ...(await waiting).events,
      ...(await drain(b.repo, (await waiting).next_cursor)).got,
    ];
    const lost = after.filter((e) => e.op === 'claim_lost');
    expect(lost).toEqual([
      expect.objectContaining({
        actor: BOB.actor,
        ask_id: ask.ask_id,
        rejected: expect.objectContaining({ reason: 'claim_lost', winner: ALICE.actor }),
      }),
    ]);
    // Alice's claim arrives as an ordinary event; Bob's is not repeated.
    expect(after.filter((e) => e.op === 'ask_claim').map((e) => e.actor)).toEqual([ALICE.actor]);
    await a.sync();
    for (const c of [a, b]) {
      const refused = await refusedClaims(c.repo);
      expect(refused).toEqual([
        expect.objectContaining({
          op: 'ask_claim',
          actor: BOB.actor,
          rejected: expect.objectContaining({ reason: 'claim_lost', winner: ALICE.actor }),
        }),
      ]);
      // Read from scratch, the refused claim carries the mark in lane_events too.
      const fresh = (await drain(c.repo, undefined)).got.filter((e) => e.rejected);
      expect(fresh.map((e) => [e.op, e.actor, e.rejected?.winner])).toEqual([
        ['ask_claim', BOB.actor, ALICE.actor],
      ]);
    }
  });
});
