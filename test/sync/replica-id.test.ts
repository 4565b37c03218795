import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { askPost, lanePropose, ZzRepo } from '../../src/core/index.js';
import { replicaId, replicaPath } from '../../src/local/index.js';
import { cleanUpClusters, makeCluster, type Cluster } from './git-cluster.js';

// Each clone keeps one replica id under <git common dir>/zz/replica: every op it writes
// carries it (op id prefix and `replica`), across processes and restarts; clones differ.

const OWNER = { actor: 'owner@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

describe('replica id per clone', () => {
  it('is created once, shared by every ZzRepo of the clone, and stamped on each op', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    const gitdir = join(a.dir, '.git');
    const id = readFileSync(replicaPath(gitdir), 'utf8').trim();
    expect(id).toMatch(/^[0-9a-f]{16}$/);
    // Racing creators on a fresh clone agree on one id.
    const other = join(b.dir, '.git');
    expect(await replicaId(other)).toBe(readFileSync(replicaPath(other), 'utf8').trim());
    expect(await replicaId(other)).not.toBe(id);
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    // A second process on the same clone (a CLI next to the daemon) writes with the same id.
    const again = await ZzRepo.open(a.dir, { key: 'local/test' });
    try {
      await askPost(again, OWNER, { lane_id: 'web', kind: 'work', title: 'x' });
    } finally {
      again.close();
    }
    const { log } = await a.repo.lane('web').read();
    expect(log).toHaveLength(2);
    for (const op of log) {
      expect(op.replica).toBe(id);
      expect(op.id.startsWith(`${id}-`)).toBe(true);
    }
  });

  it('concurrent first uses create one id', async () => {
    cluster = await makeCluster(1);
    const dir = join(cluster.clones[0]!.dir, '.git', 'fresh');
    const ids = await Promise.all(Array.from({ length: 8 }, () => replicaId(dir)));
    expect(new Set(ids).size).toBe(1);
    expect(readFileSync(replicaPath(dir), 'utf8').trim()).toBe(ids[0]);
  });
});
