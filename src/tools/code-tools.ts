import { z } from 'zod';
import { SANDBOX_TIMEOUT_MAX_MS } from '../git/sandbox.js';
import { askId, changesetId, laneId, revision } from '../schema/ids.js';
import { longText } from '../schema/ops.js';
import { askOut, writeMetaOut } from '../schema/views.js';
import { changesetInput } from './ask-tools.js';
import { createArgs } from './common-args.js';
import { defineTool, WRITE } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// The code toolset: commit_changeset, the only tool that writes the user's code; and
// run_in_sandbox, which runs a command against a commit on the agent's machine (local only).

// The use cases load with a tool's first call, not with the registry: every CLI command that
// runs a tool in-process loads the registry, and need not load all of core with it.
const changesets = lazyModule(() => import('../core/changesets.js'));
const sandbox = lazyModule(() => import('../core/changesets-sandbox.js'));

export const codeTools = [
  defineTool({
    name: 'commit_changeset',
    summary: 'Land a changeset (or files) on the default branch; rooted coordinators of the Lane',
    description:
      'Pass changeset_id (merged onto a moved branch when clean; a conflict is a 409 that posts a resolve_conflict Ask), or message + files + expected_head. By id: reviewed by an owner or rooted maintainer.',
    toolset: 'code',
    annotations: WRITE,
    input: z.strictObject({
      lane_id: laneId,
      ask_id: askId.describe('The submit_changeset or resolve_conflict Ask being worked'),
      changeset_id: changesetId.optional(),
      message: longText(z.string().min(1).max(20_000)).optional(),
      files: changesetInput.shape.files.optional(),
      expected_head: revision
        .optional()
        .describe('Branch head the change is based on; 409 if the branch is elsewhere'),
      ...createArgs,
    }),
    output: z.strictObject({
      commit: z.string(),
      branch: z.string(),
      merged: z.boolean(),
      fast_forward: z.boolean(),
      previous_head: z.string(),
      changeset_id: z.string().nullable(),
      worktree_updated: z.boolean(),
      ask: askOut,
      ...writeMetaOut,
    }),
    handler: async (args, ctx) => (await changesets()).commitChangeset(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'run_in_sandbox',
    summary: 'Run a command in a throwaway checkout of a commit or changeset (local only)',
    toolset: 'local',
    local: true,
    annotations: { ...WRITE, openWorldHint: true },
    input: z.strictObject({
      commit: z.string().min(1).max(1024).optional().describe('A commit (or branch, tag)'),
      changeset_id: changesetId.optional(),
      command: z
        .array(z.string().max(64 * 1024))
        .min(1)
        .max(1000)
        .describe('argv, run without a shell'),
      timeout_ms: z
        .number()
        .int()
        .min(1)
        .max(SANDBOX_TIMEOUT_MAX_MS)
        .optional()
        .describe('Default 120000'),
      max_output_bytes: z
        .number()
        .int()
        .min(1)
        .max(16 * 1024 * 1024)
        .optional(),
      env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).optional(),
      actor: createArgs.actor,
    }),
    output: z.strictObject({
      commit: z.string(),
      changeset_id: z.string().nullable(),
      exit_code: z.number().int().nullable(),
      signal: z.string().nullable(),
      timed_out: z.boolean(),
      stdout: z.string(),
      stderr: z.string(),
      stdout_truncated: z.boolean(),
      stderr_truncated: z.boolean(),
      duration_ms: z.number(),
      isolation: z.enum(['pid-namespace', 'process-group']),
    }),
    handler: async (args, ctx) =>
      (await sandbox()).sandboxRun(ctx.repo, ctx.caller, args, ctx.signal),
  }),
];
