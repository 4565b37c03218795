import {
  fetchContributors,
  fetchIssues,
  fetchPullRequests,
  fetchReleases,
  fetchThreadComments,
  isGitHubTime,
  type CommentOut,
  type GitHubClient,
  type IssueOut,
  type PullOut,
  type RepoRef,
  MAX_PER_PAGE,
} from '../../github/index.js';
import { RUNG_PATH_PREFIX } from '../../schema/rung.js';
import { EXTRACTIVE, type BuildContext } from './build-context.js';
import { clip, firstSentences, plainInline } from './extract/text.js';
import type { Extract } from './extract/types.js';
import { rungPlacementProblem } from './ladder-state.js';

// The GitHub phase of `zz ladder build --github` (DESIGN §6): issues as `_issues/<n>`, pull
// requests as `_pulls/<n>` (never also an issue rung: GitHub's issues list carries them too),
// each with its comment thread summarised; `_releases/<tag>` rungs enriched with the release
// notes; contributors as `_people/<login>`. Incremental three ways: issues are asked `since`
// the newest update already in the Ladder, every page is a conditional request (an unchanged
// page is a free 304 from the ETag cache), and a rung whose inputs (its updated_at, the
// thread it read) are unchanged is kept as it is, so nothing changed → no commit.

/** Items per kind read in one build; older ones keep their rungs until they change. */
export const DEFAULT_GITHUB_LIMIT = 300;
/** Comment threads read per build; the rest are summarised without and read next time. */
const MAX_THREADS = 60;
const MAX_DETAIL = 32 * 1024;
const UPDATED = /^Updated (\S+)$/m;

export interface GitHubPhaseOptions {
  client: GitHubClient;
  repo: RepoRef;
  limit?: number;
  /** Items asked per page (default and most GitHub allows: 100). */
  perPage?: number;
}

function prose(body: string, max = 220): string {
  const text = plainInline(
    body
      .replace(/<!--[\s\S]*?-->/g, ' ')
      .replace(/```[\s\S]*?```/g, ' ')
      .replace(/^#+\s.*$/gm, ' ')
      .replace(/^\s*[-*]\s+\[[ x]\]\s*/gim, ''),
  );
  return firstSentences(text.replace(/\s+/g, ' ').trim(), max);
}

function threadLine(comments: readonly CommentOut[]): string | null {
  if (comments.length === 0) return null;
  const people = [...new Set(comments.map((c) => c.author).filter((a): a is string => !!a))];
  const last = comments[comments.length - 1]!;
  const lastSaid = prose(last.body, 160);
  return `${comments.length} comment${comments.length === 1 ? '' : 's'} by ${people.slice(0, 4).join(', ') || 'unknown'}${lastSaid ? `; latest (${last.author ?? 'unknown'}): ${lastSaid}` : ''}.`;
}

function threadDetail(comments: readonly CommentOut[]): string {
  return comments
    .map((c) => `--- ${c.author ?? 'unknown'} at ${c.created_at}\n${c.body.trim()}`)
    .join('\n\n');
}

function issueExtract(i: IssueOut, thread: readonly CommentOut[] | null): Extract {
  const labels = i.labels.length ? ` (${i.labels.join(', ')})` : '';
  const what = `${i.state === 'open' ? 'Open' : 'Closed'} issue by ${i.author ?? 'unknown'}${labels}.`;
  const body = prose(i.body);
  return {
    title: clip(`#${i.number} ${i.title}`, 200),
    summary: [what, body, thread ? threadLine(thread) : null].filter(Boolean).join(' '),
    symbols: i.labels.slice(0, 20),
  };
}

function pullExtract(p: PullOut, thread: readonly CommentOut[] | null): Extract {
  const state = p.merged_at
    ? 'Merged'
    : p.state === 'open'
      ? p.draft
        ? 'Draft'
        : 'Open'
      : 'Closed';
  const what = `${state} pull request by ${p.author ?? 'unknown'} from ${p.head} into ${p.base}.`;
  return {
    title: clip(`#${p.number} ${p.title}`, 200),
    summary: [what, prose(p.body), thread ? threadLine(thread) : null].filter(Boolean).join(' '),
    symbols: [...p.labels.slice(0, 20), p.head].filter(Boolean),
  };
}

/**
 * The items of a listing, page by page, up to `limit`. Anything from another machine is
 * untrusted, and a server may answer rel="next" forever: paging also stops at a page with no
 * item zz could read (an issues page of pull requests only still counts: it had items), and
 * after ceil(limit / perPage) + 1 pages whatever the pages held. An issues listing may so
 * read fewer than `limit` issues (pull requests share its pages); older ones keep their rungs.
 */
async function pages<T>(
  limit: number,
  perPage: number,
  read: (
    cursor: string | undefined,
  ) => Promise<{ items: T[]; next_cursor: string | null; pull_requests_skipped?: number }>,
  stop?: (items: T[]) => boolean,
): Promise<T[]> {
  const out: T[] = [];
  const maxPages = Math.ceil(limit / perPage) + 1;
  let cursor: string | undefined;
  for (let n = 0; n < maxPages; n++) {
    const page = await read(cursor);
    out.push(...page.items);
    if (page.items.length + (page.pull_requests_skipped ?? 0) === 0) break;
    if (stop?.(page.items) || page.next_cursor === null || out.length >= limit) break;
    cursor = page.next_cursor;
  }
  return out.slice(0, limit);
}

/** Adds the GitHub rungs to ctx.desired (and enriches release rungs already there). */
export async function githubRungs(ctx: BuildContext, opts: GitHubPhaseOptions): Promise<void> {
  const { client: gh, repo: r } = opts;
  const limit = opts.limit ?? DEFAULT_GITHUB_LIMIT;
  const perPage = Math.min(Math.max(1, Math.floor(opts.perPage ?? MAX_PER_PAGE)), MAX_PER_PAGE);
  const progress = (done: number, total: number, note?: string) =>
    ctx.progress({ phase: 'github', done, total, ...(note ? { note } : {}) });
  progress(0, 4, 'issues');

  // Newest update already in the Ladder: only issues updated since are asked for.
  // Hazard: rungs sync from other machines. One rung saying "Updated 9999-12-31T00:00:00Z"
  // made every later build ask since=9999-… and import nothing, reporting success (found in
  // review). Only what this build's own writer puts there counts (an extractive issue or pull
  // request rung: the tools write no such rung), only as GitHub writes it, and never later
  // than now.
  const now = Date.now();
  let since: string | undefined;
  let threads = 0;
  for (const rung of ctx.prev.values()) {
    if (rung.kind !== 'issue' && rung.kind !== 'pull_request') continue;
    if (rung.generator.method !== EXTRACTIVE.method) continue;
    const u = UPDATED.exec(rung.detail ?? '')?.[1];
    if (u && isGitHubTime(u) && Date.parse(u) <= now && (!since || u > since)) since = u;
  }
  // Every previous GitHub rung stands unless rewritten below.
  for (const rung of ctx.prev.values()) {
    if (rung.kind === 'issue' || rung.kind === 'pull_request' || rung.kind === 'contributor') {
      ctx.desired.set(rung.path, ctx.recordOf(rung));
    }
  }

  const readThread = async (n: number, count: number | null) => {
    if (count === 0 || threads >= MAX_THREADS) return null;
    threads++;
    return pages(100, perPage, (cursor) =>
      fetchThreadComments(gh, r, { number: n, per_page: perPage, ...(cursor ? { cursor } : {}) }),
    );
  };

  const issues = await pages(limit, perPage, (cursor) =>
    fetchIssues(gh, r, {
      per_page: perPage,
      state: 'all',
      ...(since ? { since } : {}),
      ...(cursor ? { cursor } : {}),
    }),
  );
  for (const i of issues) {
    const path = `${RUNG_PATH_PREFIX.issue}${i.number}`;
    const prev = ctx.prev.get(path);
    const base = ctx.inputsBy(EXTRACTIVE, 'issue', i.number, i.updated_at, i.comments);
    if (prev && prev.inputs_hash === ctx.inputsBy(EXTRACTIVE, base, true)) continue;
    const thread = await readThread(i.number, i.comments);
    const e = { ...issueExtract(i, thread), generator: EXTRACTIVE };
    const detail = `Updated ${i.updated_at}\n${i.url}\n\n${i.body}\n\n${thread ? threadDetail(thread) : ''}`;
    const rec = ctx.makeRecord(
      path,
      'issue',
      e,
      [base, thread !== null || i.comments === 0],
      undefined,
      detail.slice(0, MAX_DETAIL),
    );
    if (rec) ctx.desired.set(path, rec);
  }
  progress(1, 4, 'pull requests');

  // The pulls list has no `since`: pages come newest update first, so stop at an old one.
  const pulls = await pages(
    limit,
    perPage,
    (cursor) =>
      fetchPullRequests(gh, r, { per_page: perPage, state: 'all', ...(cursor ? { cursor } : {}) }),
    (items) => since !== undefined && items.some((p) => p.updated_at < since!),
  );
  for (const p of pulls) {
    if (since !== undefined && p.updated_at < since) continue;
    const path = `${RUNG_PATH_PREFIX.pull_request}${p.number}`;
    // A pull request is never also an issue rung (an older build may have written one).
    ctx.desired.delete(`${RUNG_PATH_PREFIX.issue}${p.number}`);
    if (ctx.prev.has(`${RUNG_PATH_PREFIX.issue}${p.number}`))
      ctx.obsolete.add(`${RUNG_PATH_PREFIX.issue}${p.number}`);
    const prev = ctx.prev.get(path);
    const base = ctx.inputsBy(EXTRACTIVE, 'pull_request', p.number, p.updated_at);
    if (prev && prev.inputs_hash === ctx.inputsBy(EXTRACTIVE, base, true)) continue;
    const thread = await readThread(p.number, null);
    const e = { ...pullExtract(p, thread), generator: EXTRACTIVE };
    const detail = `Updated ${p.updated_at}\n${p.url}\n\n${p.body}\n\n${thread ? threadDetail(thread) : ''}`;
    const rec = ctx.makeRecord(
      path,
      'pull_request',
      e,
      [base, thread !== null],
      undefined,
      detail.slice(0, MAX_DETAIL),
    );
    if (rec) ctx.desired.set(path, rec);
  }
  progress(2, 4, 'releases');

  // Release notes enrich the tag's rung (written by the history phase from git).
  const releases = await pages(limit, perPage, (cursor) =>
    fetchReleases(gh, r, { per_page: perPage, ...(cursor ? { cursor } : {}) }),
  );
  for (const rel of releases) {
    if (rel.draft || !rel.body.trim()) continue;
    const path = `${RUNG_PATH_PREFIX.release}${rel.tag}`;
    const rec = ctx.desired.get(path);
    if (!rec || rec.kind !== 'release' || rungPlacementProblem(path, 'release') !== null) continue;
    const notes = prose(rel.body, 300);
    const parts = [rec.inputs_hash, 'github-release', rel.published_at, rel.body];
    const kept = ctx.prev.get(path);
    if (kept && kept.inputs_hash === ctx.inputsBy(EXTRACTIVE, ...parts)) {
      ctx.desired.set(path, ctx.recordOf(kept));
      continue;
    }
    const e: Extract = {
      title: rel.name ? clip(rel.name, 200) : rec.title,
      summary: `${rec.summary.replace(/\s*Release notes:.*$/s, '')}${notes ? ` Release notes: ${notes}` : ''}`,
      symbols: rec.symbols ?? [],
      generator: EXTRACTIVE,
    };
    const detail = `${rel.url}\n\n${rel.body}\n\n${rec.detail ?? ''}`.slice(0, MAX_DETAIL);
    const enriched = ctx.makeRecord(path, 'release', e, parts, rec.anchor, detail);
    if (enriched) ctx.desired.set(path, enriched);
  }
  progress(3, 4, 'contributors');

  const people = await pages(limit, perPage, (cursor) =>
    fetchContributors(gh, r, { per_page: perPage, ...(cursor ? { cursor } : {}) }),
  );
  // Who opened what, from every issue and pull request rung the Ladder will hold (kept ones
  // too), so a person's rung does not change just because this build read fewer items.
  const opened = new Map<string, { issues: number[]; pulls: number[] }>();
  for (const rec of ctx.desired.values()) {
    if (rec.kind !== 'issue' && rec.kind !== 'pull_request') continue;
    const who = /\b(?:issue|pull request) by ([\w-]+(?:\[bot\])?)/.exec(rec.summary)?.[1];
    const n = Number(/\/(\d+)$/.exec(rec.path)?.[1]);
    if (!who || !Number.isInteger(n)) continue;
    let o = opened.get(who);
    if (!o) opened.set(who, (o = { issues: [], pulls: [] }));
    (rec.kind === 'issue' ? o.issues : o.pulls).push(n);
  }
  for (const o of opened.values()) {
    o.issues.sort((a, b) => b - a);
    o.pulls.sort((a, b) => b - a);
  }
  for (const c of people) {
    const path = `${RUNG_PATH_PREFIX.contributor}${c.login}`;
    if (rungPlacementProblem(path, 'contributor') !== null) continue;
    const o = opened.get(c.login);
    const list = (xs: number[]) =>
      xs
        .slice(0, 8)
        .map((n) => `#${n}`)
        .join(', ');
    const parts = [
      `${c.login}${c.type === 'Bot' ? ' (bot)' : ''}: ${c.contributions} commit${c.contributions === 1 ? '' : 's'} to ${r.owner}/${r.repo}.`,
      o?.issues.length ? `Opened issues ${list(o.issues)}.` : null,
      o?.pulls.length ? `Opened pull requests ${list(o.pulls)}.` : null,
    ];
    const inputs = ['contributor', c.login, c.contributions, o?.issues ?? [], o?.pulls ?? []];
    const kept = ctx.prev.get(path);
    if (kept && kept.inputs_hash === ctx.inputsBy(EXTRACTIVE, ...inputs)) continue;
    const rec = ctx.makeRecord(
      path,
      'contributor',
      {
        title: c.login,
        summary: parts.filter(Boolean).join(' '),
        symbols: [c.login],
        generator: EXTRACTIVE,
      },
      inputs,
      undefined,
      c.url ?? undefined,
    );
    if (rec) ctx.desired.set(path, rec);
  }
  progress(4, 4);
}
