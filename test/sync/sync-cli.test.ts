import { afterEach, describe, expect, it } from 'vitest';
import { lanePropose } from '../../src/core/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { makeCluster, type Cluster } from './git-cluster.js';

// `zz sync` as a person runs it: what it prints, --json, and exit code 7 when offline.

let cluster: Cluster | null = null;
afterEach(() => {
  cluster?.cleanup();
  cluster = null;
});

describe('zz sync (CLI)', () => {
  it('prints what it did, --json too, and exits 7 with one line when the remote is unreachable', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [(typeof cluster.clones)[0], (typeof cluster.clones)[0]];
    const env = cliEnv();
    await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
    const r1 = await zz(a.dir, env, 'sync');
    expect(r1.stderr).toBe('');
    expect(r1.code).toBe(0);
    expect(r1.stdout).toMatch(/^Synced with origin: fetched 0 ref\(s\), merged 0, pushed 1\.$/m);
    const r2 = await zz(b.dir, env, 'sync', '--json');
    expect(r2.code).toBe(0);
    expect(r2.json()).toMatchObject({
      remote: 'origin',
      adopted: ['refs/zz/lanes/web'],
      pushed: [],
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
