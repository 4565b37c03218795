import type { ConfigDoc } from '../schema/config.js';
import { FORMAT_VERSION } from '../schema/config.js';
import { parseConfigOp, type ConfigOp } from '../schema/config-ops.js';
import type { EntityCodec } from '../store/index.js';

// refs/zz/config as a fold of its ops (schema/config-ops.ts), like a Lane.

export interface ConfigState {
  config: ConfigDoc | null;
}

export const CONFIG_FILE = 'config.json';

export function applyConfigOp(s: ConfigState, op: ConfigOp): string[] {
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
      return [CONFIG_FILE];
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

export const configCodec: EntityCodec<ConfigState, ConfigOp> = {
  empty: () => ({ config: null }),
  clone: (s) => ({ config: s.config }),
  parse: parseConfigOp,
  apply: applyConfigOp,
  file: (s, path) =>
    path === CONFIG_FILE && s.config ? JSON.stringify(s.config, null, 2) + '\n' : null,
};
