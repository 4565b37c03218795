import { describe, expect, it } from 'vitest';
import { askPost, lanePropose, repoState, roleGrant } from '../../src/core/index.js';
import { keyAdd, signAs } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import type { GitStore } from '../../src/store/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { cleanUpClusters, makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// `zz sync` does not push what every other machine would quarantine. A teammate whose key no
// owner had registered, in a repository that requires signatures, used to push their ops: the
// remote's Lane then failed every other machine's import, and from then on nobody, the owner
// included, could push to that Lane again (their syncs said "pushed 0" and exited 0). Likewise
// an owner revoked while offline: their owner-level op quarantined refs/zz/config for everyone.

const OWNER = { actor: 'owner@example.com' };
const BOB = { actor: 'bob@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

describe('a teammate whose key is not registered, signatures required', () => {
  it('keeps their ops at home, says why, and the Lane stays shared for everyone else', async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    const bobKey = generateSigningKey().key;
    signAs(b.repo, BOB.actor, bobKey); // signed, by a key nobody registered
    // Written past the up-front check (signable.ts), as an older zz would have written it.
    const store = b.repo.store as GitStore;
    store.signsFor = null;
    await askPost(b.repo, BOB, { lane_id: 'web', kind: 'work', title: 'from bob' });
    store.signsFor = BOB.actor;
    const remoteBefore = zzRefs(cluster.remote).get('refs/zz/lanes/web');

    const r = await b.sync();
    expect(r.pushed).toEqual([]);
    expect(r.held_back).toEqual([
      expect.objectContaining({
        ref: 'refs/zz/lanes/web',
        reason: expect.stringMatching(/bob@example\.com .*requires signatures/),
      }),
    ]);
    expect(zzRefs(cluster.remote).get('refs/zz/lanes/web')).toBe(remoteBefore);
    // Said loudly: `zz sync` exits 6 (precondition_failed) with what to do, and repo_state
    // (the dashboard's source) lists it, whoever synced.
    const cli = await zz(b.dir, cliEnv(), 'sync');
    expect(cli.code).toBe(6);
    expect(cli.stdout).toMatch(/not pushed: lanes\/web: commit [0-9a-f]{10} op ask_post by bob/);
    expect(cli.stderr).toMatch(
      /1 ref\(s\) of this clone not pushed to origin \(lanes\/web\): .*passes once that key is registered/,
    );
    expect(await repoState(b.repo, BOB)).toMatchObject({
      held_back: [
        {
          remote: 'origin',
          ref: 'refs/zz/lanes/web',
          commit: expect.stringMatching(/^[0-9a-f]{40}$/),
          reason: expect.stringMatching(/bob@example\.com .*requires signatures/),
        },
      ],
      held_back_more: 0,
    });

    // The owner keeps working and sharing on that Lane.
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'from the owner' });
    const ra = await a.sync();
    expect(ra.quarantined).toEqual([]);
    expect(ra.pushed).toEqual(['refs/zz/lanes/web']);

    // Once an owner registers bob's key, his ops go out (merged with the owner's) and are taken.
    await keyAdd(a.repo, OWNER, { actor: BOB.actor, key: bobKey.publicKey });
    await a.sync();
    const rb = await b.sync();
    expect(rb.held_back).toEqual([]);
    expect(rb.pushed).toContain('refs/zz/lanes/web');
    expect(await repoState(b.repo, BOB)).toMatchObject({ held_back: [], held_back_more: 0 });
    const back = await a.sync();
    expect(back.quarantined).toEqual([]);
    expect(back.fast_forwarded).toContain('refs/zz/lanes/web');
  });

  it('an owner-level op not signed by an owner is not pushed either (any repository)', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    // b's repo holds no owner key: the owner's grant written there is unsigned.
    await b.repo.config.mutate({
      actor: OWNER.actor,
      // Written past the local checks, as another machine's zz may have: kept even if refused.
      recordRefused: true,
      decide: () => ({
        op: 'role_grant',
        summary: 'role_grant: grant owner bob@example.com',
        args: { grantee: BOB.actor, role: 'owner', revoke: false },
      }),
      result: () => null,
    });
    const r = await b.sync();
    expect(r.pushed).toEqual([]);
    expect(r.held_back).toEqual([
      expect.objectContaining({
        ref: 'refs/zz/config',
        reason: expect.stringMatching(/owner's key/),
      }),
    ]);
    expect((await repoState(b.repo, OWNER)).held_back).toEqual([
      expect.objectContaining({ ref: 'refs/zz/config', reason: r.held_back[0]!.reason }),
    ]);
    const cli = await zz(b.dir, cliEnv(), 'sync', '--json');
    expect(cli.code).toBe(6);
    expect(JSON.parse(cli.stdout).held_back).toHaveLength(1);
    expect(cli.stderr).toMatch(
      /\(config\): .*an owner-level op not signed by an owner's key never does/,
    );
    expect((await a.sync()).quarantined).toEqual([]);
  });
});

describe('an owner revoked while offline', () => {
  it('whose owner-level op arrives later: dropped by the fold, the config still shared', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    const carol = { actor: 'carol@example.com' };
    const carolKey = generateSigningKey().key;
    await keyAdd(a.repo, OWNER, { actor: carol.actor, key: carolKey.publicKey });
    await roleGrant(a.repo, OWNER, { grantee: carol.actor, role: 'owner' });
    await a.sync();
    await b.sync();
    signAs(b.repo, carol.actor, carolKey);
    // Revoked on a; meanwhile carol, offline on b, registers a key for dave as an owner would.
    await roleGrant(a.repo, OWNER, { grantee: carol.actor, role: 'owner', revoke: true });
    await a.sync();
    await keyAdd(b.repo, carol, {
      actor: 'dave@example.com',
      key: generateSigningKey().key.publicKey,
    });
    // …and makes mallory an owner: her own key signs it, but she is no owner any more.
    await roleGrant(b.repo, carol, { grantee: 'mallory@example.com', role: 'owner' });
    expect((await b.sync()).pushed).toEqual(['refs/zz/config']);
    const r = await a.sync();
    expect(r.quarantined).toEqual([]);
    expect(r.fast_forwarded).toEqual(['refs/zz/config']);
    const config = (await a.repo.config.read()).state;
    expect(config.config?.owners).toEqual([OWNER.actor]);
    expect(config.keys.has('dave@example.com')).toBe(false);
    // And the owner's next config op still reaches everyone.
    await keyAdd(a.repo, OWNER, { actor: BOB.actor, key: generateSigningKey().key.publicKey });
    expect((await a.sync()).pushed).toEqual(['refs/zz/config']);
    expect((await b.sync()).quarantined).toEqual([]);
    expect((await b.repo.config.read()).state.keys.has(BOB.actor)).toBe(true);
  });
});
