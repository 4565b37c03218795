import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { ZzError } from '../errors.js';
import { runGit, type GitRunResult } from './native-git.js';
import { parseCommit, parseTree, type TreeEntry } from './objects.js';
import { assertRefName, printable } from './ref-names.js';
import { RefCasError } from './ref-store.js';
import type { GitRepository } from './repository.js';
import { walkTreePath, type TreeWalk } from './tree-walk.js';

// Moving a user's branch (commit_changeset): three-way merges without a checkout, and a branch
// update that keeps the served checkout in step with the ref — worktree first (git's own
// two-tree `read-tree -m -u`, under git's index.lock), then the ref by CAS, and the worktree
// rolled back if the CAS loses — so neither a failure nor a race leaves the ref moved over a
// stale checkout, and no local change is ever overwritten.

type Repo = Pick<GitRepository, 'gitdir' | 'catFile'>;

const inGitdir = (repo: Repo, args: string[], okCodes: number[] = []): Promise<GitRunResult> =>
  runGit(['--git-dir', repo.gitdir, ...args], { cwd: repo.gitdir, okCodes });

export interface RawChange {
  /** A, D, M or T (renames are not detected: each side is its own path). */
  status: string;
  oldMode: string | null;
  newMode: string | null;
  newOid: string | null;
  path: string;
}

/** Every path whose entry differs between two commits (or trees), with modes. */
export async function diffTreeRaw(repo: Repo, from: string, to: string): Promise<RawChange[]> {
  const r = await inGitdir(repo, ['diff-tree', '-r', '-z', '--no-renames', '--raw', from, to]);
  const f = r.stdout.toString('utf8').split('\0');
  const out: RawChange[] = [];
  for (let i = 0; i + 1 < f.length; i += 2) {
    const head = f[i]!;
    if (!head.startsWith(':')) break;
    const [oldMode, newMode, , newOid, status] = head.slice(1).split(' ');
    const zero = (m: string | undefined) => (!m || /^0+$/.test(m) ? null : m);
    out.push({
      status: (status ?? 'M').charAt(0),
      oldMode: zero(oldMode),
      newMode: zero(newMode),
      newOid: zero(newOid),
      path: f[i + 1]!,
    });
  }
  return out;
}

/** `git merge-base --is-ancestor`. */
export async function isAncestor(repo: Repo, ancestor: string, of: string): Promise<boolean> {
  const r = await inGitdir(repo, ['merge-base', '--is-ancestor', ancestor, of], [1]);
  return r.code === 0;
}

export interface MergeResult {
  /** The merged tree (written to the object store; with conflict markers when conflicted). */
  tree: string;
  /** Paths with conflicts; empty when the merge is clean. */
  conflicts: string[];
  /** git's conflict messages ("CONFLICT (content): Merge conflict in f"). */
  messages: string[];
}

/**
 * A three-way merge of two commits without touching any checkout or index:
 * `git merge-tree --write-tree` (git ≥ 2.38), merge base computed by git. Exit 0 is clean, 1 is
 * conflicted — or an error, which prints no tree (told apart by the output).
 */
export async function mergeTrees(repo: Repo, ours: string, theirs: string): Promise<MergeResult> {
  const r = await inGitdir(
    repo,
    // The merged trees git writes are fsynced like ours (core.fsync, git >= 2.36): the branch
    // will point at them.
    [
      '-c',
      'core.fsync=loose-object',
      'merge-tree',
      '--write-tree',
      '-z',
      '--name-only',
      ours,
      theirs,
    ],
    [1],
  );
  // Output: <tree> NUL, then (conflicted only) <path> NUL … NUL, then messages as
  // <count> NUL <path>{count} NUL <type> NUL <message> NUL.
  const f = r.stdout.toString('utf8').split('\0');
  const tree = f[0] ?? '';
  if (!/^[0-9a-f]{40}$/.test(tree)) {
    const msg = r.stderr.trim().split('\n').slice(-2).join(' ') || `exit ${r.code}`;
    throw new ZzError('git_failed', `git merge-tree failed: ${msg}`, { stderr: r.stderr });
  }
  const conflicts = new Set<string>();
  const messages: string[] = [];
  let i = 1;
  if (r.code === 1) {
    for (; i < f.length && f[i] !== ''; i++) conflicts.add(f[i]!);
    i++;
    while (i < f.length && /^\d+$/.test(f[i]!)) {
      const n = Number(f[i]);
      const paths = f.slice(i + 1, i + 1 + n);
      const type = f[i + 1 + n] ?? '';
      const message = (f[i + 2 + n] ?? '').trim();
      if (type.startsWith('CONFLICT')) {
        messages.push(message);
        // Conflicts that leave no conflicted stage (rare) are still conflicts.
        if (conflicts.size === 0) for (const p of paths) conflicts.add(p);
      }
      i += n + 3;
    }
    if (conflicts.size === 0) conflicts.add('(unknown)');
  }
  return { tree, conflicts: [...conflicts].sort(), messages };
}

/**
 * Looks up tree entries by path, caching trees for one operation. Reads trees only: a symlink
 * in the tree is an entry like any other, never followed.
 */
export class TreeReader {
  private readonly trees = new Map<string, TreeEntry[]>();

  constructor(private readonly repo: Repo) {}

  async treeOfCommit(commit: string): Promise<string> {
    const o = await this.repo.catFile.read(commit);
    if (!o || o.type !== 'commit') throw new ZzError('not_found', `commit ${commit} not found`);
    return parseCommit(o.data).tree;
  }

  async entries(tree: string): Promise<TreeEntry[]> {
    let e = this.trees.get(tree);
    if (!e) {
      const o = await this.repo.catFile.read(tree);
      if (!o || o.type !== 'tree') throw new ZzError('git_failed', `tree ${tree} is missing`);
      e = parseTree(o.data);
      this.trees.set(tree, e);
    }
    return e;
  }

  /**
   * Walks `path` from `tree`. Returns the entry at the path (null when absent), or, when a
   * leading component is not a directory, that component as `blockedAt` with its entry.
   */
  walk(tree: string, path: string): Promise<TreeWalk> {
    return walkTreePath((t) => this.entries(t), tree, path);
  }
}

// ---------------------------------------------------------------------------------------------
// Branch update

export interface UpdateBranchOptions {
  branch: string;
  /** The head the new commit was computed against; the ref moves only from here (CAS). */
  from: string;
  to: string;
  /** One line for the reflog. */
  reflogMessage: string;
}

export interface UpdateBranchResult {
  /** The served checkout had the branch checked out and was updated. */
  worktree_updated: boolean;
}

/** The served checkout's top level when its HEAD is `refs/heads/<branch>`, else null. */
export async function checkoutOf(repo: GitRepository, ref: string): Promise<string | null> {
  if (!repo.workTree) return null;
  const r = await runGit(['symbolic-ref', '-q', 'HEAD'], { cwd: repo.workTree, okCodes: [1] });
  return r.stdout.toString('utf8').trim() === ref ? repo.workTree : null;
}

/** Paths with local changes (staged, unstaged, untracked; both sides of a rename). */
async function localChanges(workTree: string): Promise<string[]> {
  const r = await runGit(['status', '--porcelain=v1', '-z', '--untracked-files=all'], {
    cwd: workTree,
  });
  const f = r.stdout.toString('utf8').split('\0');
  const out: string[] = [];
  for (let i = 0; i < f.length; i++) {
    const rec = f[i]!;
    if (rec.length < 4) continue;
    out.push(rec.slice(3));
    // "R  new\0old\0": the next field is the rename's source.
    if (/[RC]/.test(rec.slice(0, 2)) && i + 1 < f.length) out.push(f[++i]!);
  }
  return out;
}

function prefixes(path: string): string[] {
  const parts = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join('/'));
  return out;
}

async function lstatOrNull(p: string) {
  try {
    return await fsp.lstat(p);
  } catch {
    return null;
  }
}

/**
 * The local paths the move from `from` to `to` would touch: local changes at (or above, or
 * below) a changed path, and anything on disk — untracked or ignored, which `read-tree` would
 * silently overwrite — where the commit adds a path or needs a directory.
 */
async function overlapping(workTree: string, changes: readonly RawChange[]): Promise<string[]> {
  const changed = new Set(changes.map((c) => c.path));
  const local = await localChanges(workTree);
  const localSet = new Set(local);
  const localDirs = new Set(local.flatMap(prefixes));
  const hits = new Set<string>();
  for (const c of changed) {
    if (localSet.has(c)) hits.add(c);
    if (localDirs.has(c)) for (const l of local) if (l.startsWith(c + '/')) hits.add(l);
    for (const p of prefixes(c)) if (localSet.has(p)) hits.add(p);
  }
  // Directories whose tracked files the commit deletes.
  const emptied = new Set(
    changes.filter((c) => c.newMode === null).flatMap((c) => prefixes(c.path)),
  );
  for (const c of changes) {
    if (c.oldMode !== null) continue;
    const st = await lstatOrNull(join(workTree, c.path));
    // A directory of tracked files the commit replaces by a file is git's to check
    // ("would lose untracked files in it"); anything else there is in the way.
    if (st && !(st.isDirectory() && emptied.has(c.path))) hits.add(c.path);
    for (const p of prefixes(c.path)) {
      if (changed.has(p)) continue;
      const st = await lstatOrNull(join(workTree, p));
      if (st && !st.isDirectory()) hits.add(p);
    }
  }
  return [...hits].sort();
}

async function readTree(workTree: string, from: string, to: string): Promise<void> {
  await runGit(['read-tree', '-m', '-u', from, to], { cwd: workTree });
}

/** Appends to a reflog that exists (git keeps one per branch by default); best effort. */
async function appendReflog(
  file: string,
  from: string,
  to: string,
  message: string,
): Promise<void> {
  try {
    await fsp.stat(file);
  } catch {
    return;
  }
  const now = Math.floor(Date.now() / 1000);
  const line = `${from} ${to} zz <zz@localhost> ${now} +0000\t${message.replace(/[\n\r\t]/g, ' ')}\n`;
  await fsp.appendFile(file, line).catch(() => undefined);
}

/**
 * Moves `refs/heads/<branch>` from `from` to `to` by CAS. When the served checkout has the
 * branch checked out, its worktree and index are brought to `to` for exactly the paths that
 * differ, first; local changes elsewhere stay. Throws dirty_worktree (nothing moved) when local
 * changes or untracked files are in the way, conflict when the branch moved meanwhile.
 */
export async function updateBranch(
  repo: GitRepository,
  opts: UpdateBranchOptions,
): Promise<UpdateBranchResult> {
  const ref = assertRefName(`refs/heads/${opts.branch}`);
  const workTree = await checkoutOf(repo, ref);
  const moved = (e: RefCasError, note = '') =>
    new ZzError(
      'conflict',
      `branch ${opts.branch} moved to ${e.actual ?? '(deleted)'} while this commit was made against ${opts.from}${note}; call again`,
      { branch: opts.branch, current_head: e.actual, expected_head: opts.from },
    );
  let changes: RawChange[] = [];
  if (workTree) {
    // Cheap early refusal; the CAS below is what guarantees it.
    const now = await repo.refs.read(ref);
    if (now !== opts.from) throw moved(new RefCasError(ref, opts.from, now));
    changes = await diffTreeRaw(repo, opts.from, opts.to);
    const dirty = await overlapping(workTree, changes);
    if (dirty.length > 0) {
      throw new ZzError(
        'dirty_worktree',
        `the served checkout has local changes the commit would overwrite: ${dirty
          .slice(0, 20)
          .map(printable)
          .join(
            ', ',
          )}${dirty.length > 20 ? ` and ${dirty.length - 20} more` : ''}; commit or stash them, then call again`,
        { paths: dirty, branch: opts.branch },
      );
    }
    if (changes.length > 0) {
      try {
        await readTree(workTree, opts.from, opts.to);
      } catch (e) {
        // A change that appeared after the check above, or an index mid-merge: read-tree
        // refuses before writing anything. A held index.lock is a git command running there.
        const stderr =
          e instanceof ZzError
            ? String((e.details as { stderr?: unknown } | undefined)?.stderr ?? '')
            : '';
        if (/index\.lock/.test(stderr)) {
          throw new ZzError(
            'ref_locked',
            `the index of the served checkout is locked by another git process; call again in a moment`,
            { branch: opts.branch },
          );
        }
        throw new ZzError(
          'dirty_worktree',
          `the served checkout could not be updated: ${(e as Error).message}`,
          { paths: [], branch: opts.branch },
        );
      }
    }
  }
  try {
    await repo.refs.cas(ref, opts.from, opts.to);
  } catch (e) {
    if (!(e instanceof RefCasError)) {
      if (workTree && changes.length > 0)
        await readTree(workTree, opts.to, opts.from).catch(() => {});
      throw e;
    }
    let note = '';
    if (workTree && changes.length > 0) {
      try {
        await readTree(workTree, opts.to, opts.from);
      } catch {
        note = ` (the served checkout could not be restored and holds the attempted commit's files)`;
      }
    }
    throw moved(e, note);
  }
  await appendReflog(
    join(repo.gitdir, 'logs', ...ref.split('/')),
    opts.from,
    opts.to,
    opts.reflogMessage,
  );
  if (workTree) {
    await appendReflog(
      join(repo.worktreeGitdir, 'logs', 'HEAD'),
      opts.from,
      opts.to,
      opts.reflogMessage,
    );
  }
  return { worktree_updated: workTree !== null && changes.length > 0 };
}
