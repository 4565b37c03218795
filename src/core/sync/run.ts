import { ZzError } from '../../errors.js';
import { authoritativeRemote, listRemotes, assertRemoteName } from '../../git/index.js';
import { GitStore } from '../../store/index.js';
import type { ZzRepo } from '../zz-repo.js';
import { authChecker } from './authenticity.js';
import { syncWith, type SyncOptions, type SyncReport } from './engine.js';
import { GitSyncLocal, GitSyncRemote } from './git-ports.js';

// `zz sync [REMOTE]` on a served repository: the authoritative remote (`git config zz.remote`,
// default origin) is fetched from and pushed to; any other remote is fetch-only.

export async function syncRepo(
  repo: ZzRepo,
  remoteName?: string,
  opts: Omit<SyncOptions, 'authoritative'> = {},
): Promise<SyncReport> {
  const g = repo.git;
  if (!g || !(repo.store instanceof GitStore)) {
    throw new ZzError('local_only', 'zz sync needs a git repository');
  }
  const main = await authoritativeRemote(g.gitdir);
  const name = assertRemoteName(remoteName ?? main);
  const remotes = await listRemotes(g.gitdir);
  if (!remotes.includes(name)) {
    throw new ZzError(
      'not_found',
      remotes.length === 0
        ? `this repository has no remote; add one with \`git remote add origin <url>\``
        : `no remote named ${name} (remotes: ${remotes.join(', ')})`,
    );
  }
  return syncWith(new GitSyncLocal(g, repo.store), new GitSyncRemote(g, name), {
    checker: authChecker,
    ...opts,
    authoritative: name === main,
  });
}
