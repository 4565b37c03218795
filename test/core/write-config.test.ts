import { afterEach, describe, expect, it } from 'vitest';
import { ZzRepo } from '../../src/core/zz-repo.js';
import { BOB, OWNER, call, gitRepo, rejects } from '../helpers/core-fixture.js';
import { makeRepo } from '../helpers/temp-repo.js';

// A write to a Lane decides against the config its group commit read (no config read of its
// own, see write-op.ts): a config change made by another process (another ZzRepo on the same
// git directory, as `zz` on the command line is) must still hold for the very next write.

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe('writes and the config', () => {
  it("decide() sees another process's config change on the next write", async () => {
    const { repo: daemon, dir, cleanup } = await gitRepo();
    cleanups.push(cleanup);
    const cli = await ZzRepo.open(dir, { key: 'local/test' });
    cleanups.push(() => cli.close());
    // Only owners coordinate _repo, and only coordinators post workflow Asks by hand.
    const post = () =>
      call(daemon, BOB, 'ask_post', { lane_id: '_repo', kind: 'changeset_review', title: 'r' });
    await rejects(post(), 'forbidden', /only coordinators/);
    await call(cli, OWNER, 'role_grant', { grantee: BOB.actor, role: 'owner' });
    expect((await post()).ask.kind).toBe('changeset_review');
    await call(cli, OWNER, 'role_grant', { grantee: BOB.actor, role: 'owner', revoke: true });
    await rejects(post(), 'forbidden', /only coordinators/);
    // Reads in between (which also read the config) change nothing.
    await call(daemon, OWNER, 'lane_get', { lane_id: '_repo' });
    await call(cli, OWNER, 'role_grant', { grantee: BOB.actor, role: 'owner' });
    expect((await post()).ask.kind).toBe('changeset_review');
  });

  it('a write to a repository not initialised is refused before anything is written', async () => {
    const bare = makeRepo();
    cleanups.push(bare.cleanup);
    const fresh = await ZzRepo.open(bare.dir, { key: 'local/fresh' });
    cleanups.push(() => fresh.close());
    await rejects(
      call(fresh, OWNER, 'ask_post', { lane_id: 'l', kind: 'work', title: 't' }),
      'precondition_failed',
      /not initialised/,
    );
    expect(await fresh.laneIds()).toEqual([]);
  });
});
