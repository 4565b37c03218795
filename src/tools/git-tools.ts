import { z } from 'zod';
import { defineTool, READ } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// Reads of the user's history (DESIGN §3, git toolset): commits, diffs, files. The use cases
// are core/git-reads.ts; a revision left out means the default branch.

const rev = z.string().min(1).max(1024);
const path = z.string().min(1).max(4096);

const signature = z.strictObject({
  name: z.string(),
  email: z.string(),
  time: z.number().int().describe('Unix seconds'),
  timezone: z.string(),
});

// The use cases load with a tool's first call, not with the registry: every CLI command that
// runs a tool in-process loads the registry, and need not load all of core with it.
const reads = lazyModule(() => import('../core/git-reads.js'));

export const gitTools = [
  defineTool({
    name: 'git_log',
    summary:
      'Commits on the default branch (or ref), oldest or newest first; path and since filters; pages with cursor',
    description:
      'Pass back next_cursor to continue; a cursor keeps paging the history it began on.',
    toolset: 'git',
    annotations: READ,
    input: z.strictObject({
      ref: rev.optional().describe('Branch, tag or commit (default: the default branch)'),
      path: path.optional().describe('Only commits that changed this file or directory'),
      limit: z.number().int().min(1).max(500).optional().describe('Default 100'),
      cursor: z.string().max(16_384).optional(),
      order: z
        .enum(['default', 'topo', 'date'])
        .optional()
        .describe(
          "git's walk order: default (by date), topo or date (parents never before children)",
        ),
      direction: z
        .enum(['oldest', 'newest'])
        .optional()
        .describe(
          'oldest first (the default; the reverse of git log) or newest first, as git log lists',
        ),
      since: z
        .union([z.number().int().min(0), z.string().max(64)])
        .optional()
        .describe('Only commits committed at or after this: Unix seconds or an ISO 8601 date'),
    }),
    output: z.strictObject({
      commits: z.array(
        z.strictObject({
          oid: z.string(),
          parents: z.array(z.string()),
          author: signature,
          committer: signature,
          message: z.string(),
        }),
      ),
      next_cursor: z.string().nullable(),
    }),
    handler: async (args, ctx) => (await reads()).logCommits(ctx.repo, args),
  }),
  defineTool({
    name: 'git_diff',
    summary: 'The files a commit changed (vs its first parent, or base), with hunks per file',
    toolset: 'git',
    annotations: READ,
    input: z.strictObject({
      commit: rev.optional().describe('Default: the head of the default branch'),
      base: rev.optional(),
      paths: z.array(path).max(1000).optional(),
      context_lines: z.number().int().min(0).max(100).optional().describe('Default 3'),
      max_bytes: z
        .number()
        .int()
        .min(1)
        .max(64 * 1024 * 1024)
        .optional(),
    }),
    output: z.strictObject({
      commit: z.string(),
      base: z.string().nullable(),
      files: z.array(
        z.strictObject({
          path: z.string(),
          old_path: z.string().nullable(),
          status: z.enum(['added', 'modified', 'deleted', 'renamed', 'copied', 'type_changed']),
          binary: z.boolean(),
          old_mode: z.string().nullable(),
          new_mode: z.string().nullable(),
          hunks: z.array(
            z.strictObject({
              old_start: z.number().int(),
              old_lines: z.number().int(),
              new_start: z.number().int(),
              new_lines: z.number().int(),
              lines: z.array(z.string()),
            }),
          ),
          truncated: z.boolean(),
        }),
      ),
      truncated: z.boolean(),
    }),
    handler: async (args, ctx) => (await reads()).diffCommit(ctx.repo, args),
  }),
  defineTool({
    name: 'git_show_file',
    summary: "A file's content at a commit, paged by byte offset; binary comes as base64",
    toolset: 'git',
    annotations: READ,
    input: z.strictObject({
      path,
      commit: rev.optional().describe('Default: the head of the default branch'),
      offset: z.number().int().min(0).optional(),
      limit: z
        .number()
        .int()
        .min(1)
        .max(16 * 1024 * 1024)
        .optional()
        .describe('Bytes; default 1 MiB'),
    }),
    output: z.strictObject({
      commit: z.string(),
      path: z.string(),
      content: z.string(),
      encoding: z.enum(['utf8', 'base64']),
      size: z.number().int(),
      offset: z.number().int(),
      next_offset: z.number().int().nullable(),
    }),
    handler: async (args, ctx) =>
      (await reads()).showFile(ctx.repo, { ...args, signal: ctx.signal }),
  }),
];
