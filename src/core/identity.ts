import { ZzError } from '../errors.js';
import { configGet, discoverRepository, repoKeyOf } from '../git/index.js';

// Which repository and which person a front end is acting in: the checkout around a directory
// (common git dir, work tree, repo key) and the git identity. Deliberately small: the CLI loads
// it on every command, before deciding whether it needs the rest of core.

export interface LocatedRepository {
  gitdir: string;
  workTree: string | null;
  key: string;
}

export async function locateRepository(cwd: string): Promise<LocatedRepository> {
  const found = await findCheckout(cwd);
  return { ...found, key: await repoKeyOf(found, cwd) };
}

/** The checkout alone, for callers that need no repo key. */
export async function findCheckout(
  cwd: string,
): Promise<{ gitdir: string; workTree: string | null }> {
  const found = await discoverRepository(cwd);
  return { gitdir: found.gitdir, workTree: found.workTree };
}

// The identity comes from the git config the caller sees, so the CLI's own environment
// (HOME, GIT_CONFIG_GLOBAL, …) decides it, not the process it happens to run in.
const IDENTITY_ENV = [
  'HOME',
  'XDG_CONFIG_HOME',
  'GIT_CONFIG_GLOBAL',
  'GIT_CONFIG_NOSYSTEM',
  'GIT_CONFIG_SYSTEM',
];

/** A git config value as the caller (not this process) sees it; null when unset. */
export async function callerGitConfig(
  cwd: string,
  key: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | null> {
  const pass: Record<string, string> = {};
  for (const k of IDENTITY_ENV) if (env[k] !== undefined) pass[k] = env[k]!;
  return configGet(cwd, key, pass);
}

export async function gitUserEmail(
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const email = await callerGitConfig(cwd, 'user.email', env);
  if (!email) {
    throw new ZzError(
      'precondition_failed',
      'git user.email is not set; run `git config user.email you@example.com`',
    );
  }
  return email;
}
