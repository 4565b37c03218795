import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

export function sh(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_DATE: '', GIT_COMMITTER_DATE: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    maxBuffer: 256 * 1024 * 1024,
  }).trim();
}

/** A real repository with one commit on main, and a cleanup function (it is also removed
 * when the test file ends). */
export function makeRepo(prefix = 'zz-test-'): { dir: string; cleanup: () => void } {
  const dir = tempDir(prefix);
  // A copy of one made by git once per test file: makeRepo runs hundreds of times a suite, and
  // `git init`, `add` and `commit` cost ~85 ms of CPU (and ~0.5 s of wall on a loaded 2-core
  // machine) where a copy costs ~15 ms. The copy is what git would have made (the same commit:
  // makeRepo's commits made within one second always were one and the same); its index's stat
  // data does not match the copied README.md, which git re-reads once and finds unchanged.
  cpSync(template(), dir, { recursive: true });
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

let templateDir: string | null = null;
function template(): string {
  // removeTempDirs() removes it with the rest at the end of a file.
  if (templateDir !== null && existsSync(join(templateDir, '.git', 'HEAD'))) return templateDir;
  const dir = tempDir('zz-template-');
  sh(dir, 'init', '-q', '-b', 'main');
  // What `git config user.email …` (and the two others) would write, in one append instead of
  // three git processes.
  appendFileSync(
    join(dir, '.git', 'config'),
    '[user]\n\temail = owner@example.com\n\tname = Owner\n[commit]\n\tgpgsign = false\n',
  );
  writeFileSync(join(dir, 'README.md'), '# demo\n\nA demo repository.\n');
  sh(dir, 'add', '.');
  sh(dir, 'commit', '-q', '-m', 'initial');
  templateDir = dir;
  return dir;
}

/** A checkout with a root commit of its own, its bare remote (main pushed), not yet zz's. */
export function makeProject(label: string): { dir: string; remote: string } {
  const remote = tempDir(`zz-${label}-remote-`);
  sh(remote, 'init', '-q', '--bare', '-b', 'main');
  const { dir } = makeRepo(`zz-${label}-`);
  // makeRepo's commits made within one second are one and the same commit: make it this
  // project's own.
  writeFileSync(join(dir, 'README.md'), `# ${label}\n`);
  sh(dir, 'commit', '-q', '-a', '--amend', '-m', `${label}: first commit`);
  sh(dir, 'remote', 'add', 'origin', remote);
  sh(dir, 'push', '-q', 'origin', 'main');
  return { dir, remote };
}

export function fsck(dir: string): string {
  return execFileSync('git', ['fsck', '--full', '--strict', '--no-dangling'], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/**
 * `git fsck --full --strict` with dangling/unreachable notices allowed (crashed or racing
 * writers leave unreachable objects by design); returns the problems, [] when sound.
 */
export function fsckProblems(dir: string): string[] {
  // fsck lists every dangling object (thousands after kill tests): past spawnSync's default
  // 1 MiB of output it would fail with ENOBUFS.
  const r = spawnSync('git', ['fsck', '--full', '--strict'], {
    cwd: dir,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const problems = `${r.stdout}\n${r.stderr}`
    .split('\n')
    .filter((l) => l.trim() !== '')
    .filter((l) => !/^(dangling|unreachable) \w+ [0-9a-f]{40}$/.test(l))
    .filter((l) => !/^(notice: |Checking )/.test(l));
  if (r.status !== 0 && problems.length === 0) problems.push(`git fsck exited ${r.status}`);
  return problems;
}
