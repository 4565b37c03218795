import type { TreeEntry } from './objects.js';

// The one walk of a tree by path (`a/b/c`): component by component through each tree's
// entries, never following a symlink or entering a submodule. Callers pass how they read a
// tree's entries (their own cache, or straight from cat-file).

/** A tree's entries; null (or a throw) when it cannot be read, as the caller decides. */
export type TreeEntries = (tree: string) => Promise<readonly TreeEntry[] | null>;

export interface TreeWalk {
  /** The entry at the path; null when a component is missing or a leading one is no tree. */
  entry: TreeEntry | null;
  /** When a leading component is not a tree: that component's path and entry. */
  blockedAt?: { path: string; entry: TreeEntry };
}

export async function walkTreePath(
  entries: TreeEntries,
  tree: string,
  path: string,
): Promise<TreeWalk> {
  const parts = path.split('/');
  let cur = tree;
  for (let i = 0; ; i++) {
    const e = (await entries(cur))?.find((x) => x.name === parts[i]) ?? null;
    if (e === null || i === parts.length - 1) return { entry: e };
    if (e.mode !== '040000') {
      return { entry: null, blockedAt: { path: parts.slice(0, i + 1).join('/'), entry: e } };
    }
    cur = e.oid;
  }
}
