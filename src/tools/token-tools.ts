import { z } from 'zod';
import { tokenList, tokenRevoke } from '../core/token-admin.js';
import type { TokenStore } from '../core/token-store.js';
import { ZzError } from '../errors.js';
import { actor } from '../schema/ids.js';
import { defineTool, READ, WRITE, type ToolContext } from './define-tool.js';

// Tokens are per machine (never on refs), so these tools work only where the front end hands
// over the repository's token store (the daemon does); elsewhere they say so.

function storeOf(ctx: ToolContext): TokenStore {
  const store = ctx.services?.tokensFor?.(ctx.repo.key);
  if (!store)
    throw new ZzError('unavailable', 'token tools are served by the zz daemon (`zz serve`) only');
  return store;
}

const tokenOut = z.object({
  actor: z.string(),
  name: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  active: z.boolean().describe('used within the last 15 minutes'),
});

export const tokenTools = [
  defineTool({
    name: 'token_list',
    summary:
      'Tokens on this machine: actor, name, created, last used (owners see all, others their own)',
    toolset: 'admin',
    annotations: READ,
    input: z.strictObject({}),
    output: z.strictObject({ tokens: z.array(tokenOut), all: z.boolean() }),
    handler: (_args, ctx) => tokenList(ctx.repo, ctx.caller, storeOf(ctx)),
  }),
  defineTool({
    name: 'token_revoke',
    summary: "Revoke an actor's tokens, or one by name (owners only)",
    toolset: 'admin',
    annotations: { ...WRITE, destructiveHint: true },
    input: z.strictObject({
      actor,
      name: z.string().min(1).max(64).optional().describe('Only the token with this name'),
    }),
    output: z.strictObject({ revoked: z.number().int() }),
    handler: (args, ctx) => tokenRevoke(ctx.repo, ctx.caller, storeOf(ctx), args),
  }),
];
