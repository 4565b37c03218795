import { describe, expect, it } from 'vitest';
import { askPost, lanePropose, repoState } from '../../src/core/index.js';
import { keyAdd, requireSignatures, signAs } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import { cleanUpClusters, pushRaw, zzRefs, makeCluster, type Cluster } from './git-cluster.js';
import { sh } from '../helpers/temp-repo.js';

// Imports are authorised and authentic (DESIGN §7), shown on real git: a member who forges
// owner-level ops and pushes them grants nothing on another machine, signed repo or not; in a
// repo that requires signatures an unsigned op is quarantined.

const OWNER = { actor: 'owner@example.com' };
const MALLORY = { actor: 'mallory@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

/** Writes a role_grant straight into the config, as a hand-made commit would (no daemon checks). */
async function forgeGrant(repo: Cluster['clones'][number]['repo'], asActor: string) {
  await repo.config.mutate({
    actor: asActor,
    // Written past the local checks, as another machine's zz may have: kept even if refused.
    recordRefused: true,
    decide: () => ({
      op: 'role_grant',
      summary: 'role_grant: grant owner mallory@example.com',
      args: { grantee: MALLORY.actor, role: 'owner', revoke: false },
    }),
    result: () => null,
  });
}

for (const signed of [false, true]) {
  describe(`a forged role_grant (${signed ? 'signed' : 'plain'} repo)`, () => {
    it('pushed by a member grants nothing on another machine', async () => {
      cluster = await makeCluster(2, { signed });
      const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
      // Mallory, a member on clone b, signs with her own key and claims to be the owner.
      signAs(b.repo, 'owner@example.com', generateSigningKey().key);
      await forgeGrant(b.repo, OWNER.actor);
      expect((await b.repo.requireConfig()).owners).toContain(MALLORY.actor); // her own clone
      expect((await b.sync()).held_back).toEqual([
        expect.objectContaining({ ref: 'refs/zz/config' }),
      ]); // zz will not push it
      pushRaw(b, 'refs/zz/config'); // the remote takes anything
      const r = await a.sync();
      expect(r.quarantined).toEqual([
        expect.objectContaining({
          ref: 'refs/zz/config',
          reason: expect.stringMatching(/not signed by an owner's key/),
        }),
      ]);
      expect((await a.repo.requireConfig()).owners).toEqual([OWNER.actor]);
      expect((await repoState(a.repo, OWNER)).quarantined).toEqual([
        {
          remote: 'origin',
          ref: 'refs/zz/config',
          commit: zzRefs(cluster.remote).get('refs/zz/config'),
        },
      ]);
      expect(zzRefs(a.dir).has('refs/zz/config')).toBe(true);
      expect(sh(a.dir, 'for-each-ref', '--format=%(refname)', 'refs/zz-quarantine/')).toBe(
        'refs/zz-quarantine/origin/config',
      );
      // Reads of everything else go on; the owner's own grant still works and is pushed back
      // over nothing (the quarantined remote value is never overwritten by force).
      await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
      const again = await a.sync();
      expect(again.pushed).toEqual(['refs/zz/lanes/web']);
    });
  });
}

describe('a repo that requires signatures', () => {
  it('quarantines an unsigned op and takes one signed by a key an owner registered', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    const alice = generateSigningKey().key;
    // The owner turns signatures on later and registers Alice's key; both are signed ops.
    await requireSignatures(a.repo, OWNER, true);
    await keyAdd(a.repo, OWNER, { actor: 'alice@example.com', key: alice.publicKey });
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    expect((await b.sync()).quarantined).toEqual([]);
    // An op by someone without a registered key, unsigned: quarantined on a.
    await askPost(b.repo, MALLORY, { lane_id: 'web', kind: 'work', title: 'unsigned' });
    pushRaw(b, 'refs/zz/lanes/web');
    const r = await a.sync();
    expect(r.quarantined).toEqual([
      expect.objectContaining({
        ref: 'refs/zz/lanes/web',
        reason: expect.stringMatching(/requires signatures/),
      }),
    ]);
    expect(r.fast_forwarded).toEqual([]);
  });

  it('accepts ops signed by the actor’s registered key', async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    const alice = generateSigningKey().key;
    await keyAdd(a.repo, OWNER, { actor: 'alice@example.com', key: alice.publicKey });
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    signAs(b.repo, 'alice@example.com', alice);
    await askPost(
      b.repo,
      { actor: 'alice@example.com[claude]' },
      { lane_id: 'web', kind: 'work', title: 'signed' },
    );
    await b.sync();
    const r = await a.sync();
    expect(r.quarantined).toEqual([]);
    expect(r.fast_forwarded).toEqual(['refs/zz/lanes/web']);
  });
});
