import { z } from 'zod';
import { defineTool, READ, type ToolAnnotations } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// gh_fetch_*: GitHub issues, pull requests, releases, contributors and comment threads, read
// with the user's own GitHub token on their machine (DESIGN §6). Local only, like
// run_in_sandbox: the daemon refuses them, so a server never holds or spends anyone's GitHub
// token. The use cases are core/github.ts, loaded on first call (octokit is not small).

const GH: ToolAnnotations = { ...READ, openWorldHint: true };

const core = lazyModule(() => import('../core/github.js'));

// Paged like every read; outputs list their key fields only (items carry more, see
// src/github/fetch.ts) to keep the MCP tool list small.
const page = {
  repo: z.string().min(3).max(140).optional().describe('owner/name (default: this repo)'),
  per_page: z.number().int().min(1).max(100).optional(),
  cursor: z.string().max(64).optional(),
};
// A plain pattern: zod's datetime() becomes a 500-byte regular expression in every tool list.
const since = z
  .string()
  .regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)$/)
  .optional()
  .describe('ISO time: updated since');
const state = z.enum(['open', 'closed', 'all']).optional();
const items = (shape: z.ZodRawShape) => ({
  items: z.array(z.looseObject(shape)),
  next_cursor: z.string().nullable(),
});
const numbered = { number: z.number().int(), title: z.string() };

export const githubTools = [
  defineTool({
    name: 'gh_fetch_issues',
    summary: 'GitHub issues (not pull requests), newest update first',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject({ ...page, state, since }),
    output: z.strictObject({ ...items(numbered), pull_requests_skipped: z.number().int() }),
    handler: async (args, ctx) => (await core()).ghFetchIssues(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_pull_requests',
    summary: 'GitHub pull requests, newest update first',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject({ ...page, state }),
    output: z.strictObject(items(numbered)),
    handler: async (args, ctx) => (await core()).ghFetchPullRequests(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_releases',
    summary: 'GitHub releases with their notes, newest first',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject(page),
    output: z.strictObject(items({ tag: z.string(), body: z.string() })),
    handler: async (args, ctx) => (await core()).ghFetchReleases(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_contributors',
    summary: 'GitHub contributors by commit count',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject(page),
    output: z.strictObject(items({ login: z.string(), contributions: z.number().int() })),
    handler: async (args, ctx) => (await core()).ghFetchContributors(ctx.repo, args),
  }),
  defineTool({
    name: 'gh_fetch_thread_comments',
    summary: 'Comments on one GitHub issue or pull request, oldest first',
    toolset: 'local',
    local: true,
    annotations: GH,
    input: z.strictObject({
      ...page,
      number: z.number().int().min(1),
      since,
    }),
    output: z.strictObject(items({ author: z.string().nullable(), body: z.string() })),
    handler: async (args, ctx) => (await core()).ghFetchThreadComments(ctx.repo, args),
  }),
];
