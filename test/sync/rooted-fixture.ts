import { onTestFinished } from 'vitest';
import {
  askClaim,
  askPost,
  laneGrant,
  lanePropose,
  roleGrant,
  ZzRepo,
} from '../../src/core/index.js';
import { keyAdd, signAs } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import { makeCluster, type Clone, type Cluster } from './git-cluster.js';

// Set-ups for rooted roles (core/rooted-roles.ts), shared by the sync and the search tests.

export const OWNER = { actor: 'owner@example.com' };
export const CO = { actor: 'co@example.com' };
export const BOSS = { actor: 'boss@example.com' };
/** The owner `zz init` made (git-cluster.ts). */
export const INIT = OWNER;

/** A ladder_update Ask of `laneId` that `who` claims: its id. */
export async function claimed(
  repo: ZzRepo,
  who: { actor: string },
  laneId: string,
): Promise<string> {
  const { ask } = await askPost(repo, who, { lane_id: laneId, kind: 'ladder_update', title: 'r' });
  await askClaim(repo, who, { lane_id: laneId, ask_id: ask.ask_id, lease_seconds: 3600 });
  return ask.ask_id;
}

/**
 * One clone whose `zz init` owner (INIT, so in _repo's stored coordinators) a second owner,
 * BOSS, can demote: BOSS's config ops are signed by a key INIT registers (the review's setup).
 * Lane `web` is INIT's, with CO a coordinator INIT granted. Cleaned up when the test ends.
 */
export async function demotable(): Promise<{
  cluster: Cluster;
  a: Clone;
  repo: ZzRepo;
  boss: ZzRepo;
}> {
  const cluster = await makeCluster(1);
  onTestFinished(() => cluster.cleanup());
  const [a] = cluster.clones as [Clone];
  const repo = a.repo;
  await roleGrant(repo, INIT, { grantee: BOSS.actor, role: 'owner' });
  const key = generateSigningKey().key;
  await keyAdd(repo, INIT, { actor: BOSS.actor, key: key.publicKey });
  const boss = await ZzRepo.open(a.dir, { key: 'local/test' });
  signAs(boss, BOSS.actor, key);
  onTestFinished(() => boss.close());
  await lanePropose(repo, INIT, { lane_id: 'web', title: 'web' });
  await laneGrant(repo, INIT, { lane_id: 'web', grantee: CO.actor, role: 'coordinator' });
  return { cluster, a, repo, boss };
}
