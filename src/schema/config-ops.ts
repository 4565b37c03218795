import { z } from 'zod';
import { actor } from './ids.js';
import { askKind, scope } from './lane.js';
import { STORED_LIMITS } from './limits.js';
import { noOut, opParser, opSchema } from './ops.js';

// The ops of refs/zz/config.

const visibility = z.enum(['private', 'public']);
/** One OpenSSH public key line, e.g. `ssh-ed25519 AAAA… comment`. */
const signingKey = z
  .string()
  .min(1)
  .max(8192)
  .regex(/^[a-z0-9@.-]+ [A-Za-z0-9+/=]+( [^\n]*)?$/, 'an OpenSSH public key line');

export const repoInitOp = opSchema(
  'repo_init',
  {
    owners: z.array(actor).min(1).max(STORED_LIMITS.list),
    visibility: visibility.optional(),
    default_branch: z.string().min(1).max(255),
    ask_kinds: z.record(askKind, scope).optional(),
    /** The first owner's allowed signing keys (`ssh-ed25519 …`), DESIGN §7. */
    owner_keys: z.array(signingKey).max(STORED_LIMITS.list).optional(),
    /** `zz init --signed`: every op must be signed by a key of its actor. */
    signed: z.boolean().optional(),
  },
  noOut,
);

export const roleGrantOp = opSchema(
  'role_grant',
  { grantee: actor, role: z.literal('owner').optional(), revoke: z.boolean().optional() },
  noOut,
);

export const repoSetVisibilityOp = opSchema('repo_set_visibility', { visibility }, noOut);

/** Adds an allowed signing key for `actor` (an owner for anyone, or the actor for itself). */
export const keyAddOp = opSchema('key_add', { actor, key: signingKey }, noOut);

/** Removes an allowed signing key of `actor` (an owner for anyone, or the actor for itself). */
export const keyRemoveOp = opSchema('key_remove', { actor, key: signingKey }, noOut);

/** Turns the signature requirement on (or off with `signed: false`); owners only. */
export const repoRequireSignaturesOp = opSchema(
  'repo_require_signatures',
  { signed: z.boolean().optional() },
  noOut,
);

export const configOp = z.discriminatedUnion('op', [
  repoInitOp,
  roleGrantOp,
  repoSetVisibilityOp,
  keyAddOp,
  keyRemoveOp,
  repoRequireSignaturesOp,
]);
export type ConfigOp = z.infer<typeof configOp>;

export const CONFIG_OP_NAMES = [
  'repo_init',
  'role_grant',
  'repo_set_visibility',
  'key_add',
  'key_remove',
  'repo_require_signatures',
] as const satisfies ReadonlyArray<ConfigOp['op']>;

export const parseConfigOp = opParser<ConfigOp>('config', configOp, CONFIG_OP_NAMES);
