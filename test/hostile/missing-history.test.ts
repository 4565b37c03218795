import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { laneRef, type ZzRepo } from '../../src/core/index.js';
import { ALICE, BOB, call, gitRepo, rejects } from '../helpers/core-fixture.js';
import { sh } from '../helpers/temp-repo.js';

// Found by the audit (a repository that lost a commit under load): `git log --topo-order`
// meets a missing commit, prints "error: Could not read <oid>" and exits 0 with the history
// cut there. zz took the cut history as the whole: a Lane read afresh was "the ref holds no
// lane_propose" (the real cause hidden), and a Lane refreshed from a cached revision applied
// the ops above the hole and silently dropped the ones in it. A history git cannot read whole
// is an unreadable entity (422 naming the ref and the missing object), never a shorter one.

let done: (() => void) | null = null;
afterEach(() => done?.());

const git = (dir: string, input: string, ...args: string[]) =>
  execFileSync('git', args, { cwd: dir, input, encoding: 'utf8' }).trim();

/** A loose commit on `ref` holding `ops` (an empty tree, like an op-only commit). */
function handCommit(dir: string, ref: string, ops: unknown[]): string {
  const tree = git(dir, '', 'mktree');
  const parent = sh(dir, 'rev-parse', ref);
  const c = git(
    dir,
    `by hand\n\nzz-ops ${JSON.stringify(ops)}\n`,
    'commit-tree',
    tree,
    '-p',
    parent,
  );
  sh(dir, 'update-ref', ref, c);
  return c;
}

async function setup(): Promise<{ repo: ZzRepo; dir: string; posts: unknown[] }> {
  const { repo, dir, cleanup } = await gitRepo();
  done = cleanup;
  await call(repo, ALICE, 'lane_propose', { lane_id: 'src', title: 'Source of ops' });
  for (const title of ['one', 'two'])
    await call(repo, ALICE, 'ask_post', { lane_id: 'src', kind: 'work', title });
  const posts = (await repo.store.history(laneRef('src')))
    .flatMap((c) => c.ops)
    .filter((o) => (o as { op: string }).op === 'ask_post');
  expect(posts).toHaveLength(2);
  await call(repo, ALICE, 'lane_propose', { lane_id: 'holed', title: 'Holed' });
  return { repo, dir, posts };
}

const dropLoose = (dir: string, oid: string) =>
  rmSync(join(dir, '.git', 'objects', oid.slice(0, 2), oid.slice(2)));

describe('a Lane whose history has a missing commit', () => {
  it('read afresh: 422 naming the missing object, the other Lanes readable', async () => {
    const { repo, dir, posts } = await setup();
    const hole = handCommit(dir, laneRef('holed'), [posts[0]]);
    handCommit(dir, laneRef('holed'), [posts[1]]);
    dropLoose(dir, hole);
    repo.close();
    const { ZzRepo } = await import('../../src/core/index.js');
    const fresh = await ZzRepo.open(dir, { key: 'local/test' });
    try {
      const e = await rejects(
        call(fresh, BOB, 'lane_get', { lane_id: 'holed' }),
        'entity_corrupt',
        new RegExp(`refs/zz/lanes/holed.*${hole}`),
      );
      expect(e.status).toBe(422);
      const list = await call(fresh, BOB, 'lane_list', {});
      expect(list.corrupt.map((c: { ref: string }) => c.ref)).toEqual([laneRef('holed')]);
      expect((await call(fresh, BOB, 'lane_get', { lane_id: 'src' })).asks).toHaveLength(2);
    } finally {
      fresh.close();
    }
  });

  it('refreshed from a cached revision: 422, not the ops above the hole without those in it', async () => {
    const { repo, dir, posts } = await setup();
    expect((await call(repo, BOB, 'lane_get', { lane_id: 'holed' })).asks).toHaveLength(0);
    const hole = handCommit(dir, laneRef('holed'), [posts[0]]);
    handCommit(dir, laneRef('holed'), [posts[1]]);
    dropLoose(dir, hole);
    await rejects(
      call(repo, BOB, 'lane_get', { lane_id: 'holed' }),
      'entity_corrupt',
      new RegExp(hole),
    );
    // One unreadable Lane does not take lane_list down with it.
    const list = await call(repo, BOB, 'lane_list', {});
    expect(list.corrupt.map((c: { ref: string }) => c.ref)).toEqual([laneRef('holed')]);
    expect(list.lanes.map((l: { lane_id: string }) => l.lane_id).sort()).toEqual(['_repo', 'src']);
  });
});
