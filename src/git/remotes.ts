import { assertRefName } from './ref-names.js';
import { forgetGitConfig } from './git-config.js';
import { git, runGit } from './native-git.js';
import { remotesAskOnTerminal, remoteTimeoutMs } from './zz-transport.js';

// Remotes and the zz refspec. Sync is native git only (isomorphic-git cannot fetch custom
// refspecs and speaks only http). Remote names come from the user's own config, but are
// still checked before they become part of a refspec or an argument.

const REMOTE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export const zzRefspec = (remote: string): string => `+refs/zz/*:refs/zz-remotes/${remote}/*`;

export async function listRemotes(gitdir: string): Promise<string[]> {
  const out = await git(['--git-dir', gitdir, 'remote'], { cwd: gitdir });
  return out
    .split('\n')
    .map((s) => s.trim())
    .filter((r) => REMOTE_RE.test(r) && !r.endsWith('.lock'));
}

/** Adds the zz fetch refspec to a remote unless it is there; true when added. */
export async function ensureZzRefspec(gitdir: string, remote: string): Promise<boolean> {
  const key = `remote.${remote}.fetch`;
  const r = await runGit(['--git-dir', gitdir, 'config', '--get-all', key], {
    cwd: gitdir,
    okCodes: [1],
  });
  const existing = r.stdout
    .toString('utf8')
    .split('\n')
    .map((s) => s.trim());
  if (existing.includes(zzRefspec(remote))) return false;
  await runGit(['--git-dir', gitdir, 'config', '--add', key, zzRefspec(remote)], { cwd: gitdir });
  // This process's config snapshots must not answer from before the write.
  forgetGitConfig();
  return true;
}

/**
 * The directory git contacts a remote from: where a relative URL (`git remote add origin
 * ../hub.git`) means what it means to the user's own `git fetch`. git moves to the top of the
 * work tree before it reads one (a bare repository: its git dir); zz names the git dir with
 * --git-dir, so run from the git dir `../hub.git` named a path beside `.git`, inside the
 * checkout, and init and sync failed with "does not appear to be a git repository" where git
 * itself worked.
 */
export function remoteCwd(repo: { gitdir: string; workTree: string | null }): string {
  return repo.workTree ?? repo.gitdir;
}

/** Fetches refs/zz/* of one remote into refs/zz-remotes/<remote>/*. `cwd`: remoteCwd. */
export async function fetchZz(
  gitdir: string,
  remote: string,
  cwd: string,
  timeoutMs = remoteTimeoutMs(60_000),
): Promise<void> {
  await runGit(
    ['--git-dir', gitdir, 'fetch', '--quiet', '--no-tags', '--', remote, zzRefspec(remote)],
    { cwd, timeoutMs, terminal: remotesAskOnTerminal() },
  );
}

export async function isAncestor(
  gitdir: string,
  ancestor: string,
  descendant: string,
): Promise<boolean> {
  const r = await runGit(
    ['--git-dir', gitdir, 'merge-base', '--is-ancestor', ancestor, descendant],
    {
      cwd: gitdir,
      okCodes: [1],
    },
  );
  return r.code === 0;
}

export function remoteTrackingPrefix(remote: string): string {
  return assertRefName(`refs/zz-remotes/${remote}/x`).slice(0, -1);
}
