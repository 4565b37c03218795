import { describe, expect, it } from 'vitest';
import { askPost, laneEvents, laneGet, lanePropose, type ZzRepo } from '../../src/core/index.js';
import { cleanUpClusters, makeCluster, type Clone, type Cluster } from './git-cluster.js';

// Unsigned ops flagged in a plain repository (DESIGN §7): folded as usual, but lane_get history
// and lane_events mark each op that came from another replica without a signature by a key of
// its actor. What this clone wrote, and what an actor signed with a registered key, is not.

const OWNER = { actor: 'owner@example.com' };
const BOB = { actor: 'bob@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const marks = async (repo: ZzRepo) =>
  (await laneGet(repo, OWNER, { lane_id: 'web' })).history.map((h) => [
    h.op,
    h.actor,
    h.unsigned ?? false,
  ]);

describe('unsigned ops flagged (real git, plain repo)', () => {
  it('marks ops from another replica that no key of their actor signed, on reads', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    // The owner signs on A with the key repo_init registered; Bob has no key, on B.
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    await askPost(b.repo, BOB, { lane_id: 'web', kind: 'work', title: 'from b' });
    await b.sync();
    await a.sync();
    // On A: Bob's op came from B unsigned. The owner's own op is A's.
    expect(await marks(a.repo)).toEqual([
      ['lane_propose', OWNER.actor, false],
      ['ask_post', BOB.actor, true],
    ]);
    // On B: its own op is not marked; the owner's came signed by a registered key.
    expect(await marks(b.repo)).toEqual([
      ['lane_propose', OWNER.actor, false],
      ['ask_post', BOB.actor, false],
    ]);
    const events = (await laneEvents(a.repo, OWNER, { lane_id: 'web' })).events;
    expect(events.map((e) => [e.op, e.unsigned ?? false])).toEqual([
      ['lane_propose', false],
      ['ask_post', true],
    ]);
  });
});
