import { z } from 'zod';
import { repoState, roleGrant } from '../core/index.js';
import { actor } from '../schema/ids.js';
import { corruptOut, writeMetaOut } from '../schema/views.js';
import { writeArgs } from './common-args.js';
import { defineTool, READ, WRITE, type ToolContext } from './define-tool.js';

export const adminTools = [
  defineTool({
    name: 'repo_state',
    summary:
      'Discovery: the repository, your actor and roles, what you can call, Lanes with counts',
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
        coordinator_of: z.array(z.string()),
        maintainer_of: z.array(z.string()),
      }),
      lanes: z.array(
        z.looseObject({
          lane_id: z.string(),
          title: z.string(),
          counts: z.record(z.string(), z.number()),
        }),
      ),
      corrupt: z
        .array(corruptOut)
        .describe('Entities that cannot be read, by ref; everything else reads normally'),
      repos: z.array(z.string()),
    }),
    handler: async (_args, ctx: ToolContext) => ({
      ...(await repoState(ctx.repo, ctx.caller)),
      repos: ctx.services?.repos ? [...ctx.services.repos.keys()] : [ctx.repo.key],
    }),
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
    handler: (args, ctx) => roleGrant(ctx.repo, ctx.caller, args),
  }),
];
