import { appendFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  discoverRepository,
  ensureZzRefspec,
  findCheckoutAt,
  findCheckoutSync,
  readGitConfig,
  repoKeyOf,
} from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { tempDir } from '../helpers/temp-dirs.js';

// git config is read once per process and checkout (src/git/git-config.ts) and the checkout
// found once per directory (src/git/discover.ts). A cache must not change what zz answers:
// every change made after the first read, by another process or by this one, is seen by the
// next question.

/** A caller environment with a global config of its own. */
function callerEnv(): { env: Record<string, string>; global: string } {
  const home = tempDir('zz-config-home-');
  return {
    env: { HOME: home, XDG_CONFIG_HOME: join(home, 'config'), GIT_CONFIG_NOSYSTEM: '1' },
    global: join(home, '.gitconfig'),
  };
}

describe('the git config snapshot', () => {
  it('answers as git config --get does: last value, case of section and name, unset', async () => {
    const { dir } = makeRepo();
    sh(dir, 'config', '--add', 'remote.Up.fetch', 'one');
    sh(dir, 'config', '--add', 'remote.Up.fetch', 'two');
    sh(dir, 'config', 'zz.model', 'exec:x');
    const c = await readGitConfig(dir);
    expect(c.get('remote.Up.fetch')).toBe('two');
    expect(c.getAll('REMOTE.Up.FETCH')).toEqual(['one', 'two']);
    expect(c.get('remote.up.fetch')).toBeNull(); // a subsection keeps its case
    expect(c.get('zz.Model')).toBe('exec:x');
    expect(c.get('zz.nothing')).toBeNull();
    // Every key with its last value, a bare key's as '' (a bool that is true).
    appendFileSync(join(dir, '.git', 'config'), '[remote "Up"]\n\tpromisor\n');
    const entries = new Map((await readGitConfig(dir)).entries());
    expect(entries.get('remote.Up.fetch')).toBe('two');
    expect(entries.get('zz.model')).toBe('exec:x');
    expect(entries.get('remote.Up.promisor')).toBe('');
  });

  it('sees a change another process made since it was read: rewritten, appended, created', async () => {
    const { dir } = makeRepo();
    const { env, global } = callerEnv();
    expect((await readGitConfig(dir, env)).get('user.email')).toBe('owner@example.com');
    expect((await readGitConfig(dir, env)).get('zz.repo')).toBeNull();
    // git config rewrites the file (a rename, a new inode).
    sh(dir, 'config', 'user.email', 'second@example.com');
    expect((await readGitConfig(dir, env)).get('user.email')).toBe('second@example.com');
    // Appended in place: same inode, another size.
    appendFileSync(join(dir, '.git', 'config'), '[zz]\n\trepo = acme/widgets\n');
    expect((await readGitConfig(dir, env)).get('zz.repo')).toBe('acme/widgets');
    expect(await repoKeyOf(await discoverRepository(dir))).toBe('acme/widgets');
    // A global config that did not exist at the first read.
    writeFileSync(global, '[gpg]\n\tformat = ssh\n');
    expect((await readGitConfig(dir, env)).get('gpg.format')).toBe('ssh');
  });

  it("sees this process's own config write at once", async () => {
    const { dir } = makeRepo();
    sh(dir, 'remote', 'add', 'origin', 'https://example.com/acme/widgets.git');
    const gitdir = join(dir, '.git');
    expect((await readGitConfig(dir)).getAll('remote.origin.fetch')).toEqual([
      '+refs/heads/*:refs/remotes/origin/*',
    ]);
    expect(await ensureZzRefspec(gitdir, 'origin')).toBe(true);
    expect((await readGitConfig(dir)).getAll('remote.origin.fetch')).toEqual([
      '+refs/heads/*:refs/remotes/origin/*',
      '+refs/zz/*:refs/zz-remotes/origin/*',
    ]);
  });

  it('the repo key follows zz.repo and the origin as they change', async () => {
    const { dir } = makeRepo();
    const found = await discoverRepository(dir);
    expect(await repoKeyOf(found, dir)).toBe('local/' + dir.split('/').pop());
    sh(dir, 'remote', 'add', 'origin', 'git@github.com:acme/widgets.git');
    expect(await repoKeyOf(found, dir)).toBe('acme/widgets');
    sh(dir, 'config', 'zz.repo', 'acme/other');
    expect(await repoKeyOf(found, dir)).toBe('acme/other');
  });

  it('refuses a repository that switches to sha256 objects after it was found', async () => {
    const { dir } = makeRepo();
    await discoverRepository(dir);
    sh(dir, 'config', 'core.repositoryformatversion', '1');
    appendFileSync(join(dir, '.git', 'config'), '[extensions]\n\tobjectFormat = sha256\n');
    await expect(discoverRepository(dir)).rejects.toMatchObject({
      code: 'unsupported_repository',
    });
  });
});

describe('config of a repository nested since', () => {
  it('is read from the new repository, not served from the one around it', async () => {
    const { dir } = makeRepo();
    sh(dir, 'config', 'zz.repo', 'outer/repo');
    const sub = join(dir, 'nested');
    mkdirSync(sub);
    expect((await readGitConfig(sub)).get('zz.repo')).toBe('outer/repo');
    sh(sub, 'init', '-q');
    sh(sub, 'config', 'zz.repo', 'inner/repo');
    expect((await readGitConfig(sub)).get('zz.repo')).toBe('inner/repo');
  });
});

describe('the checkout, found once per directory', () => {
  it('finds a repository nested since; an unrelated one beside it changes nothing', async () => {
    const { dir } = makeRepo();
    const sub = join(dir, 'sub');
    mkdirSync(sub);
    expect((await findCheckoutAt(sub)).workTree).toBe(dir);
    expect(findCheckoutSync(sub)?.workTree).toBe(dir);
    sh(sub, 'init', '-q');
    expect((await findCheckoutAt(sub)).workTree).toBe(sub);
    expect(findCheckoutSync(sub)?.gitdir).toBe(join(sub, '.git'));
    const outside = tempDir('zz-not-a-repo-');
    const inner = join(outside, 'r');
    mkdirSync(inner);
    sh(inner, 'init', '-q');
    expect((await findCheckoutAt(inner)).workTree).toBe(inner);
    sh(outside, 'init', '-q', 'other'); // unrelated: the remembered answer holds
    expect((await findCheckoutAt(inner)).workTree).toBe(inner);
  });

  it('asks git again when the git dir it found is gone or replaced', async () => {
    const { dir } = makeRepo();
    expect((await findCheckoutAt(dir)).worktreeGitdir).toBe(join(dir, '.git'));
    // The work tree stays, its .git goes: no repository here any more.
    rmSync(join(dir, '.git'), { recursive: true, force: true });
    await expect(findCheckoutAt(dir)).rejects.toMatchObject({ code: 'not_a_repository' });
    expect(findCheckoutSync(dir)).toBeNull();
    // A linked worktree removed and made again at the same path.
    const main = makeRepo().dir;
    const wt = join(tempDir('zz-linked-'), 'wt');
    sh(main, 'worktree', 'add', '-q', wt);
    expect((await findCheckoutAt(wt)).gitdir).toBe(join(main, '.git'));
    sh(main, 'worktree', 'remove', '--force', wt);
    await expect(findCheckoutAt(wt)).rejects.toMatchObject({ code: 'not_a_repository' });
    sh(main, 'worktree', 'add', '-q', wt);
    expect((await findCheckoutAt(wt)).workTree).toBe(wt);
  });
});
