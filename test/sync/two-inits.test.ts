import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// Two clones each ran `zz init` before either synced: the repo_init that reached the remote
// first stands, and the other person stops being an owner. `zz sync` used to say only
// "refused: lane_propose … in lanes/_repo (lane_exists)", leaving them to find out when an
// owner-only call is refused; it now says who owns the repository and what to ask for.

/** Alice's repository pushed to a bare remote, and Bob's clone of it; neither ran zz init. */
function twoClones() {
  const remote = tempDir('zz-two-inits-remote-');
  const { dir: alice, cleanup } = makeRepo();
  sh(remote, 'init', '-q', '--bare', '-b', 'main');
  sh(alice, 'remote', 'add', 'origin', remote);
  sh(alice, 'push', '-q', 'origin', 'main');
  const bob = tempDir('zz-two-inits-bob-');
  sh(bob, 'clone', '-q', remote, '.');
  sh(bob, 'config', 'user.email', 'bob@example.com');
  return { alice, bob, env: cliEnv(), cleanup };
}

describe('zz sync after two independent zz inits', () => {
  it('tells the person who lost ownership, and no one else', async () => {
    const { alice, bob, env, cleanup } = twoClones();
    try {
      expect((await zz(alice, env, 'init')).code).toBe(0);
      expect((await zz(bob, env, 'init')).code).toBe(0);
      // Bob's state reaches the remote first.
      const first = await zz(bob, env, 'sync');
      expect(first.code).toBe(0);
      expect(first.stderr).toBe('');
      const second = await zz(alice, env, 'sync');
      expect(second.code).toBe(0);
      expect(second.stderr).toBe(
        'zz: after this sync owner@example.com is no longer an owner of ' +
          `${JSON.parse((await zz(alice, env, 'repo', 'state', '--json')).stdout).repo} ` +
          '(owners: bob@example.com; when two clones each ran `zz init`, the one that reached ' +
          'origin first stands); an owner can run: zz role grant --grantee owner@example.com --role owner\n',
      );
      expect(JSON.parse((await zz(alice, env, 'repo', 'state', '--json')).stdout).roles.owner).toBe(
        false,
      );
      // Bob, still an owner, hears nothing of it; a sync with nothing new says nothing either.
      expect((await zz(bob, env, 'sync')).stderr).toBe('');
      expect((await zz(alice, env, 'sync')).stderr).toBe('');
    } finally {
      cleanup();
    }
  });

  it('names every owner the merge removed, not only the git identity (an agent acting by token)', async () => {
    const { alice, bob, env, cleanup } = twoClones();
    try {
      expect((await zz(alice, env, 'init')).code).toBe(0);
      // Alice's CI agent acts with a token of its own identity, made an owner before any sync.
      const agent = await zz(alice, env, 'agent', 'create', 'ci', '--json');
      expect(agent.code, agent.stderr).toBe(0);
      const ci = agent.json().actor as string;
      const grant = await zz(alice, env, 'role', 'grant', '--grantee', ci, '--role', 'owner');
      expect(grant.code, grant.stderr).toBe(0);
      expect((await zz(bob, env, 'init')).code).toBe(0);
      expect((await zz(bob, env, 'sync')).code).toBe(0);
      // The CI's own sync (ZZ_TOKEN names its actor) hears that it, too, lost ownership.
      const ciEnv = { ...env, ZZ_TOKEN: agent.json().token as string };
      const second = await zz(alice, ciEnv, 'sync');
      expect(second.code).toBe(0);
      const key = JSON.parse((await zz(alice, env, 'repo', 'state', '--json')).stdout).repo;
      const line = (who: string) =>
        `zz: after this sync ${who} is no longer an owner of ${key} (owners: bob@example.com; ` +
        'when two clones each ran `zz init`, the one that reached origin first stands); ' +
        `an owner can run: zz role grant --grantee ${who} --role owner`;
      expect(second.stderr.trim().split('\n')).toEqual([line('owner@example.com'), line(ci)]);
    } finally {
      cleanup();
    }
  });
});
