import type { CatFile } from './cat-file.js';
import { assertRevArg, runGit } from './native-git.js';
import { parseCommit, parseTree, type CommitData, type TreeEntry } from './objects.js';

// Typed reads of the repository for the layers above git/ (DESIGN §11: no git command line is
// built, and no git output parsed, outside src/git/). Each function is one native git call (or
// a cat-file read) with its output parsed here. The Ladder's listings (ls-tree, tags, commit
// stats) are in listings.ts.

const OID = /^[0-9a-f]{40}$/;

/** The branch HEAD names (`main`), or null when HEAD is detached. */
export async function headBranch(gitdir: string): Promise<string | null> {
  const r = await runGit(['--git-dir', gitdir, 'symbolic-ref', '--short', '-q', 'HEAD'], {
    cwd: gitdir,
    okCodes: [1],
  });
  return r.stdout.toString('utf8').trim() || null;
}

/**
 * One git config value as git resolves it from `cwd` (repository, global and system files),
 * or null when unset. `env` replaces what the lookup sees of HOME/XDG_CONFIG_HOME/GIT_CONFIG_*.
 */
export async function configGet(
  cwd: string,
  key: string,
  env?: Record<string, string>,
): Promise<string | null> {
  assertRevArg(key, 'config key');
  const r = await runGit(['config', '--get', key], {
    cwd,
    okCodes: [1],
    ...(env ? { env } : {}),
  });
  return r.stdout.toString('utf8').replace(/\n$/, '') || null;
}

/** The absolute path git uses for `name` inside the git dir (`hooks` honours core.hooksPath). */
export async function gitPath(cwd: string, name: string): Promise<string> {
  assertRevArg(name, 'git path');
  const r = await runGit(['rev-parse', '--path-format=absolute', '--git-path', name], { cwd });
  return r.stdout.toString('utf8').replace(/\n$/, '');
}

/** A commit read and parsed (`rev` may be any revision cat-file resolves); null when it is not one. */
export async function readCommit(
  catFile: CatFile,
  rev: string,
): Promise<(CommitData & { oid: string }) | null> {
  const obj = await catFile.read(rev);
  if (!obj || obj.type !== 'commit') return null;
  return { oid: obj.oid, ...parseCommit(obj.data) };
}

/** A tree's entries; null when `oid` is not a tree. */
export async function readTree(catFile: CatFile, oid: string): Promise<TreeEntry[] | null> {
  const obj = await catFile.read(oid);
  if (!obj || obj.type !== 'tree') return null;
  return parseTree(obj.data);
}

export interface CommitMessage {
  oid: string;
  parents: string[];
  /** The raw message (%B). */
  message: string;
}

/**
 * Commits reachable from `head` and not from `since`, oldest first in topological order
 * (`git log --reverse --topo-order head ^since`), with their messages.
 */
export async function commitMessages(
  gitdir: string,
  head: string,
  since: string | null,
): Promise<CommitMessage[]> {
  assertRevArg(head, 'head');
  if (since !== null) assertRevArg(since, 'since');
  const args = [
    '--git-dir',
    gitdir,
    'log',
    '--format=%H%x00%P%x00%B%x1e',
    '--reverse',
    '--topo-order',
    head,
  ];
  if (since !== null) args.push('^' + since);
  args.push('--');
  const r = await runGit(args, { cwd: gitdir });
  const out: CommitMessage[] = [];
  for (const rec of r.stdout.toString('utf8').split('\x1e')) {
    const body = rec.replace(/^\n/, '');
    if (!body) continue;
    const [oid, parents, message] = body.split('\0');
    if (!oid || !OID.test(oid)) continue;
    out.push({
      oid,
      parents: parents ? parents.split(' ').filter(Boolean) : [],
      message: message ?? '',
    });
  }
  return out;
}
