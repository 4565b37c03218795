import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { watchHealth, repoHealth } from '../../src/core/index.js';
import { trackingConfigs } from '../../src/core/sync/run.js';
import { gitRepo, memoryRepo } from '../helpers/core-fixture.js';
import { sh } from '../helpers/temp-repo.js';

// Health (polled every 2 s while a dashboard listens) and unrelatedRemotes need each remote's
// tracking config only. Listing refs/zz-remotes/ read every remote Lane ref too (760 refs:
// 124 ms of blocked event loop per poll, found in review).

describe('the remotes’ tracking configs', () => {
  let done: (() => void) | null = null;
  afterEach(() => done?.());

  it('are read per remote (loose, packed, none), never by listing every remote ref', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    done = cleanup;
    const head = sh(dir, 'rev-parse', 'refs/zz/config');
    // up: packed config and Lane; origin: loose; lanesonly: no config; gone: an empty directory.
    sh(dir, 'update-ref', 'refs/zz-remotes/up/config', head);
    sh(dir, 'update-ref', 'refs/zz-remotes/up/lanes/a', head);
    sh(dir, 'pack-refs', '--all');
    sh(dir, 'update-ref', 'refs/zz-remotes/origin/config', head);
    for (let i = 0; i < 20; i++) sh(dir, 'update-ref', `refs/zz-remotes/origin/lanes/l${i}`, head);
    sh(dir, 'update-ref', 'refs/zz-remotes/lanesonly/lanes/b', head);
    mkdirSync(join(dir, '.git/refs/zz-remotes/gone'), { recursive: true });

    const listed: string[] = [];
    const listRefs = repo.store.listRefs.bind(repo.store);
    repo.store.listRefs = (prefix: string) => {
      listed.push(prefix);
      return listRefs(prefix);
    };
    expect(await trackingConfigs(repo)).toEqual([
      ['origin', head],
      ['up', head],
    ]);
    await repoHealth(repo, true);
    // The health poll: a few ticks, each reading the configs, none listing the remote refs.
    const stop = watchHealth(repo, () => {}, 20);
    const t0 = Date.now();
    while (listed.filter((p) => p.startsWith('refs/zz-quarantine/')).length < 4) {
      if (Date.now() - t0 > 30_000) throw new Error('the health poll never ran');
      await new Promise((r) => setTimeout(r, 20));
    }
    stop();
    expect(listed.filter((p) => p.startsWith('refs/zz-remotes'))).toEqual([]);
  });

  it('memory store: names one level below a prefix', async () => {
    const { repo } = await memoryRepo();
    const oid = (await repo.store.head('refs/zz/config'))!;
    await repo.store.setRef('refs/zz-remotes/b/config', null, oid);
    await repo.store.setRef('refs/zz-remotes/a/lanes/x', null, oid);
    expect(await repo.store.listNames('refs/zz-remotes/')).toEqual(['a', 'b']);
    expect(await trackingConfigs(repo)).toEqual([['b', oid]]);
  });
});
