import { ZzError } from '../../errors.js';
import {
  authoritativeRemote,
  listRemotes,
  assertRemoteName,
  type GitRepository,
} from '../../git/index.js';
import { GitStore } from '../../store/index.js';
import type { ZzRepo } from '../zz-repo.js';
import { authChecker } from './authenticity.js';
import { recordHeldBack } from './held-back.js';
import { syncWith, type SyncOptions } from './engine.js';
import type { SyncReport } from './report.js';
import { GitSyncLocal, GitSyncRemote } from './git-ports.js';
import { unrelatedMessage, unrelatedRemote, type UnrelatedProject } from './project-identity.js';

// `zz sync [REMOTE]` on a served repository: the authoritative remote (`git config zz.remote`,
// default origin) is fetched from and pushed to; any other remote is fetch-only.

export async function syncRepo(
  repo: ZzRepo,
  remoteName?: string,
  opts: Omit<SyncOptions, 'authoritative'> = {},
): Promise<SyncReport> {
  const { g, store, name, main } = await syncTarget(repo, remoteName);
  const report = await syncWith(new GitSyncLocal(g, store), new GitSyncRemote(g, name), {
    checker: authChecker,
    now: () => repo.clock().getTime(),
    ...opts,
    authoritative: name === main,
  });
  // repo_state lists what is held back, whoever synced (held-back.ts).
  await recordHeldBack(repo, report);
  return report;
}

/**
 * The repository's git side and the remote a sync talks to (`remoteName`, else the
 * authoritative one: `git config zz.remote`, default origin), or a clear error.
 */
export async function syncTarget(
  repo: ZzRepo,
  remoteName?: string,
): Promise<{ g: GitRepository; store: GitStore; name: string; main: string }> {
  const g = repo.git;
  const store = repo.store;
  if (!g || !(store instanceof GitStore)) {
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
  return { g, store, name, main };
}

/** A remote's tracking config: refs/zz-remotes/<remote>/config (remote names hold no "/"). */
const TRACKING_CONFIG = /^refs\/zz-remotes\/([A-Za-z0-9][A-Za-z0-9._-]{0,99})\/config$/;

/**
 * Each remote's tracking config head (refs/zz-remotes/<remote>/config), by remote, in name
 * order: one readdir for the remote names, then one ref read each. Listing refs/zz-remotes/
 * instead read every remote Lane ref (760 of them: 124 ms of blocked event loop per health
 * poll, found in review) only to keep the configs.
 */
export async function trackingConfigs(repo: ZzRepo): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for (const remote of await repo.store.listNames('refs/zz-remotes/')) {
    const ref = `refs/zz-remotes/${remote}/config`;
    if (!TRACKING_CONFIG.test(ref)) continue;
    const head = await repo.store.head(ref);
    if (head) out.push([remote, head]);
  }
  return out;
}

/**
 * The remotes whose fetched zz state belongs to another project (what `zz sync` refuses, and
 * what a daemon's own syncing keeps meeting): repo_state lists them, so an agent or a person
 * learns why nothing arrives from there. Read from the tracking refs, no git spawn.
 */
export async function unrelatedRemotes(
  repo: ZzRepo,
): Promise<Array<UnrelatedProject & { message: string }>> {
  const g = repo.git;
  if (!g || !(repo.store instanceof GitStore)) return [];
  const local = new GitSyncLocal(g, repo.store);
  const out: Array<UnrelatedProject & { message: string }> = [];
  for (const [remote] of await trackingConfigs(repo)) {
    const u = await unrelatedRemote(local, remote).catch(() => null);
    if (u) out.push({ ...u, message: unrelatedMessage(u) });
  }
  return out;
}

/**
 * One line per owner this round removed (SyncReport.owners_lost), with who owns the
 * repository now and how to get ownership back: `zz sync` prints them, the daemon's
 * automatic sync logs them. Every owner lost is named, not only the git identity's: an agent
 * acting through a token is an actor of its own, and the person syncing shares the repository.
 */
export function ownersLostNotices(repoKey: string, r: SyncReport): string[] {
  const lost = r.owners_lost;
  if (!lost) return [];
  const why = lost.merged
    ? `when two clones each ran \`zz init\`, the one that reached ${r.remote} first stands`
    : `a revocation came from ${r.remote}`;
  return lost.actors.map(
    (a) =>
      `after this sync ${a} is no longer an owner of ${repoKey} (owners: ${lost.owners.join(', ')}; ${why}); an owner can run: zz role grant --grantee ${a} --role owner`,
  );
}
