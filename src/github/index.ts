// GitHub, read only: one octokit client (throttling, retry, ETag cache) and the five paged
// reads behind the gh_fetch_* tools and `zz ladder build --github`. Octokit stays in here;
// it knows nothing of lanes, asks, rungs or the front ends (core decides what to fetch).
export {
  createGitHub,
  DEFAULT_MAX_WAIT_SECONDS,
  githubError,
  MAX_WAIT_SECONDS,
  type GitHubClient,
  type GitHubOptions,
  type RateWait,
} from './client.js';
export * from './fetch.js';
export { resolveToken, type ResolvedToken } from './token.js';
