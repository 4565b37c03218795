import type { ConfigDoc } from '../schema/config.js';
import { FORMAT_VERSION } from '../schema/config.js';
import type { EntityCodec, OpRecord } from '../store/index.js';

// refs/zz/config as a fold of its ops, like a Lane.

export interface ConfigState {
  config: ConfigDoc | null;
}

export const CONFIG_FILE = 'config.json';

/**
 * Owner-level ops re-checked against the roles as they stood at that point of the log (the
 * guarded apply of DESIGN §7): whatever arrives by merge, a second `repo_init` changes nothing
 * and only an owner of the moment grants, revokes or changes visibility. The daemon refuses the
 * same up front, so its own ops always pass.
 */
export function configOpAllowed(s: ConfigState, op: OpRecord): boolean {
  switch (op.op) {
    case 'repo_init':
      return s.config === null;
    case 'role_grant':
    case 'repo_set_visibility':
      return s.config !== null && s.config.owners.includes(op.actor);
    default:
      return true;
  }
}

export function applyConfigOp(s: ConfigState, op: OpRecord): string[] {
  const a = op.args;
  if (!configOpAllowed(s, op)) return [];
  switch (op.op) {
    case 'repo_init':
      s.config = {
        format: FORMAT_VERSION,
        owners: a.owners as string[],
        visibility: a.visibility === 'public' ? 'public' : 'private',
        default_branch: String(a.default_branch),
        ask_kinds: (a.ask_kinds as ConfigDoc['ask_kinds']) ?? {},
        created_by: op.actor,
        created_at: op.time,
      };
      return [CONFIG_FILE];
    case 'role_grant': {
      if (!s.config) return [];
      const who = String(a.grantee);
      const owners = s.config.owners.filter((o) => o !== who);
      if (!a.revoke) owners.push(who);
      s.config = { ...s.config, owners };
      return [CONFIG_FILE];
    }
    case 'repo_set_visibility':
      if (!s.config) return [];
      s.config = { ...s.config, visibility: a.visibility === 'public' ? 'public' : 'private' };
      return [CONFIG_FILE];
    default:
      return [];
  }
}

export const configCodec: EntityCodec<ConfigState> = {
  empty: () => ({ config: null }),
  clone: (s) => ({ config: s.config }),
  apply: applyConfigOp,
  file: (s, path) =>
    path === CONFIG_FILE && s.config ? JSON.stringify(s.config, null, 2) + '\n' : null,
};
