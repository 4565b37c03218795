import { describe, expect, it } from 'vitest';
import { lanePropose } from '../../src/core/index.js';
import { fsckProblems, sh } from '../helpers/temp-repo.js';
import { cleanUpClusters, makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// refs/zz/config (and refs/zz/ladder) start from a fixed root commit, so two independent
// `zz init`s share history: the sync merge has a common base instead of joining two roots.

const OWNER = { actor: 'owner@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const roots = (dir: string, ref: string) =>
  sh(dir, 'rev-list', '--max-parents=0', ref).split('\n').filter(Boolean);

describe('deterministic root of singleton refs', () => {
  it('two independent inits share the config root; the merge has it as its base', async () => {
    cluster = await makeCluster(2, { initAll: true });
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    const tipA = zzRefs(a.dir).get('refs/zz/config')!;
    const tipB = zzRefs(b.dir).get('refs/zz/config')!;
    expect(tipA).not.toBe(tipB);
    const [rootA] = roots(a.dir, 'refs/zz/config');
    expect(roots(b.dir, 'refs/zz/config')).toEqual([rootA]);
    expect(sh(a.dir, 'log', '-1', '--format=%an <%ae> %at%n%B', rootA!)).toMatch(
      /^zz <zz@localhost> 0\nzz root refs\/zz\/config/,
    );
    await lanePropose(b.repo, OWNER, { lane_id: 'api', title: 'API' });
    const rb = await b.sync();
    expect(rb.merged.map((m) => m.ref)).toContain('refs/zz/config');
    const merge = zzRefs(b.dir).get('refs/zz/config')!;
    const parents = sh(b.dir, 'rev-list', '--parents', '-n1', merge).split(' ').slice(1);
    expect(parents).toHaveLength(2);
    expect(sh(b.dir, 'merge-base', parents[0]!, parents[1]!)).toBe(rootA);
    // One root after the merge, and the repositories stay sound.
    expect(roots(b.dir, 'refs/zz/config')).toEqual([rootA]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    expect(fsckProblems(a.dir)).toEqual([]);
    expect(fsckProblems(b.dir)).toEqual([]);
  });
});
