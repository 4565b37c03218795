import {
  gitDiff,
  gitLog,
  gitShowFile,
  type GitDiffOptions,
  type GitDiffResult,
  type GitLogOptions,
  type GitLogResult,
  type GitShowFileOptions,
  type GitShowFileResult,
  type HistoryRepo,
} from '../git/history.js';
import { requireGit } from './changesets.js';
import type { ZzRepo } from './zz-repo.js';

// The git toolset's use cases (DESIGN §3): reads of the user's history. A revision left out
// means the default branch, named in full (`refs/heads/<branch>`) so that a tag of the same
// name cannot shadow it. The reading itself is git/'s (log.ts, diff.ts, show-file.ts).

type WithRev<T, K extends keyof T> = Omit<T, K> & { [P in K]?: T[P] };

async function history(repo: ZzRepo): Promise<HistoryRepo> {
  const git = requireGit(repo);
  return { gitdir: git.gitdir, catFile: git.catFile };
}

const orDefault = async (repo: ZzRepo, given: string | undefined): Promise<string> =>
  given ?? `refs/heads/${await repo.defaultBranch()}`;

/** git_log: commits reachable from `ref` (default branch), paged by cursor. */
export async function logCommits(
  repo: ZzRepo,
  args: WithRev<GitLogOptions, 'ref'>,
): Promise<GitLogResult> {
  return gitLog(await history(repo), { ...args, ref: await orDefault(repo, args.ref) });
}

/** git_diff: the files `commit` (default: the branch head) changed, with hunks. */
export async function diffCommit(
  repo: ZzRepo,
  args: WithRev<GitDiffOptions, 'commit'>,
): Promise<GitDiffResult> {
  return gitDiff(await history(repo), { ...args, commit: await orDefault(repo, args.commit) });
}

/** git_show_file: a file's content at `commit` (default: the branch head), paged by bytes. */
export async function showFile(
  repo: ZzRepo,
  args: WithRev<GitShowFileOptions, 'commit'>,
): Promise<GitShowFileResult> {
  return gitShowFile(await history(repo), {
    ...args,
    commit: await orDefault(repo, args.commit),
  });
}
