import { z } from 'zod';
import { actor } from './ids.js';
import { askKind, scope } from './lane.js';
import { STORED_LIMITS } from './limits.js';
import { noOut, opParser, opSchema } from './ops.js';

// The ops of refs/zz/config.

const visibility = z.enum(['private', 'public']);

export const repoInitOp = opSchema(
  'repo_init',
  {
    owners: z.array(actor).min(1).max(STORED_LIMITS.list),
    visibility: visibility.optional(),
    default_branch: z.string().min(1).max(255),
    ask_kinds: z.record(askKind, scope).optional(),
  },
  noOut,
);

export const roleGrantOp = opSchema(
  'role_grant',
  { grantee: actor, role: z.literal('owner').optional(), revoke: z.boolean().optional() },
  noOut,
);

export const repoSetVisibilityOp = opSchema('repo_set_visibility', { visibility }, noOut);

export const configOp = z.discriminatedUnion('op', [repoInitOp, roleGrantOp, repoSetVisibilityOp]);
export type ConfigOp = z.infer<typeof configOp>;

export const CONFIG_OP_NAMES = [
  'repo_init',
  'role_grant',
  'repo_set_visibility',
] as const satisfies ReadonlyArray<ConfigOp['op']>;

export const parseConfigOp = opParser<ConfigOp>('config', configOp, CONFIG_OP_NAMES);
