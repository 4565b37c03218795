import { runGit } from './native-git.js';

// Typed listings of a repository's code and history for readers above git/ (the Ladder build,
// staleness): every entry of a tree, the latest commits, tags peeled to commits, per-commit
// file stats and subjects of a range. Each is one native git call with machine-readable output
// (`-z` or control-character separators), so paths come back byte for byte, never quoted.

const OID_RE = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export interface TreeItem {
  path: string;
  mode: string;
  type: 'blob' | 'tree' | 'commit';
  oid: string;
  /** Blob size in bytes (only with `sizes`); -1 for trees and submodules. */
  size: number;
}

async function gitText(gitdir: string, args: string[], maxBuffer?: number): Promise<string> {
  const r = await runGit(['--git-dir', gitdir, ...args], {
    cwd: gitdir,
    ...(maxBuffer ? { maxBuffer } : {}),
  });
  return r.stdout.toString('utf8');
}

/** Every entry below `commit` (trees included), in git's order: a folder before its contents. */
export async function lsTree(
  gitdir: string,
  commit: string,
  opts: { sizes?: boolean } = {},
): Promise<TreeItem[]> {
  const args = ['ls-tree', '-r', '-t', '-z', '--full-tree'];
  if (opts.sizes) args.push('-l');
  args.push(commit);
  const text = await gitText(gitdir, args, 1024 * 1024 * 1024);
  const out: TreeItem[] = [];
  let i = 0;
  while (i < text.length) {
    const end = text.indexOf('\0', i);
    const rec = text.slice(i, end < 0 ? text.length : end);
    i = end < 0 ? text.length : end + 1;
    const tab = rec.indexOf('\t');
    if (tab < 0) continue;
    const [mode, type, oid, size] = rec.slice(0, tab).split(' ').filter(Boolean);
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

/** The newest `limit` commits reachable from `head`, newest first. */
export async function recentCommits(
  gitdir: string,
  head: string,
  limit: number,
): Promise<string[]> {
  if (limit <= 0) return [];
  const text = await gitText(gitdir, ['rev-list', '-n', String(limit), head, '--']);
  return text.split('\n').filter((l) => OID_RE.test(l));
}

export interface TagListing {
  tag: string;
  /** The commit the tag points at (annotated tags peeled), or null for a tag of a tree/blob. */
  commit: string | null;
}

/** Every tag in version order (`v1.9` before `v1.10`), peeled to its commit. */
export async function listTags(gitdir: string): Promise<TagListing[]> {
  const text = await gitText(gitdir, [
    'for-each-ref',
    '--sort=v:refname',
    '--format=%(refname:strip=2)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)',
    'refs/tags',
  ]);
  const out: TagListing[] = [];
  for (const line of text.split('\n')) {
    const [tag, type, oid, ptype, poid] = line.split('\0');
    if (!tag) continue;
    const commit = type === 'commit' ? oid : ptype === 'commit' ? poid : undefined;
    out.push({ tag, commit: commit && OID_RE.test(commit) ? commit : null });
  }
  return out;
}

export interface FileStat {
  path: string;
  /** Lines added and deleted; null for a binary file. */
  insertions: number | null;
  deletions: number | null;
}

export interface CommitStats {
  oid: string;
  subject: string;
  body: string;
  /** Files changed against the first parent (no rename detection). */
  files: FileStat[];
}

/** Subject, body and per-file line counts (against the first parent) of each given commit. */
export async function commitStats(
  gitdir: string,
  commits: readonly string[],
): Promise<CommitStats[]> {
  if (commits.length === 0) return [];
  const text = await gitText(gitdir, [
    'log',
    '--no-walk=unsorted',
    '--no-renames',
    '--diff-merges=first-parent',
    '--numstat',
    '-z',
    '--format=%x1e%H%x1f%s%x1f%b%x1d',
    ...commits,
    '--',
  ]);
  const out: CommitStats[] = [];
  for (const rec of text.split('\x1e')) {
    if (!rec.trim()) continue;
    const [oid, subject, rest] = rec.split('\x1f', 3) as [string, string, string | undefined];
    if (!OID_RE.test(oid)) continue;
    const cut = (rest ?? '').lastIndexOf('\x1d');
    const body = cut < 0 ? (rest ?? '') : rest!.slice(0, cut);
    const stat = cut < 0 ? '' : rest!.slice(cut + 1);
    const files: FileStat[] = [];
    // With -z each numstat entry is "added\tdeleted\tpath\0" (the path unquoted).
    for (const entry of stat.split('\0')) {
      const m = /^\n?(\d+|-)\t(\d+|-)\t(.+)$/s.exec(entry);
      if (!m) continue;
      files.push({
        path: m[3]!,
        insertions: m[1] === '-' ? null : Number(m[1]),
        deletions: m[2] === '-' ? null : Number(m[2]),
      });
    }
    out.push({ oid, subject, body: body.trim(), files });
  }
  return out;
}

/** Subjects of the commits in `from..to` (or of `to` and its ancestors), newest first, bounded. */
export async function logSubjects(
  gitdir: string,
  to: string,
  opts: { from?: string | null; limit?: number } = {},
): Promise<string[]> {
  const range = opts.from && opts.from !== to ? [`${opts.from}..${to}`] : [to];
  const text = await gitText(gitdir, [
    'log',
    '-n',
    String(opts.limit ?? 1000),
    '-z',
    '--format=%s',
    ...range,
    '--',
  ]);
  return text.split('\0').filter(Boolean);
}

/** Paths of blobs that differ between two trees or commits (no rename detection). */
export async function changedPaths(gitdir: string, from: string, to: string): Promise<string[]> {
  const text = await gitText(gitdir, [
    'diff-tree',
    '-r',
    '--no-renames',
    '--name-only',
    '-z',
    from,
    to,
  ]);
  return text.split('\0').filter(Boolean);
}
