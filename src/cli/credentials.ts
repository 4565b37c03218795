import { z } from 'zod';
import { ZzError } from '../errors.js';
import { credentialsFile } from '../local/paths.js';
import { readJsonFile, withFileLock, writeJsonAtomic } from '../local/index.js';

// ~/.config/zz/credentials.json (mode 0600): this user's tokens, one entry per repository,
// keyed by the repository's git common dir on this machine — the directory whose
// zz/tokens.json minted them and whose daemon (whatever its port) honours them. A login in one
// repository never touches another's, and two daemons on one port over time cannot mix them
// up. Read-modify-write under a lock file, written atomically; the file never leaves this
// machine.

const Stored = z.object({
  actor: z.string().min(1),
  token: z.string().min(1),
  /** The token's name in the repository's token store ('login', or the agent's name). */
  name: z.string(),
  /** The token's id in the store (for `zz logout`, `zz whoami`). */
  id: z.string(),
});
export type StoredToken = z.output<typeof Stored>;

const RepoCredentials = z.object({
  /** The repository's key (owner/name), for people reading the file. */
  repo: z.string(),
  login: Stored.optional(),
  agents: z.record(z.string(), Stored).default({}),
});
export type RepoCredentials = z.output<typeof RepoCredentials>;

const CredentialsFile = z.object({
  version: z.literal(2).default(2),
  /** Keyed by git common dir. An older file's `servers` map (keyed by URL) is dropped. */
  repos: z.record(z.string(), RepoCredentials).default({}),
});
type CredentialsData = z.output<typeof CredentialsFile>;

const HINT = 'fix or delete it (then run `zz login` again)';

async function readAll(env: NodeJS.ProcessEnv): Promise<CredentialsData> {
  return readJsonFile(credentialsFile(env), CredentialsFile, {
    missing: { version: 2, repos: {} },
    hint: HINT,
  });
}

/** This user's stored tokens for the repository at `gitdir`, or null. */
export async function readRepoCredentials(
  env: NodeJS.ProcessEnv,
  gitdir: string,
): Promise<RepoCredentials | null> {
  return (await readAll(env)).repos[gitdir] ?? null;
}

/** Changes this repository's entry under the file's lock; `fn` may mutate it. */
export async function updateRepoCredentials<T>(
  env: NodeJS.ProcessEnv,
  gitdir: string,
  repoKey: string,
  fn: (entry: RepoCredentials) => T,
): Promise<T> {
  const file = credentialsFile(env);
  return withFileLock(
    file,
    async () => {
      const all = await readAll(env);
      const entry = all.repos[gitdir] ?? { repo: repoKey, agents: {} };
      entry.repo = repoKey;
      const out = fn(entry);
      if (!entry.login && Object.keys(entry.agents).length === 0) delete all.repos[gitdir];
      else all.repos[gitdir] = entry;
      await writeJsonAtomic(file, all, { mode: 0o600, mkdir: true });
      return out;
    },
    { mkdir: true },
  );
}

export function normalizeServer(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ZzError('invalid_argument', `--server: "${url}" is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ZzError('invalid_argument', '--server must be an http(s) URL');
  }
  return `${u.protocol}//${u.host}`;
}
