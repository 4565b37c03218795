import { ZzError } from '../errors.js';
import {
  createGitHub,
  fetchContributors,
  MAX_WAIT_SECONDS,
  fetchIssues,
  fetchPullRequests,
  fetchReleases,
  fetchThreadComments,
  resolveToken,
  type GitHubClient,
  type RateWait,
  type RepoRef,
} from '../github/index.js';
import { cacheDir } from '../local/index.js';
import type { ZzRepo } from './zz-repo.js';

// The gh_fetch_* use cases: which GitHub repository (the `repo` argument, else zz.repo or the
// origin URL, which is what a repository's key already is), which API (GITHUB_API_URL for
// GitHub Enterprise), which token (GH_TOKEN, GITHUB_TOKEN, `gh auth token`), one client per
// process and identity, and rate-limit waits shown as a countdown on stderr.

const REPO_RE = /^([A-Za-z0-9](?:[A-Za-z0-9-]{0,38}))\/([A-Za-z0-9._-]{1,100})$/;

export function githubRepoOf(repo: ZzRepo, explicit?: string): RepoRef {
  const key = explicit ?? repo.key;
  const m = REPO_RE.exec(key);
  if (!m || key.startsWith('local/')) {
    throw new ZzError(
      explicit ? 'invalid_argument' : 'precondition_failed',
      explicit
        ? `repo must be owner/name (got ${JSON.stringify(explicit)})`
        : `this repository (${key}) has no GitHub name: set it with \`git config zz.repo owner/name\` or add an origin remote on GitHub`,
      { field: 'repo' },
    );
  }
  return { owner: m[1]!, repo: m[2]!.replace(/\.git$/, '') };
}

/** Prints a rate-limit wait as a countdown on a terminal, one line otherwise. */
export function stderrCountdown(w: RateWait): void {
  const err = process.stderr;
  const label = `GitHub ${w.kind} rate limit: waiting`;
  if (!err.isTTY) {
    err.write(`${label} ${w.seconds} s before retrying\n`);
    return;
  }
  let left = w.seconds;
  const draw = () => err.write(`\r\x1b[2K${label} ${left} s…`);
  draw();
  const t = setInterval(() => {
    left--;
    if (left <= 0) {
      clearInterval(t);
      err.write('\r\x1b[2K');
    } else draw();
  }, 1000);
  t.unref();
}

/** ZZ_GITHUB_MAX_WAIT_S: the longest rate-limit wait a long batch job is willing to take. */
function maxWaitOf(env: NodeJS.ProcessEnv): number | undefined {
  const v = env.ZZ_GITHUB_MAX_WAIT_S?.trim();
  if (!v) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > MAX_WAIT_SECONDS)
    throw new ZzError(
      'invalid_argument',
      `ZZ_GITHUB_MAX_WAIT_S must be whole seconds from 0 to ${MAX_WAIT_SECONDS} (got ${JSON.stringify(v.slice(0, 40))})`,
    );
  return n;
}

export interface GitHubEnv {
  env?: NodeJS.ProcessEnv;
  onWait?: (w: RateWait) => void;
}

const clients = new Map<string, Promise<GitHubClient>>();

export async function githubClient(opts: GitHubEnv = {}): Promise<GitHubClient> {
  const env = opts.env ?? process.env;
  const baseUrl = env.GITHUB_API_URL?.trim() || 'https://api.github.com';
  const maxWaitSeconds = maxWaitOf(env);
  const key = `${baseUrl}\0${env.GH_TOKEN ?? ''}\0${env.GITHUB_TOKEN ?? ''}\0${env.XDG_CACHE_HOME ?? ''}\0${maxWaitSeconds ?? ''}`;
  let c = clients.get(key);
  if (!c) {
    c = resolveToken(env).then(({ token }) =>
      createGitHub({
        token,
        baseUrl,
        cacheDir: cacheDir(env),
        onWait: opts.onWait ?? stderrCountdown,
        ...(maxWaitSeconds !== undefined ? { maxWaitSeconds } : {}),
      }),
    );
    clients.set(key, c);
    c.catch(() => clients.delete(key));
  }
  return c;
}

/** A client of its own (not shared), for a long run that reports its waits its own way. */
export async function newGitHubClient(opts: GitHubEnv = {}): Promise<GitHubClient> {
  const env = opts.env ?? process.env;
  const maxWaitSeconds = maxWaitOf(env);
  const { token } = await resolveToken(env);
  return createGitHub({
    token,
    baseUrl: env.GITHUB_API_URL?.trim() || 'https://api.github.com',
    cacheDir: cacheDir(env),
    onWait: opts.onWait ?? stderrCountdown,
    ...(maxWaitSeconds !== undefined ? { maxWaitSeconds } : {}),
  });
}

type Args<F> = F extends (gh: GitHubClient, r: RepoRef, a: infer A) => unknown ? A : never;

export async function ghFetchIssues(
  repo: ZzRepo,
  args: Args<typeof fetchIssues> & { repo?: string | undefined },
  env?: GitHubEnv,
) {
  const { repo: explicit, ...rest } = args;
  return fetchIssues(await githubClient(env), githubRepoOf(repo, explicit), rest);
}

export async function ghFetchPullRequests(
  repo: ZzRepo,
  args: Args<typeof fetchPullRequests> & { repo?: string | undefined },
  env?: GitHubEnv,
) {
  const { repo: explicit, ...rest } = args;
  return fetchPullRequests(await githubClient(env), githubRepoOf(repo, explicit), rest);
}

export async function ghFetchReleases(
  repo: ZzRepo,
  args: Args<typeof fetchReleases> & { repo?: string | undefined },
  env?: GitHubEnv,
) {
  const { repo: explicit, ...rest } = args;
  return fetchReleases(await githubClient(env), githubRepoOf(repo, explicit), rest);
}

export async function ghFetchContributors(
  repo: ZzRepo,
  args: Args<typeof fetchContributors> & { repo?: string | undefined },
  env?: GitHubEnv,
) {
  const { repo: explicit, ...rest } = args;
  return fetchContributors(await githubClient(env), githubRepoOf(repo, explicit), rest);
}

export async function ghFetchThreadComments(
  repo: ZzRepo,
  args: Args<typeof fetchThreadComments> & { repo?: string | undefined },
  env?: GitHubEnv,
) {
  const { repo: explicit, ...rest } = args;
  return fetchThreadComments(await githubClient(env), githubRepoOf(repo, explicit), rest);
}
