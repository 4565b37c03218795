import { normalizeKeyLine } from '../git/index.js';
import { personOf } from '../schema/ids.js';
import type { ConfigDoc } from '../schema/config.js';
import { FORMAT_VERSION } from '../schema/config.js';
import { LIMITS } from '../schema/limits.js';
import { parseConfigOp, type ConfigOp } from '../schema/config-ops.js';
import { OpLog, type EntityCodec } from '../store/index.js';
import { CowMap } from './cow-map.js';

// refs/zz/config as a fold of its ops (schema/config-ops.ts), like a Lane.

export interface ConfigState {
  config: ConfigDoc | null;
  /**
   * Each actor's allowed signing keys (`ssh-ed25519 …` lines), from `repo_init` (the first
   * owner's) and `key_add` ops. Sync verifies imported commits against these (DESIGN §7).
   */
  keys: CowMap<string, readonly string[]>;
  /** Whether every op must be signed by a key of its actor (`zz init --signed`, or later). */
  signed: boolean;
  /**
   * The root commits of the project this zz state belongs to, sorted (empty: not recorded —
   * a config made before zz recorded them, or in a shallow clone). Sync refuses a remote whose
   * config names only other roots (sync/project-identity.ts).
   */
  roots: readonly string[];
  /** Ops the guarded fold refused, in fold order: the same list on every replica. */
  rejected: OpLog<ConfigRejection>;
}

/** Ops that only an owner's key may make count (sync verifies their signatures on import). */
export const OWNER_LEVEL_OPS: ReadonlySet<string> = new Set([
  'repo_init',
  'role_grant',
  'repo_set_visibility',
  'key_add',
  'key_remove',
  'repo_require_signatures',
  'repo_add_roots',
]);

export const CONFIG_FILE = 'config.json';

/** A config op the guarded fold refused: it stays in the log and changes nothing. */
export interface ConfigRejection {
  op_id: string;
  op: ConfigOp['op'];
  actor: string;
  reason: 'not_owner' | 'last_owner' | 'keys_per_actor' | 'owners_full';
  /** For key_add and key_remove: whose key. */
  subject?: string;
}

/**
 * Owner-level ops re-checked against the roles as they stood at that point of the log (the
 * guarded apply of DESIGN §7): whatever arrives by merge, a second `repo_init` changes nothing
 * and only an owner of the moment grants, revokes or changes visibility. The daemon refuses the
 * same up front, so its own ops always pass. Why an op is refused, or null; `repo_init` on a
 * config that exists is a quiet no-op (two clones each ran `zz init`), not a refusal.
 */
export function configRefusal(s: ConfigState, op: ConfigOp): ConfigRejection['reason'] | null {
  switch (op.op) {
    case 'repo_init':
      return null;
    case 'role_grant': {
      if (!s.config?.owners.includes(op.actor)) return 'not_owner';
      // Two owners each revoking the other offline would leave nobody who can ever grant
      // again; the second revoke in fold order is refused, as the daemon refuses it.
      const rest = s.config.owners.filter((o) => o !== op.args.grantee);
      if (op.args.revoke) return rest.length === 0 ? 'last_owner' : null;
      // LIMITS.owners holds for grants from anywhere (role_grant refuses it locally).
      return rest.length === s.config.owners.length && rest.length >= LIMITS.owners
        ? 'owners_full'
        : null;
    }
    case 'repo_set_visibility':
    case 'repo_require_signatures':
    case 'repo_add_roots':
      return s.config?.owners.includes(op.actor) ? null : 'not_owner';
    case 'key_remove':
    case 'key_add': {
      // An owner registers anyone's key; an actor may add its own (sync then demands the
      // commit be signed by a key an owner registered for it, or by an owner's).
      const may =
        s.config !== null && (s.config.owners.includes(op.actor) || op.args.actor === op.actor);
      if (!may) return 'not_owner';
      if (op.op === 'key_remove') return null;
      // LIMITS.keysPerActor holds for key_adds from anywhere (key_add refuses it locally):
      // an actor may add its own keys, and key_list answers each actor's keys whole.
      const held = s.keys.get(op.args.actor) ?? [];
      return !held.includes(op.args.key) && held.length >= LIMITS.keysPerActor
        ? 'keys_per_actor'
        : null;
    }
  }
}

export function applyConfigOp(s: ConfigState, op: ConfigOp): string[] {
  const refused = configRefusal(s, op);
  if (refused !== null) {
    const subject = op.op === 'key_add' || op.op === 'key_remove' ? { subject: op.args.actor } : {};
    const r: ConfigRejection = { op_id: op.id, op: op.op, actor: op.actor, reason: refused };
    s.rejected = s.rejected.concat([{ ...r, ...subject }]);
    return [];
  }
  if (op.op === 'repo_init' && s.config !== null) {
    // A second repo_init changes nothing, except that its roots join roots already recorded.
    // Two configs meet this way when two clones each ran `zz init` (the same roots: no change)
    // and when `zz sync --allow-unrelated` merged two projects' state: the merged config then
    // names both projects' roots, so neither side's later syncs are refused again. Only ever
    // widening, and only a config that records roots: an unsigned second init (it needs no
    // owner's key, authenticity.ts) could otherwise give a config without roots an identity
    // that makes every clone's sync refuse.
    if (s.roots.length > 0 && op.args.project_roots) {
      s.roots = unionRoots(s.roots, op.args.project_roots);
    }
    return [];
  }
  switch (op.op) {
    case 'repo_init':
      s.config = {
        format: FORMAT_VERSION,
        owners: op.args.owners,
        visibility: op.args.visibility ?? 'private',
        default_branch: op.args.default_branch,
        ask_kinds: op.args.ask_kinds ?? {},
        created_by: op.actor,
        created_at: op.time,
      };
      s.keys = new CowMap([[op.actor, op.args.owner_keys ?? []]]);
      s.signed = op.args.signed === true;
      s.roots = unionRoots([], op.args.project_roots ?? []);
      return [CONFIG_FILE];
    case 'repo_add_roots':
      s.roots = unionRoots(s.roots, op.args.roots);
      return [];
    case 'key_add': {
      const who = op.args.actor;
      const list = s.keys.get(who) ?? [];
      if (!list.includes(op.args.key)) {
        s.keys.set(who, [...list, op.args.key]);
      }
      return [];
    }
    case 'key_remove': {
      const who = op.args.actor;
      // Keys match by their key material (a comment may differ from the line registered).
      const gone = normalizeKeyLine(op.args.key);
      const list = s.keys.get(who) ?? [];
      const rest = list.filter((k) => normalizeKeyLine(k) !== gone);
      if (rest.length !== list.length) s.keys.set(who, rest);
      return [];
    }
    case 'repo_require_signatures':
      s.signed = op.args.signed !== false;
      return [];
    case 'role_grant': {
      if (!s.config) return [];
      const who = op.args.grantee;
      const owners = s.config.owners.filter((o) => o !== who);
      if (!op.args.revoke) owners.push(who);
      s.config = { ...s.config, owners };
      return [CONFIG_FILE];
    }
    case 'repo_set_visibility':
      if (!s.config) return [];
      s.config = { ...s.config, visibility: op.args.visibility };
      return [CONFIG_FILE];
  }
}

/** Sorted, without repeats; a new array (states share theirs, so none is mutated). */
function unionRoots(a: readonly string[], b: readonly string[]): readonly string[] {
  return [...new Set([...a, ...b])].sort();
}

export const configCodec: EntityCodec<ConfigState, ConfigOp> = {
  empty: () => ({
    config: null,
    keys: new CowMap(),
    signed: false,
    roots: [],
    rejected: new OpLog(),
  }),
  // keys is forked (apply changes it in place: a copy of the whole map per key op made a log of
  // key ops from many actors quadratic); an actor's list of keys is replaced, never mutated.
  // roots is replaced, never mutated, so sharing it is safe; rejected is an OpLog, replaced by
  // a longer one (concat appends in O(1) where it can, store/op-log.ts).
  clone: (s) => ({
    config: s.config,
    keys: s.keys.fork(),
    signed: s.signed,
    roots: s.roots,
    rejected: s.rejected,
  }),
  parse: parseConfigOp,
  apply: applyConfigOp,
  refusals: (s) => s.rejected,
  file: (s, path) =>
    path === CONFIG_FILE && s.config ? JSON.stringify(s.config, null, 2) + '\n' : null,
};

/** Whether `signer` (a normalised key line) is a key of an owner of `s`. */
export function isOwnerKey(s: ConfigState, signer: string | null): boolean {
  if (signer === null || !s.config) return false;
  return s.config.owners.some((o) =>
    (s.keys.get(o) ?? []).some((k) => normalizeKeyLine(k) === signer),
  );
}

/** Whether `signer` is a key registered for `actor`'s person. */
export function isActorKey(s: ConfigState, actor: string, signer: string | null): boolean {
  if (signer === null) return false;
  return (s.keys.get(personOf(actor)) ?? []).some((k) => normalizeKeyLine(k) === signer);
}
