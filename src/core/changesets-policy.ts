import { ZzError } from '../errors.js';
import { diffTreeRaw, TreeReader } from '../git/branch-update.js';
import { assertTreePath, printable, type GitRepository } from '../git/index.js';
import { assertFsckClean, type EntryKind } from './changesets-fsck.js';
import type { ZzRepo } from './zz-repo.js';

// The one path policy for changes to the user's code (hardening 11.8), applied when a changeset
// is recorded (ask_answer complete) and again when anything lands (commit_changeset), so a path
// a reviewer saw accepted is never refused later and one refused later is never recorded:
// - each path's syntax (git/ref-names.ts assertTreePath): relative, no `.`/`..`/`.git`, no
//   control or bidi-override characters, a component at most 255 bytes, at most 64 deep;
// - against the tree the change applies to: no symlink (or file, or submodule) on the way to
//   a path, nothing written through a symlink or over a directory or submodule, no deletion of
//   what is not a file, no symlink pointing out of the repository;
// - what git's fsck checks in the files it reads (changesets-fsck.ts): no .gitmodules with a
//   submodule path or url git refuses, no .gitattributes with lines git will not read.

export interface ChangeFileInput {
  path: string;
  content: string | null;
  encoding?: 'utf8' | 'base64';
}

function badPath(path: string, why: string): ZzError {
  return new ZzError('invalid_argument', `path "${printable(path)}" is not allowed: ${why}`, {
    path,
  });
}

/**
 * Each path's syntax, no path twice, and no file written where the same set writes a path under
 * it (`a` and `a/b`: one tree cannot hold both, and the tree builder kept only one, losing the
 * other without a word); the contents decoded.
 */
function parseFiles(files: readonly ChangeFileInput[], field: string): Map<string, Buffer | null> {
  const changes = new Map<string, Buffer | null>();
  for (const f of files) {
    assertTreePath(f.path, `${field}.path`);
    if (changes.has(f.path)) {
      throw new ZzError('invalid_argument', `${field}: ${printable(f.path)} appears twice`);
    }
    changes.set(
      f.path,
      f.content === null
        ? null
        : Buffer.from(f.content, f.encoding === 'base64' ? 'base64' : 'utf8'),
    );
  }
  // Each written path's ancestors (at most 64, the depth limit) looked up: linear in the files.
  const what = field === 'files' ? 'commit' : 'changeset';
  for (const [path, content] of changes) {
    if (content === null) continue;
    for (let at = path.indexOf('/'); at > 0; at = path.indexOf('/', at + 1)) {
      const dir = path.slice(0, at);
      if (changes.get(dir) != null) {
        throw badPath(path, `"${printable(dir)}" is written as a file in the same ${what}`);
      }
    }
  }
  return changes;
}

/**
 * The rule every change to the user's code obeys, against the tree it applies to: no symlink
 * or submodule on the way to a path, and no content written through a symlink.
 */
function assertNoLink(
  path: string,
  writes: boolean,
  found: { entry: { mode: string } | null; blockedAt?: { path: string; entry: { mode: string } } },
  where = '',
): void {
  const b = found.blockedAt;
  if (b?.entry.mode === '120000') {
    throw badPath(path, `"${printable(b.path)}" is a symlink${where}`);
  }
  if (b?.entry.mode === '160000') {
    throw badPath(path, `"${printable(b.path)}" is a submodule${where}`);
  }
  if (found.entry?.mode === '120000' && writes) {
    throw badPath(path, `it is a symlink${where}; writing through it is refused`);
  }
}

/**
 * Checks the files of a direct commit against the tree they are applied to: the link rule,
 * and, since nothing reviewed them, no file turned into a directory unless the same commit
 * deletes it, no content over a directory or submodule, no deletion of what is not a file.
 */
export async function checkFiles(
  trees: TreeReader,
  tree: string,
  files: readonly ChangeFileInput[],
  field = 'files',
): Promise<Map<string, Buffer | null>> {
  const changes = parseFiles(files, field);
  for (const [path, content] of changes) {
    const found = await trees.walk(tree, path);
    const { entry, blockedAt } = found;
    assertNoLink(path, content !== null, found);
    if (content !== null) await assertFsckClean(path, 'file', content);
    if (blockedAt && content === null) {
      throw badPath(path, 'it does not exist, so it cannot be deleted');
    }
    if (blockedAt) {
      // A file where a directory is needed: only when the same commit deletes that file.
      if (changes.get(blockedAt.path) !== null) {
        throw badPath(
          path,
          `"${printable(blockedAt.path)}" is a file; delete it in the same commit to make it a directory`,
        );
      }
      continue;
    }
    if (!entry) {
      if (content === null) throw badPath(path, 'it does not exist, so it cannot be deleted');
      continue;
    }
    if (entry.mode === '040000') throw badPath(path, 'it is a directory');
    if (entry.mode === '160000') throw badPath(path, 'it is a submodule');
  }
  return changes;
}

/** A changeset commit is held to the same path rules as a direct commit, against its base. */
export async function checkChangeset(
  git: GitRepository,
  trees: TreeReader,
  base: string,
  commit: string,
): Promise<void> {
  const baseTree = await trees.treeOfCommit(base);
  for (const c of await diffTreeRaw(git, base, commit)) {
    assertTreePath(c.path, 'changeset path');
    await assertEntryFsckClean(git, c);
    const found = await trees.walk(baseTree, c.path);
    assertNoLink(
      c.path,
      c.newMode !== null && c.newMode !== '120000',
      found,
      ' in the base commit',
    );
    if (c.newMode === '120000' && c.newOid) {
      const blob = await git.catFile.read(c.newOid);
      const target = blob?.data.toString('utf8') ?? '';
      if (escapes(c.path, target)) {
        throw badPath(
          c.path,
          `it is a symlink pointing outside the repository (${printable(target)})`,
        );
      }
    }
  }
}

/** git's fsck rules for one changed tree entry (nothing to check in a deletion). */
async function assertEntryFsckClean(
  git: GitRepository,
  c: { path: string; newMode: string | null; newOid: string | null },
): Promise<void> {
  if (c.newMode === null || c.newOid === null) return;
  const oid = c.newOid;
  const kind: EntryKind = c.newMode.startsWith('100')
    ? 'file'
    : c.newMode === '120000'
      ? 'symlink'
      : 'other';
  await assertFsckClean(
    c.path,
    kind,
    async () => (await git.catFile.read(oid))?.data ?? Buffer.alloc(0),
  );
}

/**
 * git's fsck rules for what a three-way merge made of a changeset and the branch (each side
 * passed them alone; their merge is checked too before the branch moves to it).
 */
export async function checkMergedTree(git: GitRepository, head: string, tree: string) {
  for (const c of await diffTreeRaw(git, head, tree)) await assertEntryFsckClean(git, c);
}

/** A symlink at `path` whose target leaves the tree (absolute, or too many `..`). */
function escapes(path: string, target: string): boolean {
  if (target.startsWith('/') || /^[A-Za-z]:[\\/]/.test(target) || target.includes('\\'))
    return true;
  const stack = path.split('/').slice(0, -1);
  for (const part of target.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (stack.length === 0) return true;
      stack.pop();
    } else stack.push(part);
  }
  return false;
}

/**
 * The changes of a changeset being recorded (ask_answer complete), checked against its base
 * with the rules commit_changeset applies to a changeset when it lands. Without a git checkout
 * (the in-memory store) only the syntax is checked.
 */
export async function changesetChanges(
  repo: ZzRepo,
  base: string,
  files: readonly ChangeFileInput[],
): Promise<Map<string, Buffer | null>> {
  const changes = parseFiles(files, 'changeset.files');
  if (!repo.git) {
    for (const [path, content] of changes) {
      if (content !== null) await assertFsckClean(path, 'file', content);
    }
    return changes;
  }
  const trees = new TreeReader(repo.git);
  let tree: string;
  try {
    tree = await trees.treeOfCommit(base);
  } catch (e) {
    if (e instanceof ZzError && e.code === 'not_found') {
      throw new ZzError('invalid_argument', `base ${base} is not a commit in this repository`);
    }
    throw e;
  }
  // The link rule, as checkChangeset applies it at landing. Like a commit, a changeset may
  // replace a file by a directory or a directory by a file (a reviewer sees it in the diff).
  // A deletion names one entry of the base, as in a commit: on a directory the tree builder
  // would drop the whole subtree from one line of a model's answer, and on a missing path the
  // changeset would change nothing and still pass review and landing as work done.
  for (const [path, content] of changes) {
    const found = await trees.walk(tree, path);
    assertNoLink(path, content !== null, found, ' in the base commit');
    if (content !== null) await assertFsckClean(path, 'file', content);
    else if (!found.entry) throw badPath(path, 'it does not exist, so it cannot be deleted');
    else if (found.entry.mode === '040000') {
      throw badPath(path, 'it is a directory; delete the files in it one by one');
    }
  }
  return changes;
}

/** A recorded changeset must change something: its commit's tree differs from its base's. */
export async function assertChangesSomething(
  repo: ZzRepo,
  base: string,
  commit: string,
): Promise<void> {
  if (!repo.git) return;
  const trees = new TreeReader(repo.git);
  if ((await trees.treeOfCommit(commit)) === (await trees.treeOfCommit(base))) {
    throw new ZzError(
      'invalid_argument',
      'the changeset changes nothing: every file it writes already has that content at its base',
    );
  }
}
