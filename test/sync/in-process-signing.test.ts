import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// The CLI without a daemon writes in-process "with the same code path" (README): its commits
// are signed with the person's key as the daemon's are. They were not, so an owner's
// `zz key add` or `zz role grant` run without `zz serve` was quarantined on every other machine
// (owner-level ops count only when signed by an owner's key, in every repository), leaving
// refs/zz/config stuck for the whole team; with `zz init --signed`, every in-process write was.

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

// `from`: a checkout whose history this one takes, so that both are clones of one project (zz
// sync refuses a remote whose zz state names another project's root commits).
function machine(
  remote: string,
  email: string,
  from?: string,
): { dir: string; env: NodeJS.ProcessEnv } {
  const { dir, cleanup } = makeRepo(`zz-${email.split('@')[0]}-`);
  cleanups.push(cleanup);
  if (from) {
    sh(dir, 'fetch', '-q', from, 'HEAD');
    sh(dir, 'reset', '-q', '--hard', 'FETCH_HEAD');
  }
  sh(dir, 'config', 'user.email', email);
  sh(dir, 'remote', 'add', 'origin', remote);
  return { dir, env: cliEnv() };
}

for (const signed of [false, true]) {
  describe(`the CLI without a daemon (${signed ? 'signed' : 'plain'} repo)`, () => {
    it("signs what it writes: another machine takes the owner's key add, grant and Ask", async () => {
      const remote = mkdtempSync(join(tmpdir(), 'zz-remote-'));
      cleanups.push(() => rmSync(remote, { recursive: true, force: true }));
      sh(remote, 'init', '-q', '--bare', '-b', 'main');
      const alice = machine(remote, 'alice@example.com');
      const bob = machine(remote, 'bob@example.com', alice.dir);
      expect((await zz(alice.dir, alice.env, 'init', ...(signed ? ['--signed'] : []))).code).toBe(
        0,
      );
      expect((await zz(alice.dir, alice.env, 'sync')).code).toBe(0);
      const init = await zz(bob.dir, bob.env, 'init', '--json');
      expect(init.code).toBe(0);
      const bobKey = (init.json() as { signing_key: { public_key: string } }).signing_key
        .public_key;

      // Alice, no daemon running: owner-level ops and a Lane op, in-process.
      const calls = [
        ['key', 'add', '--actor', 'bob@example.com', '--key', bobKey],
        ['lane', 'propose', '--lane-id', 'web', '--title', 'Web'],
        [
          'lane',
          'grant',
          '--lane-id',
          'web',
          '--grantee',
          'bob@example.com',
          '--role',
          'maintainer',
        ],
        ['ask', 'post', '--lane-id', 'web', '--kind', 'work', '--title', 'from alice'],
        ['ladder', 'build'],
      ];
      for (const c of calls) {
        const r = await zz(alice.dir, alice.env, ...c);
        // `zz key add` says how the key reaches the other clones; nothing else is said.
        expect(r.stderr.replace(/^zz: the key is registered in this clone; .*\n$/, '')).toBe('');
        expect(r.code).toBe(0);
      }
      expect((await zz(alice.dir, alice.env, 'sync')).code).toBe(0);

      const r = await zz(bob.dir, bob.env, 'sync', '--json');
      expect(r.code).toBe(0);
      expect(r.json()).toMatchObject({ quarantined: [] });
      expect(sh(bob.dir, 'rev-parse', 'refs/zz/ladder')).toBe(
        sh(alice.dir, 'rev-parse', 'refs/zz/ladder'),
      );
      const keys = await zz(bob.dir, bob.env, 'key', 'list', '--json');
      expect(JSON.stringify(keys.json())).toContain('bob@example.com');
      const asks = await zz(bob.dir, bob.env, 'ask', 'list', '--lane-id', 'web', '--json');
      expect(JSON.stringify(asks.json())).toContain('from alice');
      // And bob, whose key alice registered, writes in-process too: alice takes it.
      expect(
        (
          await zz(
            bob.dir,
            bob.env,
            'ask',
            'post',
            '--lane-id',
            'web',
            '--kind',
            'work',
            '--title',
            'from bob',
          )
        ).code,
      ).toBe(0);
      expect((await zz(bob.dir, bob.env, 'sync')).code).toBe(0);
      const back = await zz(alice.dir, alice.env, 'sync', '--json');
      expect(back.json()).toMatchObject({ quarantined: [] });
      const seen = await zz(alice.dir, alice.env, 'lane', 'get', '--lane-id', 'web', '--json');
      const history = (seen.json() as { history: Array<{ op: string; unsigned?: boolean }> })
        .history;
      expect(history.filter((h) => h.unsigned)).toEqual([]);
      expect(JSON.stringify(seen.json())).toContain('from bob');
    }, 180_000); // some twenty CLI runs, each a process's worth of work on a loaded machine
  });
}
