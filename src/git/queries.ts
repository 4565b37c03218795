import { readGitConfig } from './git-config.js';
import { ZzError } from '../errors.js';
import type { CatFile } from './cat-file.js';
import { assertRevArg, runGit } from './native-git.js';
import { parseCommit, parseTree, type CommitData, type TreeEntry } from './objects.js';

// Typed reads of the repository for the layers above git/ (DESIGN §11: no git command line is
// built, and no git output parsed, outside src/git/): the Ladder's listings (ls-tree, recent
// commits, commit stats, tags, subjects, changed paths), the default branch, config values,
// git paths, and commits and trees read through the repository's cat-file. Each function is
// one native git call (or a cat-file read) with its output parsed here, byte for byte (`-z`
// where git offers it, so paths are never C-quoted).

const OID = /^[0-9a-f]{40}$/;

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
  assertRevArg(commit, 'commit');
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

/** The newest `limit` commits reachable from `head` (git's default order: newest first). */
export async function recentCommits(
  gitdir: string,
  head: string,
  limit: number,
): Promise<string[]> {
  assertRevArg(head, 'head');
  if (limit <= 0) return [];
  const r = await runGit(['--git-dir', gitdir, 'rev-list', '-n', String(limit), head, '--'], {
    cwd: gitdir,
  });
  return r.stdout
    .toString('utf8')
    .split('\n')
    .filter((l) => OID.test(l));
}

export interface CommitFileStat {
  path: string;
  /** Lines added and deleted; null for a binary file. */
  insertions: number | null;
  deletions: number | null;
}

export interface CommitSummary {
  oid: string;
  subject: string;
  /** The message after the subject, trimmed. */
  body: string;
  /** Files changed against the first parent (a root commit: against the empty tree), no renames. */
  files: CommitFileStat[];
}

/**
 * Subject, body and per-file line counts (vs the first parent) of each commit, in the order
 * given; one `git log --no-walk` for all of them. Unknown oids are left out.
 */
export async function commitSummaries(
  gitdir: string,
  oids: readonly string[],
): Promise<CommitSummary[]> {
  const want = oids.filter((o) => OID.test(o));
  if (want.length === 0) return [];
  const r = await runGit(
    [
      '--git-dir',
      gitdir,
      'log',
      '--no-walk=unsorted',
      '--no-renames',
      '--diff-merges=first-parent',
      '--numstat',
      '-z',
      '--format=%x1e%H%x1f%s%x1f%b%x1d',
      '--stdin',
      '--',
    ],
    { cwd: gitdir, input: want.join('\n') + '\n' },
  );
  const out: CommitSummary[] = [];
  for (const rec of r.stdout.toString('utf8').split('\x1e')) {
    if (!rec.trim()) continue;
    const [oid, subject, rest] = rec.split('\x1f', 3) as [string, string, string | undefined];
    if (!OID.test(oid)) continue;
    const cut = (rest ?? '').lastIndexOf('\x1d');
    const body = cut < 0 ? (rest ?? '') : rest!.slice(0, cut);
    const stat = cut < 0 ? '' : rest!.slice(cut + 1);
    const files: CommitFileStat[] = [];
    // With -z each numstat record is "added\tdeleted\tpath\0" (paths never quoted).
    for (const item of stat.split('\0')) {
      const m = /^\n?(\d+|-)\t(\d+|-)\t([\s\S]+)$/.exec(item);
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

export interface TagInfo {
  /** The name under refs/tags/. */
  tag: string;
  /** The commit it names (annotated tags peeled); null for a tag of a tree or blob. */
  commit: string | null;
}

/** Every tag, in version order (`--sort=v:refname`). */
export async function listTags(gitdir: string): Promise<TagInfo[]> {
  const r = await runGit(
    [
      '--git-dir',
      gitdir,
      'for-each-ref',
      '--sort=v:refname',
      '--format=%(refname:strip=2)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)',
      'refs/tags',
    ],
    { cwd: gitdir },
  );
  const out: TagInfo[] = [];
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const [tag, type, oid, ptype, poid] = line.split('\0');
    if (!tag) continue;
    const commit = type === 'commit' ? oid : ptype === 'commit' ? poid : undefined;
    out.push({ tag, commit: commit && OID.test(commit) ? commit : null });
  }
  return out;
}

/** Subjects of the commits in `from..to` (all of `to`'s history when from is null), newest first. */
export async function commitSubjects(
  gitdir: string,
  from: string | null,
  to: string,
  limit: number,
): Promise<string[]> {
  assertRevArg(to, 'to');
  if (from !== null) assertRevArg(from, 'from');
  const range = from !== null && from !== to ? [`${from}..${to}`] : [to];
  const r = await runGit(
    ['--git-dir', gitdir, 'log', '-n', String(limit), '--format=%s', ...range, '--'],
    { cwd: gitdir },
  );
  return r.stdout.toString('utf8').split('\n').filter(Boolean);
}

/** Paths (files, not trees) that differ between two commits or trees; renames not detected. */
export async function changedPaths(gitdir: string, from: string, to: string): Promise<string[]> {
  assertRevArg(from, 'from');
  assertRevArg(to, 'to');
  const r = await runGit(
    ['--git-dir', gitdir, 'diff-tree', '-r', '--no-renames', '--name-only', '-z', from, to, '--'],
    { cwd: gitdir },
  );
  return r.stdout.toString('utf8').split('\0').filter(Boolean);
}

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
  // From the process's one snapshot of the config (git-config.ts), not a spawn a key.
  return (await readGitConfig(cwd, env)).get(key);
}

/** The absolute path git uses for `name` inside the git dir (`hooks` honours core.hooksPath). */
export async function gitPath(cwd: string, name: string): Promise<string> {
  assertRevArg(name, 'git path');
  const r = await runGit(['rev-parse', '--path-format=absolute', '--git-path', name], { cwd });
  return r.stdout.toString('utf8').replace(/\n$/, '');
}

/**
 * A commit read and parsed (`rev` may be any revision cat-file resolves), with its raw bytes;
 * null when it is not a commit.
 */
export async function readCommit(
  catFile: CatFile,
  rev: string,
): Promise<(CommitData & { oid: string; raw: Buffer }) | null> {
  const obj = await catFile.read(rev);
  if (!obj || obj.type !== 'commit') return null;
  return { oid: obj.oid, raw: obj.data, ...parseCommit(obj.data) };
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
 * (`git log --reverse --topo-order head ^since`), with their messages. Several heads (or
 * several `since`) walk their union in one git call (sync reads both sides of a divergence).
 */
export async function commitMessages(
  gitdir: string,
  head: string | readonly string[],
  since: string | readonly string[] | null,
): Promise<CommitMessage[]> {
  const heads = typeof head === 'string' ? [head] : head;
  const excluded = since === null ? [] : typeof since === 'string' ? [since] : since;
  for (const h of heads) assertRevArg(h, 'head');
  for (const x of excluded) assertRevArg(x, 'since');
  if (heads.length === 0) return [];
  const args = [
    '--git-dir',
    gitdir,
    'log',
    '--format=%H%x00%P%x00%B%x1e',
    '--reverse',
    '--topo-order',
    ...heads,
    ...excluded.map((x) => '^' + x),
    '--',
  ];
  const r = await runGit(args, { cwd: gitdir });
  // With --topo-order, git meets a missing commit with "error: Could not read <oid>" and
  // exits 0, the history cut there: a shorter history would be taken for the whole one.
  if (/^error: Could not read /m.test(r.stderr)) {
    throw new ZzError('git_failed', `git log failed: ${r.stderr.trim().split('\n', 1)[0]}`, {
      code: r.code,
      stderr: r.stderr,
    });
  }
  const buf = r.stdout;
  const out: CommitMessage[] = [];
  // Each field decoded from the buffer on its own: strings split from one decoding of the
  // whole output would each keep all of it alive (V8 sliced strings) as long as an op log
  // holds an oid — megabytes for a Lane of 5,000 Asks.
  const field = (from: number, end: number): [number, number] => {
    const z = buf.indexOf(0, from);
    return [from, z < 0 || z > end ? end : z];
  };
  for (let start = 0; start < buf.length;) {
    let end = buf.indexOf(0x1e, start);
    if (end < 0) end = buf.length;
    const from = buf[start] === 0x0a ? start + 1 : start;
    start = end + 1;
    if (from >= end) continue;
    const [o0, o1] = field(from, end);
    const oid = buf.toString('latin1', o0, o1);
    if (!OID.test(oid)) continue;
    const [p0, p1] = o1 < end ? field(o1 + 1, end) : [end, end];
    const [m0, m1] = p1 < end ? field(p1 + 1, end) : [end, end];
    const parents = buf.toString('latin1', p0, p1);
    out.push({
      oid,
      parents: parents ? parents.split(' ').filter(Boolean) : [],
      message: buf.toString('utf8', m0, m1),
    });
  }
  return out;
}

/** Why the root commits of a checkout cannot be known, when they cannot. */
export type HistoryRoots = { roots: string[] } | { roots: null; reason: 'no_commit' | 'shallow' };

/**
 * The root commits (no parents) of HEAD's history, sorted: what a project's history starts
 * from, the same on every full clone of it. Past `limit` roots (histories merged from many
 * projects), the `limit` smallest names: two clones holding the same roots keep the same
 * ones, and one that gained a root since keeps all but one of the other's. Not known in a
 * shallow clone (its boundary commits have their parents cut off and would pass for roots),
 * nor before the first commit. Replacement refs are ignored: they are local edits of the
 * view, not the history others hold. Walks the whole history: one call, made at init.
 */
export async function historyRoots(gitdir: string, limit: number): Promise<HistoryRoots> {
  const base = ['--git-dir', gitdir];
  const shallow = await runGit([...base, 'rev-parse', '--is-shallow-repository'], {
    cwd: gitdir,
  });
  if (shallow.stdout.toString('utf8').trim() === 'true') return { roots: null, reason: 'shallow' };
  const head = await runGit([...base, 'rev-parse', '--verify', '-q', 'HEAD^{commit}'], {
    cwd: gitdir,
    okCodes: [1, 128],
  });
  if (head.code !== 0) return { roots: null, reason: 'no_commit' };
  const r = await runGit(
    ['--no-replace-objects', ...base, 'rev-list', '--max-parents=0', 'HEAD', '--'],
    { cwd: gitdir },
  );
  const roots = [
    ...new Set(
      r.stdout
        .toString('utf8')
        .split('\n')
        .filter((l) => OID_ANY.test(l)),
    ),
  ].sort();
  if (roots.length === 0) return { roots: null, reason: 'no_commit' };
  return { roots: roots.slice(0, limit) };
}

/** A SHA-1 or SHA-256 object name. */
const OID_ANY = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

/**
 * The type of each object (`commit`, `blob`, `tree`, `tag`) held here, by oid; an oid not held
 * is absent. One `cat-file --batch-check` (sizes and types only: a huge blob is never read).
 * GIT_NO_LAZY_FETCH: a partial clone must not go to its promisor remote for what it lacks.
 */
export async function objectTypes(
  gitdir: string,
  oids: readonly string[],
): Promise<Map<string, string>> {
  const want = [...new Set(oids.filter((o) => OID.test(o)))];
  const out = new Map<string, string>();
  if (want.length === 0) return out;
  const r = await runGit(
    [
      '--no-replace-objects',
      '--git-dir',
      gitdir,
      'cat-file',
      '--batch-check=%(objectname) %(objecttype)',
    ],
    { cwd: gitdir, input: want.join('\n') + '\n', env: { GIT_NO_LAZY_FETCH: '1' } },
  );
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const [oid, type] = line.split(' ');
    if (oid && type && OID.test(oid)) out.set(oid, type);
  }
  return out;
}
