import { z } from 'zod';
import { actor } from '../schema/ids.js';
import { PAGE } from '../schema/limits.js';
import { corruptOut, writeMetaOut } from '../schema/views.js';
import { writeArgs } from './common-args.js';
import { defineTool, READ, WRITE, type ToolContext } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// The use cases load with a tool's first call, not with the registry: every CLI command that
// runs a tool in-process loads the registry, and need not load all of core with it.
const admin = lazyModule(() => import('../core/admin.js'));
const access = lazyModule(() => import('../core/repo-access.js'));

export const adminTools = [
  defineTool({
    name: 'repo_state',
    summary: `Discovery: the repository, your actor and roles, the first ${PAGE.defaultLimit} Lanes with counts`,
    description: 'lanes_next_cursor is a lane_list cursor for the rest.',
    toolset: 'admin',
    annotations: READ,
    input: z.strictObject({}),
    output: z.looseObject({
      repo: z.string(),
      actor: z.string().nullable(),
      initialised: z.boolean(),
      visibility: z.enum(['private', 'public']).nullable(),
      default_branch: z.string(),
      roles: z.looseObject({
        owner: z.boolean(),
        coordinator_of: z.array(z.string()).describe(`The first ${PAGE.defaultLimit}, by id`),
        coordinator_of_more: z.number(),
        maintainer_of: z.array(z.string()).describe(`The first ${PAGE.defaultLimit}, by id`),
        maintainer_of_more: z.number(),
      }),
      lanes: z.array(
        z.looseObject({
          lane_id: z.string(),
          title: z.string(),
          counts: z.record(z.string(), z.number()),
        }),
      ),
      lanes_total: z.number().describe('How many Lanes there are'),
      lanes_next_cursor: z
        .string()
        .nullable()
        .describe('Pass to lane_list as cursor for the Lanes after these'),
      corrupt: z
        .array(corruptOut)
        .describe('Entities that cannot be read, by ref; everything else reads normally'),
      corrupt_more: z.number().describe('How many more cannot be read'),
      repos: z.array(z.string()),
    }),
    handler: async (_args, ctx: ToolContext) => {
      const repos = ctx.services?.repos;
      const reader = ctx.caller ? { actor: ctx.caller.actor, repo: ctx.repo.key } : null;
      return {
        ...(await (await admin()).repoState(ctx.repo, ctx.caller)),
        // Those the caller may read (core/repo-access.ts), as /api/repos: the daemon's
        // list named every private repository it serves to any caller of any repository.
        repos: repos
          ? await (await access()).readableRepos(repos, reader, ctx.services?.tokensFor)
          : [ctx.repo.key],
      };
    },
  }),
  defineTool({
    name: 'role_grant',
    summary: 'Add or remove a repository owner (owners only)',
    toolset: 'admin',
    annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
    input: z.strictObject({
      grantee: actor,
      role: z.literal('owner'),
      revoke: z.boolean().optional(),
      ...writeArgs,
    }),
    output: z.strictObject({ owners: z.array(z.string()), ...writeMetaOut }),
    handler: async (args, ctx) => (await admin()).roleGrant(ctx.repo, ctx.caller, args),
  }),
];
