import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// `zz init` is re-runnable (issue 12): a second run reports what it changed or "Nothing to
// change", never loses state, and picks up what changed since: a remote added later (refspec,
// and that remote's zz state), a hook a newer zz would write differently, `--signed` turned on.

const refs = (dir: string) => sh(dir, 'for-each-ref', 'refs/zz');

describe('zz init, run again', () => {
  it('changes nothing on a second run and says so', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      expect((await zz(dir, env, 'init', '--no-fetch')).code).toBe(0);
      const before = refs(dir);
      const again = await zz(dir, env, 'init', '--no-fetch', '--json');
      expect(again.code).toBe(0);
      expect(again.json()).toMatchObject({
        created_config: false,
        created_repo_lane: false,
        hooks_installed: [],
        hooks_unchanged: ['post-merge', 'post-rewrite'],
        hook_command_updated: false,
        refspecs_added: [],
        signatures_turned_on: false,
        signing_key_registered: true,
        nothing_changed: true,
      });
      const text = await zz(dir, env, 'init', '--no-fetch');
      expect(text.stdout).toMatch(/already initialised/);
      expect(text.stdout).toMatch(/Nothing to change\.\n$/);
      expect(refs(dir)).toBe(before);
    } finally {
      cleanup();
    }
  });

  it('after a remote is added, a hook is stale and --signed is asked: says each change, keeps state', async () => {
    const shared = mkdtempSync(join(tmpdir(), 'zz-remote-'));
    sh(shared, 'init', '-q', '--bare', '-b', 'main');
    const { dir, cleanup } = makeRepo();
    // Someone else's clone of the same project (a checkout of another history would be
    // another project, whose zz state sync and init refuse: project-identity.test.ts).
    sh(dir, 'push', '-q', shared, 'main');
    const other = tempDir('zz-other-');
    sh(other, 'clone', '-q', shared, '.');
    sh(other, 'config', 'user.email', 'owner@example.com');
    const env = cliEnv();
    try {
      // Someone else initialised zz on the shared remote (their Lane is there).
      expect((await zz(other, cliEnv(), 'init')).code).toBe(0);
      expect(
        (await zz(other, env, 'lane', 'propose', '--lane-id', 'web', '--title', 'W')).code,
      ).toBe(0);
      expect((await zz(other, cliEnv(), 'sync')).code).toBe(0);

      expect((await zz(dir, env, 'init', '--no-fetch')).code).toBe(0);
      const own = await zz(dir, env, 'lane', 'propose', '--lane-id', 'mine', '--title', 'Mine');
      expect(own.code).toBe(0);
      const hook = join(dir, '.git/hooks/post-merge');
      writeFileSync(hook, readFileSync(hook, 'utf8') + '# an older zz\n', { mode: 0o755 });
      sh(dir, 'remote', 'add', 'origin', shared);

      const r = await zz(dir, env, 'init', '--signed', '--json');
      expect(r.stderr).toBe('');
      const rep = r.json();
      expect(rep).toMatchObject({
        created_config: false,
        refspecs_added: ['origin'],
        hooks_installed: ['post-merge'],
        hooks_unchanged: ['post-rewrite'],
        signatures_turned_on: true,
        nothing_changed: false,
      });
      // The remote's Lane came in; nothing local was lost.
      expect(rep.adopted).toContain('refs/zz/lanes/web');
      const zzRefs = refs(dir);
      expect(zzRefs).toMatch(/refs\/zz\/lanes\/mine/);
      expect(zzRefs).toMatch(/refs\/zz\/lanes\/web/);
      expect(sh(dir, 'config', '--get-all', 'remote.origin.fetch')).toContain(
        '+refs/zz/*:refs/zz-remotes/origin/*',
      );
      expect((await zz(dir, env, 'key', 'list', '--json')).json().signatures_required).toBe(true);
      // And a third run has nothing left to do.
      const third = await zz(dir, env, 'init', '--signed', '--no-fetch', '--json');
      expect(third.json()).toMatchObject({ nothing_changed: true, signatures_turned_on: false });
    } finally {
      cleanup();
      rmSync(shared, { recursive: true, force: true });
    }
  });
});
