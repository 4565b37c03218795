import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { call, initialiseInProcess, OWNER, withZzRepo } from '../helpers/core-fixture.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { ROOT, ZZ_MAIN, ensureBuilt, killAll, privateEnv, zz } from './zz-process.js';

// The git hooks `zz init` installs (hooks/ in the package), run by real `git pull`,
// `git merge --squash` and `git pull --rebase` with the built zz (issue 11.5). What these tests
// are about is the clone: its `zz init` (spawned) installs the hooks, and git runs them with the
// built zz. The origin only has to hold zz state for the pull to bring: it is initialised and
// its Lanes proposed in this process through the core, as `zz init` and `zz lane propose` would
// (each spawn of the built zz costs ~1 s of CPU on a loaded 2-core machine; these spawns were 10
// of the file's 18).

beforeAll(ensureBuilt);
afterEach(killAll);

/** git with the test's environment, failing loudly; returns stdout and stderr. */
function git(cwd: string, env: NodeJS.ProcessEnv, ...args: string[]) {
  const r = spawnSync('git', args, { cwd, env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} exited ${r.status}:\n${r.stderr}`);
  return { stdout: r.stdout, stderr: r.stderr };
}

async function originAndClone() {
  const origin = makeRepo('zz-hook-origin-');
  const clone = mkdtempSync(join(tmpdir(), 'zz-hook-clone-'));
  // No `zz` on PATH other than what init recorded: the hook must find the zz that ran init.
  const env = privateEnv({ PATH: '/usr/bin:/bin' });
  await initialiseInProcess(origin.dir);
  git(tmpdir(), env, 'clone', '-q', origin.dir, clone);
  sh(clone, 'config', 'user.email', 'second@example.com');
  sh(clone, 'config', 'user.name', 'Second');
  sh(clone, 'config', 'commit.gpgsign', 'false');
  const init = await zz(clone, env, ['init', '--json']);
  expect(init.code).toBe(0);
  expect(init.json().hooks_installed).toEqual(['post-merge', 'post-rewrite']);
  const cleanup = () => {
    origin.cleanup();
    rmSync(clone, { recursive: true, force: true });
  };
  return { origin: origin.dir, clone, env, cleanup };
}

async function newLaneAndCommit(origin: string, lane: string) {
  await withZzRepo(origin, (repo) =>
    call(repo, OWNER, 'lane_propose', { lane_id: lane, title: lane }),
  );
  writeFileSync(join(origin, `${lane}.txt`), `${lane}\n`);
  sh(origin, 'add', '.');
  sh(origin, 'commit', '-q', '-m', `add ${lane}`);
}

const refOf = (dir: string, ref: string) =>
  spawnSync('git', ['rev-parse', '-q', '--verify', ref], {
    cwd: dir,
    encoding: 'utf8',
  }).stdout.trim();

describe('git hooks installed by zz init', () => {
  it('are the files of hooks/, executable, byte for byte', async () => {
    const { clone, cleanup } = await originAndClone();
    try {
      for (const hook of ['post-merge', 'post-rewrite']) {
        const installed = join(clone, '.git', 'hooks', hook);
        expect(readFileSync(installed, 'utf8')).toBe(
          readFileSync(join(ROOT, 'hooks', hook), 'utf8'),
        );
        expect(statSync(installed).mode & 0o111).toBe(0o111);
      }
      expect(readFileSync(join(clone, '.git', 'zz', 'hook-command'), 'utf8')).toBe(
        `${process.execPath}\n${ZZ_MAIN}\n`,
      );
    } finally {
      cleanup();
    }
  });

  it('a real git pull runs post-merge (git passes 0) and brings new Lanes in', async () => {
    const { origin, clone, env, cleanup } = await originAndClone();
    try {
      await newLaneAndCommit(origin, 'pulled');
      const pull = git(clone, env, 'pull', '--no-rebase', '-q');
      expect(pull.stderr).toContain('zz: brought 1 zz ref(s) up to date');
      expect(refOf(clone, 'refs/zz/lanes/pulled')).toBe(refOf(origin, 'refs/zz/lanes/pulled'));
    } finally {
      cleanup();
    }
  });

  it('a squash merge (git passes 1) runs the hook too', async () => {
    const { origin, clone, env, cleanup } = await originAndClone();
    try {
      await newLaneAndCommit(origin, 'squashed');
      git(clone, env, 'fetch', '-q', 'origin');
      const m = git(clone, env, 'merge', '--squash', 'origin/main');
      expect(m.stderr).toContain('zz: brought 1 zz ref(s) up to date');
      expect(refOf(clone, 'refs/zz/lanes/squashed')).toBe(refOf(origin, 'refs/zz/lanes/squashed'));
    } finally {
      cleanup();
    }
  });

  it('git pull --rebase runs post-rewrite and brings new Lanes in', async () => {
    const { origin, clone, env, cleanup } = await originAndClone();
    try {
      writeFileSync(join(clone, 'local.txt'), 'mine\n');
      sh(clone, 'add', '.');
      sh(clone, 'commit', '-q', '-m', 'local work');
      await newLaneAndCommit(origin, 'rebased');
      const pull = git(clone, env, 'pull', '--rebase', '-q');
      expect(pull.stderr).toContain('zz: brought 1 zz ref(s) up to date');
      expect(refOf(clone, 'refs/zz/lanes/rebased')).toBe(refOf(origin, 'refs/zz/lanes/rebased'));
    } finally {
      cleanup();
    }
  });

  it('never fails the git command, even when zz fails or is gone', async () => {
    const { origin, clone, env, cleanup } = await originAndClone();
    try {
      // A zz that exits 3: the merge still succeeds.
      const failing = join(clone, '.git', 'failing-zz.mjs');
      writeFileSync(failing, 'process.stderr.write("broken zz\\n"); process.exit(3);\n');
      writeFileSync(join(clone, '.git', 'zz', 'hook-command'), `${process.execPath}\n${failing}\n`);
      await newLaneAndCommit(origin, 'one');
      const pull = git(clone, env, 'pull', '--no-rebase', '-q');
      expect(pull.stderr).toContain('broken zz');
      // No recorded zz and none on PATH: nothing runs, the merge still succeeds.
      rmSync(join(clone, '.git', 'zz', 'hook-command'));
      await newLaneAndCommit(origin, 'two');
      git(clone, env, 'pull', '--no-rebase', '-q');
      expect(refOf(clone, 'refs/zz/lanes/two')).toBe('');
      expect(sh(clone, 'log', '-1', '--format=%s')).toBe('add two');
    } finally {
      cleanup();
    }
  });
});
