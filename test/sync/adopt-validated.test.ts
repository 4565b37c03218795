import { afterEach, describe, expect, it } from 'vitest';
import { askPost, fastForwardFromRemotes, lanePropose, ZzRepo } from '../../src/core/index.js';
import { zzInit } from '../../src/core/setup.js';
import { signAs, syncRepo } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { makeCluster, pushRaw, zzRefs, type Cluster } from './git-cluster.js';

// What `zz init` adopts and what the post-merge/post-rewrite hooks fast-forward came from
// another machine: it passes the same checks `zz sync` makes (DESIGN §7) before it becomes
// local truth. Both used to move refs/zz/* to whatever was fetched, so a forged owner grant
// that every `zz sync` quarantined became an owner on each new clone and after each git pull.

const OWNER = 'owner@example.com';
const MALLORY = 'mallory@example.com';

let cluster: Cluster | null = null;
const cleanups: Array<() => void> = [];
afterEach(() => {
  cluster?.cleanup();
  cluster = null;
  for (const c of cleanups.splice(0)) c();
});

/** A role_grant making mallory an owner, written on `repo` as if by the owner, signed by no
 * key of any owner (what anyone who may push to the remote can produce). */
async function forgeOwnerGrant(repo: ZzRepo): Promise<void> {
  signAs(repo, OWNER, generateSigningKey().key);
  await repo.config.mutate({
    actor: OWNER,
    // Written past the local checks, as another machine's zz may have: kept even if refused.
    recordRefused: true,
    decide: () => ({
      op: 'role_grant',
      summary: 'role_grant: grant owner mallory@example.com',
      args: { grantee: MALLORY, role: 'owner', revoke: false },
    }),
    result: () => null,
  });
}

/** A fresh clone of the cluster's remote, opened as a daemon would. */
async function freshClone(remote: string): Promise<{ dir: string; repo: ZzRepo }> {
  const { dir, cleanup } = makeRepo('zz-fresh-');
  cleanups.push(cleanup);
  sh(dir, 'remote', 'add', 'origin', remote);
  const repo = await ZzRepo.open(dir, { key: 'local/test' });
  cleanups.push(() => repo.close());
  return { dir, repo };
}

const HOOK = { node: process.execPath, main: '/nonexistent/zz.js' };

for (const signed of [false, true]) {
  describe(`what another machine pushed (${signed ? 'signed' : 'plain'} repo)`, () => {
    it('zz init on a new clone quarantines a forged owner grant instead of adopting it', async () => {
      cluster = await makeCluster(2, { signed });
      const [, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
      await forgeOwnerGrant(b.repo);
      pushRaw(b, 'refs/zz/config'); // zz sync would hold it back

      const c = await freshClone(cluster.remote);
      // Adopting it would make mallory an owner here; a config of carol's own would start a
      // second history of owners: init refuses, saying what is wrong and who can repair it.
      await expect(
        zzInit(c.repo, { owner: 'carol@example.com', visibility: 'private', hookCommand: HOOK }),
      ).rejects.toMatchObject({
        code: 'precondition_failed',
        message: expect.stringMatching(
          /refs\/zz\/config on the remote failed .*owner's key.*ask an owner/,
        ),
      });
      // Nor is any Lane adopted: with no config to judge them by, their roles and signatures
      // would go unchecked. `zz sync` on such a clone holds them back the same way.
      expect([...zzRefs(c.dir).keys()]).toEqual([]);
      expect(sh(c.dir, 'for-each-ref', '--format=%(refname)', 'refs/zz-quarantine/')).toBe(
        'refs/zz-quarantine/origin/config\nrefs/zz-quarantine/origin/lanes/_repo',
      );
      const r = await syncRepo(c.repo, undefined, { backoff: async () => {} });
      expect(r.quarantined.map((q) => q.ref)).toEqual(['refs/zz/config', 'refs/zz/lanes/_repo']);
      expect(r.adopted).toEqual([]);
      expect([...zzRefs(c.dir).keys()]).toEqual([]);
    });

    it('the git-pull hook does not fast-forward to a forged owner grant', async () => {
      cluster = await makeCluster(2, { signed });
      const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
      const before = zzRefs(a.dir).get('refs/zz/config');
      await forgeOwnerGrant(b.repo);
      pushRaw(b, 'refs/zz/config');
      // What a `git pull` fetches with the refspec zz init adds; then the hook runs.
      sh(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
      const r = await fastForwardFromRemotes(a.repo);
      expect(r.fast_forwarded).toEqual([]);
      expect(r.quarantined).toEqual([expect.objectContaining({ ref: 'refs/zz/config' })]);
      expect(zzRefs(a.dir).get('refs/zz/config')).toBe(before);
      expect((await a.repo.requireConfig()).owners).toEqual([OWNER]);
    });

    it('still adopts and fast-forwards what passes the checks', async () => {
      cluster = await makeCluster(2, { signed });
      const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
      // Clone b writes as the owner, signed with the owner's registered key.
      signAs(b.repo, OWNER, a.key);
      await lanePropose(b.repo, { actor: OWNER }, { lane_id: 'web', title: 'Web' });
      await askPost(b.repo, { actor: OWNER }, { lane_id: 'web', kind: 'work', title: 'x' });
      await b.sync();
      sh(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
      const r = await fastForwardFromRemotes(a.repo);
      expect(r.quarantined).toEqual([]);
      expect([...r.adopted, ...r.fast_forwarded]).toContain('refs/zz/lanes/web');
      expect(zzRefs(a.dir).get('refs/zz/lanes/web')).toBe(
        zzRefs(cluster.remote).get('refs/zz/lanes/web'),
      );

      const c = await freshClone(cluster.remote);
      const report = await zzInit(c.repo, {
        owner: 'carol@example.com',
        visibility: 'private',
        hookCommand: HOOK,
      });
      expect(report.quarantined).toEqual([]);
      expect(report.adopted).toEqual(
        expect.arrayContaining(['refs/zz/config', 'refs/zz/lanes/web']),
      );
    });
  });
}
