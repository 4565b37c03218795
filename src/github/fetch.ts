import { z } from 'zod';
import { ZzError } from '../errors.js';
import { cursorCodec } from '../schema/cursor.js';
import { githubError, type GitHubClient } from './client.js';

// The five GitHub reads zz offers (gh_fetch_*), one page at a time: `per_page` up to 100 and
// an opaque cursor that is the next page (GitHub's Link header says whether there is one).
// Answers are trimmed to the fields a reader uses, with long bodies clipped, so a page is
// bounded whatever GitHub returns. Shapes are type aliases (not interfaces) so they fit the
// tools' loose output schemas.

export const MAX_PER_PAGE = 100;
export const MAX_BODY_CHARS = 4000;
const MAX_PAGE = 1000;

export interface RepoRef {
  owner: string;
  repo: string;
}

export interface PageArgs {
  per_page?: number | undefined;
  cursor?: string | undefined;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export type IssueOut = {
  number: number;
  title: string;
  state: string;
  author: string | null;
  labels: string[];
  comments: number;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  body: string;
  url: string;
};

export type PullOut = IssueOut & {
  draft: boolean;
  merged_at: string | null;
  head: string;
  base: string;
};

export type ReleaseOut = {
  tag: string;
  name: string | null;
  draft: boolean;
  prerelease: boolean;
  author: string | null;
  published_at: string | null;
  body: string;
  url: string;
};

export type ContributorOut = {
  login: string;
  contributions: number;
  type: string;
  url: string | null;
};

export type CommentOut = {
  id: number;
  author: string | null;
  created_at: string;
  updated_at: string;
  body: string;
};

function clip(s: string | null | undefined, max = MAX_BODY_CHARS): string {
  const t = (s ?? '').replace(/\r\n/g, '\n');
  return t.length <= max ? t : `${t.slice(0, max)}…`;
}

/** GitHub's own page number, wrapped so a cursor of another listing is told apart. */
const pageCursor = cursorCodec('github_page', z.number().int().min(1).max(MAX_PAGE));

function pageOf(args: PageArgs): { page: number; per_page: number } {
  const per_page = args.per_page ?? 30;
  if (!Number.isInteger(per_page) || per_page < 1 || per_page > MAX_PER_PAGE)
    throw new ZzError('invalid_argument', `per_page must be 1 to ${MAX_PER_PAGE}`, {
      field: 'per_page',
    });
  const page = args.cursor === undefined ? 1 : pageCursor.decode(args.cursor);
  return { page, per_page };
}

function nextCursor(headers: { link?: string | undefined }, page: number): string | null {
  return /\brel="next"/.test(headers.link ?? '') && page < MAX_PAGE
    ? pageCursor.encode(page + 1)
    : null;
}

async function call<T>(gh: GitHubClient, what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw githubError(e, what, gh.baseUrl);
  }
}

type Labels = ReadonlyArray<string | { name?: string | undefined }>;
const labelNames = (labels: Labels) =>
  labels.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter(Boolean);

interface RawIssue {
  number: number;
  title: string;
  state: string;
  user?: { login: string } | null;
  labels: Labels;
  comments: number;
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  body?: string | null;
  html_url: string;
  pull_request?: unknown;
}

const issueOut = (i: RawIssue): IssueOut => ({
  number: i.number,
  title: i.title,
  state: i.state,
  author: i.user?.login ?? null,
  labels: labelNames(i.labels),
  comments: i.comments,
  created_at: i.created_at,
  updated_at: i.updated_at,
  closed_at: i.closed_at,
  body: clip(i.body),
  url: i.html_url,
});

/** Issues (not pull requests, which GitHub's issues list also returns), newest update first. */
export async function fetchIssues(
  gh: GitHubClient,
  r: RepoRef,
  args: PageArgs & { state?: 'open' | 'closed' | 'all'; since?: string | undefined },
): Promise<Page<IssueOut> & { pull_requests_skipped: number }> {
  const { page, per_page } = pageOf(args);
  const res = await call(gh, `issues of ${r.owner}/${r.repo}`, () =>
    gh.octokit.rest.issues.listForRepo({
      ...r,
      state: args.state ?? 'all',
      sort: 'updated',
      direction: 'desc',
      ...(args.since ? { since: args.since } : {}),
      per_page,
      page,
    }),
  );
  const raw: RawIssue[] = res.data;
  const issues = raw.filter((i) => i.pull_request === undefined);
  return {
    items: issues.map(issueOut),
    pull_requests_skipped: raw.length - issues.length,
    next_cursor: nextCursor(res.headers, page),
  };
}

/** Pull requests, newest update first. GitHub's pulls list has no `since`: stop paging instead. */
export async function fetchPullRequests(
  gh: GitHubClient,
  r: RepoRef,
  args: PageArgs & { state?: 'open' | 'closed' | 'all' },
): Promise<Page<PullOut>> {
  const { page, per_page } = pageOf(args);
  const res = await call(gh, `pull requests of ${r.owner}/${r.repo}`, () =>
    gh.octokit.rest.pulls.list({
      ...r,
      state: args.state ?? 'all',
      sort: 'updated',
      direction: 'desc',
      per_page,
      page,
    }),
  );
  return {
    items: res.data.map((p) => ({
      ...issueOut({ ...p, comments: 0 }),
      draft: p.draft ?? false,
      merged_at: p.merged_at,
      head: p.head.ref,
      base: p.base.ref,
    })),
    next_cursor: nextCursor(res.headers, page),
  };
}

export async function fetchReleases(
  gh: GitHubClient,
  r: RepoRef,
  args: PageArgs,
): Promise<Page<ReleaseOut>> {
  const { page, per_page } = pageOf(args);
  const res = await call(gh, `releases of ${r.owner}/${r.repo}`, () =>
    gh.octokit.rest.repos.listReleases({ ...r, per_page, page }),
  );
  return {
    items: res.data.map((x) => ({
      tag: x.tag_name,
      name: x.name,
      draft: x.draft,
      prerelease: x.prerelease,
      author: x.author?.login ?? null,
      published_at: x.published_at,
      body: clip(x.body),
      url: x.html_url,
    })),
    next_cursor: nextCursor(res.headers, page),
  };
}

export async function fetchContributors(
  gh: GitHubClient,
  r: RepoRef,
  args: PageArgs,
): Promise<Page<ContributorOut>> {
  const { page, per_page } = pageOf(args);
  const res = await call(gh, `contributors of ${r.owner}/${r.repo}`, () =>
    gh.octokit.rest.repos.listContributors({ ...r, per_page, page }),
  );
  // 204 (an empty repository) has no body.
  const data = Array.isArray(res.data) ? res.data : [];
  return {
    items: data
      .filter((c) => typeof c.login === 'string')
      .map((c) => ({
        login: c.login!,
        contributions: c.contributions,
        type: c.type,
        url: c.html_url ?? null,
      })),
    next_cursor: nextCursor(res.headers, page),
  };
}

/** The comment thread of one issue or pull request (GitHub numbers them alike), oldest first. */
export async function fetchThreadComments(
  gh: GitHubClient,
  r: RepoRef,
  args: PageArgs & { number: number; since?: string | undefined },
): Promise<Page<CommentOut>> {
  const { page, per_page } = pageOf(args);
  const res = await call(gh, `comments of ${r.owner}/${r.repo}#${args.number}`, () =>
    gh.octokit.rest.issues.listComments({
      ...r,
      issue_number: args.number,
      ...(args.since ? { since: args.since } : {}),
      per_page,
      page,
    }),
  );
  return {
    items: res.data.map((c) => ({
      id: c.id,
      author: c.user?.login ?? null,
      created_at: c.created_at,
      updated_at: c.updated_at,
      body: clip(c.body),
    })),
    next_cursor: nextCursor(res.headers, page),
  };
}
