import { ZzError } from '../../errors.js';
import { readCommit, readTree, walkTreePath, type GitRepository } from '../../git/index.js';

// The few reads of the user's code the Ladder needs through the repository's persistent
// cat-file: a commit's tree, the object at a path, peeled tags. Listings (ls-tree, log,
// tags) are typed functions in git/queries.ts; nothing here runs git or parses its output.

export { lsTree, type TreeItem } from '../../git/index.js';

/** The tree of a commit (or of what a tag points at); null when it is not a commit. */
export async function commitTree(
  git: GitRepository,
  commit: string,
): Promise<{ commit: string; tree: string } | null> {
  const c = await readCommit(git.catFile, `${commit}^{commit}`);
  return c ? { commit: c.oid, tree: c.tree } : null;
}

/** The object at `path` in `tree` (walking trees only, never reading the blob), or null. */
export async function entryAt(
  git: GitRepository,
  tree: string,
  path: string,
): Promise<{ oid: string; mode: string } | null> {
  return (await walkTreePath((t) => readTree(git.catFile, t), tree, path)).entry;
}

const peeled = new Map<string, string | null>();

/** The commit a tag points at (annotated tags peeled), or null when missing or not a commit. */
export async function tagCommit(git: GitRepository, tag: string): Promise<string | null> {
  let oid: string | null;
  try {
    oid = await git.refs.read(`refs/tags/${tag}`);
  } catch (e) {
    if (e instanceof ZzError) return null; // not a name a ref can have
    throw e;
  }
  if (oid === null) return null;
  // Tag objects are immutable, so their peeled commit is cached for the life of the process.
  if (peeled.has(oid)) return peeled.get(oid)!;
  const c = await commitTree(git, oid);
  const v = c?.commit ?? null;
  if (peeled.size > 10_000) peeled.clear();
  peeled.set(oid, v);
  return v;
}
