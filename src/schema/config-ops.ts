import { z } from 'zod';
import { actor } from './ids.js';
import { askKinds } from './lane.js';
import { LIMITS, STORED_LIMITS } from './limits.js';
import { noOut, opParser, opSchema } from './ops.js';

// The ops of refs/zz/config.

const visibility = z.enum(['private', 'public']);
/** One OpenSSH public key line, e.g. `ssh-ed25519 AAAA… comment`. */
const signingKey = z
  .string()
  .min(1)
  .max(8192)
  .regex(/^[a-z0-9@.-]+ [A-Za-z0-9+/=]+( [^\n]*)?$/, 'an OpenSSH public key line');

/** The most root commits a config records of its project's history (git/queries.ts). */
export const MAX_PROJECT_ROOTS = 16;
/**
 * Which project's history this zz state belongs to: root commits of the checkout `zz init`
 * ran in (DESIGN §7). Sync refuses a remote whose config names only other roots. Bounded and
 * strict: a config that arrives with anything else here does not parse and is quarantined.
 */
export const projectRoots = z
  .array(z.string().regex(/^(?:[0-9a-f]{40}|[0-9a-f]{64})$/, 'a commit name (hex)'))
  .min(1)
  .max(MAX_PROJECT_ROOTS);

export const repoInitOp = opSchema(
  'repo_init',
  {
    owners: z.array(actor).min(1).max(STORED_LIMITS.list),
    visibility: visibility.optional(),
    default_branch: z.string().min(1).max(255),
    ask_kinds: askKinds(STORED_LIMITS.askKinds).optional(),
    /**
     * The first owner's allowed signing keys (`ssh-ed25519 …`), DESIGN §7. zz init writes one;
     * no more than key_add would let the actor hold.
     */
    owner_keys: z.array(signingKey).max(LIMITS.keysPerActor).optional(),
    /** `zz init --signed`: every op must be signed by a key of its actor. */
    signed: z.boolean().optional(),
    /** The project's root commits; absent when init could not know them (or predates them). */
    project_roots: projectRoots.optional(),
  },
  noOut,
);

/**
 * Records the project's root commits on a config that has none (made before zz recorded them,
 * or in a shallow clone); owners only. Adds, never removes: what the config names only grows.
 */
export const repoAddRootsOp = opSchema('repo_add_roots', { roots: projectRoots }, noOut);

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
  repoAddRootsOp,
]);
export type ConfigOp = z.infer<typeof configOp>;

export const CONFIG_OP_NAMES = [
  'repo_init',
  'role_grant',
  'repo_set_visibility',
  'key_add',
  'key_remove',
  'repo_require_signatures',
  'repo_add_roots',
] as const satisfies ReadonlyArray<ConfigOp['op']>;

export const parseConfigOp = opParser<ConfigOp>('config', configOp, CONFIG_OP_NAMES);
