import { z } from 'zod';
import { requireCaller } from '../core/access.js';
import { actor } from '../schema/ids.js';
import { defineTool, READ, WRITE } from './define-tool.js';
import { lazyModule } from './lazy-module.js';

// The authenticity config of refs/zz/config (DESIGN §7): each actor's allowed signing keys and
// whether every op must be signed. Owners register anyone's key and turn signatures on; an actor
// may add or remove its own key (a sync then demands that op be signed by a key an owner
// registered for it). What an owner-level op needs on import is checked in authenticity.ts.

const keyLine = z
  .string()
  .min(1)
  .max(8192)
  .describe('an OpenSSH public key line, e.g. "ssh-ed25519 AAAA… you@host"');

// The use cases load with a tool's first call, not with the registry: every CLI command that
// runs a tool in-process loads the registry, and need not load all of core with it.
const keys = lazyModule(() => import('../core/sync/authenticity.js'));

export const keyTools = [
  defineTool({
    name: 'key_list',
    summary: 'The signing keys allowed per actor, and whether signatures are required',
    toolset: 'admin',
    annotations: READ,
    input: z.strictObject({
      actor: actor.optional(),
      limit: z.number().int().min(1).max(500).optional(),
      offset: z.number().int().min(0).optional(),
    }),
    output: z.strictObject({
      signatures_required: z.boolean(),
      keys: z.array(
        z.strictObject({
          actor: z.string(),
          keys: z.array(z.string()),
          owner: z.boolean(),
          refused: z
            .number()
            .optional()
            .describe(
              'key_adds for this actor refused past the per-actor limit (made elsewhere, by sync)',
            ),
        }),
      ),
      next_offset: z.number().nullable(),
    }),
    handler: async (args, ctx) => {
      requireCaller(ctx.caller);
      return (await keys()).keyList(ctx.repo, args);
    },
  }),
  defineTool({
    name: 'key_add',
    summary: "Allow a signing key for an actor (owners: anyone's; others: their own)",
    toolset: 'admin',
    annotations: { ...WRITE, idempotentHint: true },
    input: z.strictObject({ actor, key: keyLine }),
    output: z.strictObject({ revision: z.string() }),
    handler: async (args, ctx) => (await keys()).keyAdd(ctx.repo, requireCaller(ctx.caller), args),
  }),
  defineTool({
    name: 'key_remove',
    summary: "Remove an allowed signing key (owners: anyone's; others: their own)",
    toolset: 'admin',
    annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
    input: z.strictObject({ actor, key: keyLine }),
    output: z.strictObject({ removed: z.boolean(), revision: z.string() }),
    handler: async (args, ctx) => (await keys()).keyRemove(ctx.repo, ctx.caller, args),
  }),
  defineTool({
    name: 'repo_require_signatures',
    summary: 'Require every imported op to be signed by a key of its actor (owners only)',
    description:
      'With signed=true, ops fetched by zz sync whose commit is not signed by a key of their actor are quarantined; signed=false turns it off.',
    toolset: 'admin',
    annotations: { ...WRITE, destructiveHint: true, idempotentHint: true },
    input: z.strictObject({ signed: z.boolean().optional() }),
    output: z.strictObject({ signatures_required: z.boolean(), revision: z.string() }),
    handler: async (args, ctx) => {
      const signed = args.signed ?? true;
      const r = await (await keys()).requireSignatures(ctx.repo, requireCaller(ctx.caller), signed);
      return { signatures_required: signed, revision: r.revision };
    },
  }),
];
