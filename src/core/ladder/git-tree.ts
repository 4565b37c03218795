import { ZzError } from '../../errors.js';
import { parseCommit, parseTree, runGit, type GitRepository } from '../../git/index.js';

// The few reads of the user's code the Ladder needs, over native git and the repository's
// persistent cat-file: one `ls-tree -r -t` per commit (path → oid for every blob and tree),
// object ids at a path, peeled tags. Paths are git's, byte for byte (`-z`, no quoting).

export interface TreeItem {
  path: string;
  mode: string;
  type: 'blob' | 'tree' | 'commit';
  oid: string;
  /** Blob size in bytes (only with `sizes`); -1 for trees and submodules. */
  size: number;
}

/** Every entry below `commit` (trees included), in git's order: a folder before its contents. */
export async function lsTree(
  gitdir: string,
  commit: string,
  opts: { sizes?: boolean } = {},
): Promise<TreeItem[]> {
  const args = ['--git-dir', gitdir, 'ls-tree', '-r', '-t', '-z', '--full-tree'];
  if (opts.sizes) args.push('-l');
  args.push(commit);
  const r = await runGit(args, { cwd: gitdir, maxBuffer: 1024 * 1024 * 1024 });
  const out: TreeItem[] = [];
  const text = r.stdout.toString('utf8');
  let i = 0;
  while (i < text.length) {
    const end = text.indexOf('\0', i);
    const rec = text.slice(i, end < 0 ? text.length : end);
    i = end < 0 ? text.length : end + 1;
    const tab = rec.indexOf('\t');
    if (tab < 0) continue;
    const meta = rec.slice(0, tab).split(' ').filter(Boolean);
    const [mode, type, oid, size] = meta;
    if (!mode || !oid || (type !== 'blob' && type !== 'tree' && type !== 'commit')) continue;
    out.push({
      path: rec.slice(tab + 1),
      mode,
      type,
      oid,
      size: size === undefined || size === '-' ? -1 : Number(size),
    });
  }
  return out;
}

/** The tree of a commit (or of what a tag points at); null when it is not a commit. */
export async function commitTree(
  git: GitRepository,
  commit: string,
): Promise<{ commit: string; tree: string } | null> {
  const obj = await git.catFile.read(`${commit}^{commit}`);
  if (!obj || obj.type !== 'commit') return null;
  return { commit: obj.oid, tree: parseCommit(obj.data).tree };
}

/** The object at `path` in `tree` (walking trees only, never reading the blob), or null. */
export async function entryAt(
  git: GitRepository,
  tree: string,
  path: string,
): Promise<{ oid: string; mode: string } | null> {
  let cur = { oid: tree, mode: '040000' };
  for (const name of path.split('/')) {
    if (cur.mode !== '040000') return null;
    const obj = await git.catFile.read(cur.oid);
    if (!obj || obj.type !== 'tree') return null;
    const e = parseTree(obj.data).find((x) => x.name === name);
    if (!e) return null;
    cur = { oid: e.oid, mode: e.mode };
  }
  return cur;
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
