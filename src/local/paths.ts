import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

// Where zz keeps files on this machine. Per-user files follow XDG: credentials and the list of
// known clones in the config dir, search indexes in the cache dir. Per-repository machine files
// (tokens, daemon.json, locks) live under <git common dir>/zz/ and are never on refs.

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_PORT = 7433;
/** Ports after DEFAULT_PORT `zz serve` tries when it is in use and no --port was given. */
export const DEFAULT_PORT_TRIES = 9;
export const DEFAULT_SERVER = `http://${DEFAULT_HOST}:${DEFAULT_PORT}`;

const home = (env: NodeJS.ProcessEnv) => env.HOME || homedir();

// A relative XDG_* path is ignored, as the XDG Base Directory spec says: it would resolve
// against whatever directory zz runs in, so a checkout's files could become our cache or config.
const xdg = (value: string | undefined): string | undefined =>
  value && isAbsolute(value) ? value : undefined;

/** `$XDG_CONFIG_HOME/zz`, else `~/.config/zz`. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdg(env.XDG_CONFIG_HOME) ?? join(home(env), '.config'), 'zz');
}

/** `$XDG_CACHE_HOME/zz`, else `~/.cache/zz`. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(xdg(env.XDG_CACHE_HOME) ?? join(home(env), '.cache'), 'zz');
}

export const credentialsFile = (env?: NodeJS.ProcessEnv): string =>
  join(configDir(env), 'credentials.json');
export const reposFile = (env?: NodeJS.ProcessEnv): string => join(configDir(env), 'repos.json');

/** <git common dir>/zz: this machine's files for one repository. */
export const repoLocalDir = (gitdir: string): string => join(gitdir, 'zz');
export const tokensFile = (gitdir: string): string => join(repoLocalDir(gitdir), 'tokens.json');
export const daemonFile = (gitdir: string): string => join(repoLocalDir(gitdir), 'daemon.json');
