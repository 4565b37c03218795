import { z } from 'zod';
import { defineTool, READ, type ToolAnnotations } from './define-tool.js';

// gh_fetch_*: GitHub issues, pull requests, releases, contributors and comment threads, read
// with the user's own GitHub token on their machine (DESIGN §6). Local only, like
// run_in_sandbox: the daemon refuses them, so a server never holds or spends anyone's GitHub
// token. The use cases are core/github.ts, loaded on first call (octokit is not small).

const GH: ToolAnnotations = { ...READ, openWorldHint: true };

const core = () => import('../core/github.js');

const page = {
  repo: z
    .string()
    .min(3)
    .max(140)
    .optional()
    .describe('owner/name on GitHub (default: zz.repo or the origin remote)'),
  per_page: z.number().int().min(1).max(100).optional().describe('Default 30'),
  cursor: z.string().max(8).optional().describe('next_cursor of the previous page'),
};
const since = z
  .string()
  .datetime({ offset: true })
  .optional()
  .describe('Only items updated at or after this ISO 8601 time (incremental fetches)');
const state = z.enum(['open', 'closed', 'all']).optional().describe('Default all');

const issueOut = z.looseObject({
  number: z.number().int(),
  title: z.string(),
  state: z.string(),
  author: z.string().nullable(),
  labels: z.array(z.string()),
  comments: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
  closed_at: z.string().nullable(),
  body: z.string(),
  url: z.string(),
});
const next = { next_cursor: z.string().nullable() };

export const githubTools = [
  defineTool({
    name: 'gh_fetch_issues',
    summary: 'GitHub issues of this repository, newest update first (local only)',
    description:
      'Pull requests are left out (see gh_fetch_pull_requests). Pass since for what changed; page with cursor.',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject({ ...page, state, since }),
    output: z.strictObject({
      items: z.array(issueOut),
      pull_requests_skipped: z.number().int(),
      ...next,
    }),
    handler: async (args, ctx) => (await core()).ghFetchIssues(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_pull_requests',
    summary: 'GitHub pull requests of this repository, newest update first (local only)',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject({ ...page, state }),
    output: z.strictObject({
      items: z.array(
        issueOut.extend({
          draft: z.boolean(),
          merged_at: z.string().nullable(),
          head: z.string(),
          base: z.string(),
        }),
      ),
      ...next,
    }),
    handler: async (args, ctx) => (await core()).ghFetchPullRequests(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_releases',
    summary: 'GitHub releases of this repository with their notes, newest first (local only)',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject(page),
    output: z.strictObject({
      items: z.array(
        z.looseObject({
          tag: z.string(),
          name: z.string().nullable(),
          draft: z.boolean(),
          prerelease: z.boolean(),
          author: z.string().nullable(),
          published_at: z.string().nullable(),
          body: z.string(),
          url: z.string(),
        }),
      ),
      ...next,
    }),
    handler: async (args, ctx) => (await core()).ghFetchReleases(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_contributors',
    summary: 'GitHub contributors of this repository by commit count (local only)',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject(page),
    output: z.strictObject({
      items: z.array(
        z.looseObject({
          login: z.string(),
          contributions: z.number().int(),
          type: z.string(),
          url: z.string().nullable(),
        }),
      ),
      ...next,
    }),
    handler: async (args, ctx) => (await core()).ghFetchContributors(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_thread_comments',
    summary: 'The comment thread of one GitHub issue or pull request, oldest first (local only)',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject({
      ...page,
      number: z.number().int().min(1).describe('Issue or pull request number'),
      since,
    }),
    output: z.strictObject({
      items: z.array(
        z.looseObject({
          id: z.number().int(),
          author: z.string().nullable(),
          created_at: z.string(),
          updated_at: z.string(),
          body: z.string(),
        }),
      ),
      ...next,
    }),
    handler: async (args, ctx) => (await core()).ghFetchThreadComments(ctx.repo, args),
  }),
];
