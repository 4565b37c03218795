import { describe, expect, it } from 'vitest';
import { askPost, lanePropose } from '../../src/core/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { cleanUpClusters, makeCluster, type Cluster } from './git-cluster.js';

// `zz sync` as a person runs it: what it prints, --json, and exit code 7 when offline.

let cluster: Cluster | null = null;
cleanUpClusters();

describe('zz sync (CLI)', () => {
  it('prints what it did, --json too, and exits 7 with one line when the remote is unreachable', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    const env = cliEnv();
    await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
    const r1 = await zz(a.dir, env, 'sync');
    expect(r1.stderr).toBe('');
    expect(r1.code).toBe(0);
    expect(r1.stdout).toMatch(/^Synced with origin: fetched 0 ref\(s\), pushed 1\.$/m);
    const r2 = await zz(b.dir, env, 'sync', '--json');
    expect(r2.code).toBe(0);
    expect(r2.json()).toMatchObject({
      remote: 'origin',
      adopted: ['refs/zz/lanes/web'],
      pushed: [],
      counts: { fetched: 1, new: 1, fast_forwarded: 0, merged: 0, pushed: 0, held_back: 0 },
    });

    // Both post in the Lane; a pushes first, so b fetches the Lane and merges it, then pushes
    // the merge: the summary says so (it said "fetched 0 ref(s)" for the ref it merged).
    const owner = { actor: 'owner@example.com' };
    const post = (title: string) => ({ lane_id: 'web', kind: 'work', title });
    await askPost(a.repo, owner, post('from a'));
    await askPost(b.repo, owner, post('from b'));
    expect((await zz(a.dir, env, 'sync')).code).toBe(0);
    const r5 = await zz(b.dir, env, 'sync');
    expect(r5.code, r5.stderr).toBe(0);
    expect(r5.stdout).toMatch(/^Synced with origin: fetched 1 ref\(s\) \(1 merged\), pushed 1\.$/m);
    expect(r5.stdout).toMatch(/^ {2}merged lanes\/web \(1 local op\(s\) after the remote's\)/m);
    // --json: the same counts beside the report's own lists, whose names stay.
    await askPost(a.repo, owner, post('again from a'));
    await askPost(b.repo, owner, post('again from b'));
    expect((await zz(a.dir, env, 'sync')).code).toBe(0);
    const r6 = await zz(b.dir, env, 'sync', '--json');
    expect(r6.code, r6.stderr).toBe(0);
    const j = r6.json() as { merged: unknown[]; pushed: string[]; counts: unknown };
    expect(j.merged).toHaveLength(1);
    expect(j.pushed).toEqual(['refs/zz/lanes/web']);
    expect(j.counts).toEqual({
      fetched: 1,
      new: 0,
      fast_forwarded: 0,
      merged: 1,
      pushed: 1,
      held_back: 0,
      quarantined: 0,
      not_pushed: 0,
    });

    sh(b.dir, 'remote', 'set-url', 'origin', cluster.remote + '-missing');
    const r3 = await zz(b.dir, env, 'sync');
    expect(r3.code).toBe(7);
    expect(r3.stdout).toBe('');
    expect(r3.stderr.trim().split('\n')).toHaveLength(1);
    expect(r3.stderr).toMatch(/^zz: cannot reach origin .*nothing was lost/);
    const r4 = await zz(b.dir, env, 'sync', 'nosuch');
    expect(r4.code).toBe(4);
    expect(r4.stderr).toMatch(/no remote named nosuch/);
  });
});
