import { homedir } from 'node:os';
import { join } from 'node:path';

// Per-user files (XDG): credentials and the list of known clones in the config dir, search
// indexes in the cache dir. Per-machine repo files live under <git common dir>/zz/.

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config'), 'zz');
}

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CACHE_HOME || join(env.HOME || homedir(), '.cache'), 'zz');
}

export const credentialsFile = (env?: NodeJS.ProcessEnv): string =>
  join(configDir(env), 'credentials.json');
export const reposFile = (env?: NodeJS.ProcessEnv): string => join(configDir(env), 'repos.json');

export const DEFAULT_SERVER = 'http://127.0.0.1:7433';
