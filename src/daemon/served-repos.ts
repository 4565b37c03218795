import { resolve } from 'node:path';
import { z } from 'zod';
import { ZzRepo } from '../core/index.js';
import { TokenStore } from '../core/token-store.js';
import { isZzError } from '../errors.js';
import { readJsonFile, reposFile } from '../local/index.js';
import { claimDaemonFile, type DaemonFileClaim } from './daemon-file.js';

// The repositories one daemon serves: the checkout it starts in, those named with --repo (an
// error if one cannot be opened or is served elsewhere) and those listed in repos.json (skipped
// with a log line). Each brings its own token store (a token is honoured only by the repo that
// minted it) and its own claimed daemon.json (so a CLI in that checkout finds this daemon).

export interface ServedRepo {
  repo: ZzRepo;
  tokens: TokenStore;
  claim: DaemonFileClaim;
}

export interface ServedRepos {
  primary: ServedRepo;
  byKey: Map<string, ServedRepo>;
  /** Releases every daemon.json claim and closes the repositories. */
  close(): Promise<void>;
}

/** `$XDG_CONFIG_HOME/zz/repos.json`: clones this machine knows, `{repos: [{path}]}`. */
export const defaultReposFile = reposFile;

const ReposFileSchema = z
  .object({ repos: z.array(z.object({ path: z.string() }).loose()) })
  .loose();

async function reposFromFile(file: string, log: (line: string) => void): Promise<string[]> {
  try {
    const doc = await readJsonFile(file, ReposFileSchema);
    return doc ? doc.repos.map((r) => r.path) : [];
  } catch (e) {
    // A broken list of extra clones must not stop the daemon serving its own checkout.
    log(`${(e as Error).message}; ignoring it`);
    return [];
  }
}

export async function openServedRepos(opts: {
  cwd: string;
  repos?: readonly string[];
  reposFile?: string;
  log: (line: string) => void;
}): Promise<ServedRepos> {
  const { log } = opts;
  const byKey = new Map<string, ServedRepo>();
  const seen = new Set<string>();
  const startedAt = new Date().toISOString();
  const close = async () => {
    for (const s of byKey.values()) {
      await s.claim.release().catch(() => {});
      s.repo.close();
    }
  };
  const add = async (path: string, strict: boolean): Promise<void> => {
    let repo: ZzRepo;
    try {
      repo = await ZzRepo.open(resolve(opts.cwd, path));
    } catch (e) {
      if (strict) throw e;
      log(`skipping ${path}: ${(e as Error).message}`);
      return;
    }
    const gitdir = repo.git!.gitdir;
    if (seen.has(gitdir) || byKey.has(repo.key)) {
      if (!seen.has(gitdir))
        log(`skipping ${path}: another served repository already has the key ${repo.key}`);
      repo.close();
      return;
    }
    let claim: DaemonFileClaim;
    try {
      claim = await claimDaemonFile(gitdir, startedAt);
    } catch (e) {
      repo.close();
      if (strict || !isZzError(e)) throw e;
      log(`skipping ${path}: ${e.message}`);
      return;
    }
    seen.add(gitdir);
    byKey.set(repo.key, { repo, tokens: new TokenStore(gitdir, { log }), claim });
  };
  try {
    await add(opts.cwd, true);
    for (const p of opts.repos ?? []) await add(p, true);
    for (const p of await reposFromFile(opts.reposFile ?? defaultReposFile(), log))
      await add(p, false);
  } catch (e) {
    await close();
    throw e;
  }
  return { primary: byKey.values().next().value!, byKey, close };
}
