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

/** A body bounded; already redacted (itemsOf), so only the cut's backstop is left to run. */
function clip(gh: GitHubClient, s: string | null | undefined, max = MAX_BODY_CHARS): string {
  const t = (s ?? '').replace(/\r\n/g, '\n');
  return t.length <= max ? t : `${gh.redactCut(t.slice(0, max))}…`;
}

/**
 * Every string of a parsed item redacted (client.ts redactor): a server may echo the token in
 * a 200 body too (an issue or PR text, a release note quoting a curl line), and what is read
 * here is returned by gh_fetch_* and stored in rungs that sync to every remote. The items'
 * shapes nest two deep (`head.ref`, `labels[i]`); deeper values (`pull_request`, only tested
 * for presence) are left as they are, so no walk follows a hostile answer's depth.
 */
function redacted<T>(v: T, redact: (s: string) => string, depth = 0): T {
  if (typeof v === 'string') return redact(v) as T;
  if (depth >= 2 || typeof v !== 'object' || v === null) return v;
  if (Array.isArray(v)) return v.map((x) => redacted(x, redact, depth + 1)) as T;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) out[k] = redacted(x, redact, depth + 1);
  return out as T;
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

/**
 * The cursor of the page after `page` if the Link header has a next one. A next link naming
 * this page or an earlier one (a server answering rel="next" with its own URL) ends the
 * listing: followed, it paged forever (measured: 15,383 requests in 400 s).
 */
function nextCursor(headers: { link?: string | undefined }, page: number): string | null {
  const next = /<([^>]*)>\s*;\s*rel="next"/.exec(headers.link ?? '')?.[1];
  if (next === undefined || page >= MAX_PAGE) return null;
  let named = NaN;
  try {
    named = Number(new URL(next, 'http://github.invalid').searchParams.get('page') ?? NaN);
  } catch {
    // Not a URL: the page after this one, as GitHub's Link header says there is one.
  }
  if (Number.isInteger(named) && named <= page) return null;
  return pageCursor.encode(page + 1);
}

async function call<T>(gh: GitHubClient, what: string, f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    throw githubError(e, what, gh);
  }
}

// What GitHub answers is untrusted input like anything from another machine (GITHUB_API_URL
// may name any server): each item is checked here, once. A field of the wrong type falls back
// to an empty value; an item without the key it is filed under (a positive integer number, a
// login, a tag, a comment id) is left out, so one bad item neither stops a build with a
// TypeError nor reaches a rung path.
const text = z.string().catch('');

/** Whether `s` is a time as GitHub's API writes one: `2024-05-01T12:00:00Z` (UTC), a real date. */
export function isGitHubTime(s: string): boolean {
  return (
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,3})?Z$/.test(s) && !Number.isNaN(Date.parse(s))
  );
}
/**
 * A GitHub login: what GitHub allows (an app's bot with "[bot]"), so a login never adds a
 * folder to a `_people/<login>` rung path (a server's "a/b" did, found in review).
 */
export const GITHUB_LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$/;
const loginText = z.string().regex(GITHUB_LOGIN);
/** A time as GitHub's API writes it (UTC, whole seconds); anything else reads as ''. */
const time = z.string().refine(isGitHubTime).catch('');
const optText = z.string().nullable().catch(null);
const login = z
  .object({ login: loginText })
  .nullish()
  .catch(null)
  .transform((u) => u?.login ?? null);
const count = z.number().int().nonnegative().catch(0);

const rawIssue = z.object({
  number: z.number().int().positive(),
  title: text,
  state: text,
  user: login,
  labels: z
    .array(z.union([z.string(), z.object({ name: z.string().nullish() })]).catch(''))
    .catch([])
    .transform((ls) => ls.map((l) => (typeof l === 'string' ? l : (l.name ?? ''))).filter(Boolean)),
  comments: count,
  created_at: time,
  updated_at: time,
  closed_at: optText,
  body: optText,
  html_url: text,
  pull_request: z.unknown().optional(),
});
type RawIssue = z.infer<typeof rawIssue>;

const rawPull = rawIssue.extend({
  draft: z.boolean().catch(false),
  merged_at: optText,
  head: z.object({ ref: text }).catch({ ref: '' }),
  base: z.object({ ref: text }).catch({ ref: '' }),
});

const rawRelease = z.object({
  tag_name: z.string().min(1),
  name: optText,
  draft: z.boolean().catch(false),
  prerelease: z.boolean().catch(false),
  author: login,
  published_at: optText,
  body: optText,
  html_url: text,
});

const rawContributor = z.object({
  login: loginText,
  contributions: count,
  type: text,
  html_url: optText,
});

const rawComment = z.object({
  id: z.number().int().nonnegative(),
  user: login,
  created_at: time,
  updated_at: time,
  body: optText,
});

/**
 * The items of a list answer that have the shape zz reads. A 204 (an empty repository's
 * contributors) has none; any other answer that is not a JSON list is an error naming the
 * endpoint: read as an empty list, a truncated or garbled answer made a build see "nothing new".
 */
function itemsOf<T>(
  schema: z.ZodType<T>,
  res: { status: number; data: unknown },
  what: string,
  gh: GitHubClient,
): T[] {
  const data = res.data;
  if (res.status === 204) return [];
  if (!Array.isArray(data)) {
    const got =
      typeof data === 'string'
        ? `text that is not JSON (${data.length} characters)`
        : data === null
          ? 'null'
          : `a JSON ${typeof data}`;
    throw new ZzError(
      'unavailable',
      `GitHub at ${gh.baseUrl} answered ${res.status} for ${what} with ${got} where a list was expected; nothing was read from it (retry, or check GITHUB_API_URL)`,
    );
  }
  const out: T[] = [];
  for (const d of data) {
    const r = schema.safeParse(d);
    if (r.success) out.push(redacted(r.data, gh.redact));
  }
  return out;
}

const issueOut = (gh: GitHubClient, i: RawIssue): IssueOut => ({
  number: i.number,
  title: i.title,
  state: i.state,
  author: i.user,
  labels: i.labels,
  comments: i.comments,
  created_at: i.created_at,
  updated_at: i.updated_at,
  closed_at: i.closed_at,
  body: clip(gh, i.body),
  url: i.html_url,
});

/** Issues (not pull requests, which GitHub's issues list also returns), newest update first. */
export async function fetchIssues(
  gh: GitHubClient,
  r: RepoRef,
  args: PageArgs & { state?: 'open' | 'closed' | 'all'; since?: string | undefined },
): Promise<Page<IssueOut> & { pull_requests_skipped: number }> {
  const { page, per_page } = pageOf(args);
  const what = `issues of ${r.owner}/${r.repo}`;
  const res = await call(gh, what, () =>
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
  const raw = itemsOf(rawIssue, res, what, gh);
  const issues = raw.filter((i) => i.pull_request === undefined);
  return {
    items: issues.map((i) => issueOut(gh, i)),
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
  const what = `pull requests of ${r.owner}/${r.repo}`;
  const res = await call(gh, what, () =>
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
    items: itemsOf(rawPull, res, what, gh).map((p) => ({
      ...issueOut(gh, { ...p, comments: 0 }),
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
  const what = `releases of ${r.owner}/${r.repo}`;
  const res = await call(gh, what, () =>
    gh.octokit.rest.repos.listReleases({ ...r, per_page, page }),
  );
  return {
    items: itemsOf(rawRelease, res, what, gh).map((x) => ({
      tag: x.tag_name,
      name: x.name,
      draft: x.draft,
      prerelease: x.prerelease,
      author: x.author,
      published_at: x.published_at,
      body: clip(gh, x.body),
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
  const what = `contributors of ${r.owner}/${r.repo}`;
  const res = await call(gh, what, () =>
    gh.octokit.rest.repos.listContributors({ ...r, per_page, page }),
  );
  // 204 (an empty repository) has no body: no items.
  return {
    items: itemsOf(rawContributor, res, what, gh).map((c) => ({
      login: c.login,
      contributions: c.contributions,
      type: c.type,
      url: c.html_url,
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
  const what = `comments of ${r.owner}/${r.repo}#${args.number}`;
  const res = await call(gh, what, () =>
    gh.octokit.rest.issues.listComments({
      ...r,
      issue_number: args.number,
      ...(args.since ? { since: args.since } : {}),
      per_page,
      page,
    }),
  );
  return {
    items: itemsOf(rawComment, res, what, gh).map((c) => ({
      id: c.id,
      author: c.user,
      created_at: c.created_at,
      updated_at: c.updated_at,
      body: clip(gh, c.body),
    })),
    next_cursor: nextCursor(res.headers, page),
  };
}
