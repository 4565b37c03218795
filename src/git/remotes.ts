import { assertRefName } from './ref-names.js';
import { forgetGitConfig } from './git-config.js';
import { git, runGit } from './native-git.js';

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

/** Fetches refs/zz/* of one remote into refs/zz-remotes/<remote>/*. */
export async function fetchZz(gitdir: string, remote: string, timeoutMs = 60_000): Promise<void> {
  await runGit(
    ['--git-dir', gitdir, 'fetch', '--quiet', '--no-tags', '--', remote, zzRefspec(remote)],
    {
      cwd: gitdir,
      timeoutMs,
    },
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
