import { ZzError } from '../errors.js';
import {
  confinePath,
  gitFailure,
  intArg,
  resolveCommit,
  spawnGit,
  type HistoryRepo,
} from './history-common.js';
import { printable } from './ref-names.js';

// git_diff: the files a commit changed, with hunks, parsed from one `git diff-tree --raw -p -z`.

export type DiffStatus = 'added' | 'modified' | 'deleted' | 'renamed' | 'copied' | 'type_changed';

export interface DiffHunk {
  old_start: number;
  old_lines: number;
  new_start: number;
  new_lines: number;
  /** Lines with their ' ', '+', '-' kept; "\ No newline at end of file" markers are kept too. */
  lines: string[];
}

export interface DiffFile {
  path: string;
  old_path: string | null;
  status: DiffStatus;
  binary: boolean;
  /** Git modes ("100644", "100755", "120000", "160000"); null on the side where it is absent. */
  old_mode: string | null;
  new_mode: string | null;
  hunks: DiffHunk[];
  /** True when this file's hunks were cut by max_bytes. */
  truncated: boolean;
}

export interface GitDiffOptions {
  commit: string;
  base?: string;
  paths?: string[];
  context_lines?: number;
  max_bytes?: number;
}

export interface GitDiffResult {
  commit: string;
  /** The commit diffed against; null for a root commit (diffed against the empty tree). */
  base: string | null;
  files: DiffFile[];
  truncated: boolean;
}

const DIFF_CONTEXT_DEFAULT = 3;
const DIFF_CONTEXT_MAX = 100;
const DIFF_MAX_BYTES_DEFAULT = 1024 * 1024;
const DIFF_MAX_BYTES_MAX = 64 * 1024 * 1024;
const DIFF_MAX_PATHS = 1000;
const EMPTY_TREE_SHA1 = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
const EMPTY_TREE_SHA256 = '6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321';

interface RawRecord {
  status: string;
  oldMode: string;
  newMode: string;
  oldOid: string;
  newOid: string;
  path: string;
  oldPath: string | null;
}

interface PatchSection {
  binary: boolean;
  indexOld: string | null;
  indexNew: string | null;
  hunks: Array<DiffHunk & { bytes: number }>;
  /** The output was cut inside this section. */
  partial: boolean;
}

const STATUS: Record<string, DiffStatus> = {
  A: 'added',
  M: 'modified',
  D: 'deleted',
  R: 'renamed',
  C: 'copied',
  T: 'type_changed',
};

/** The `--raw -z` records before the patch: unquoted paths, exact statuses. */
function parseRaw(buf: Buffer): { records: RawRecord[]; patchStart: number; complete: boolean } {
  const records: RawRecord[] = [];
  let p = 0;
  const readZ = (): string | null => {
    const e = buf.indexOf(0, p);
    if (e < 0) return null;
    const s = buf.toString('utf8', p, e);
    p = e + 1;
    return s;
  };
  while (p < buf.length && buf[p] === 0x3a) {
    const start = p;
    const head = readZ();
    const a = head?.slice(1).split(' ');
    if (!a || a.length < 5) return { records, patchStart: start, complete: false };
    const status = a[4]!.charAt(0);
    const first = readZ();
    const second = first !== null && (status === 'R' || status === 'C') ? readZ() : undefined;
    if (first === null || second === null) return { records, patchStart: start, complete: false };
    records.push({
      status,
      oldMode: a[0]!,
      newMode: a[1]!,
      oldOid: a[2]!,
      newOid: a[3]!,
      path: second ?? first,
      oldPath: second !== undefined ? first : null,
    });
  }
  // A NUL separates the raw part from the patch.
  if (p < buf.length && buf[p] === 0) p++;
  return { records, patchStart: p, complete: true };
}

const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function parsePatch(buf: Buffer, from: number): PatchSection[] {
  const sections: PatchSection[] = [];
  let pos = from;
  // Lines are handed out as byte ranges and decoded only when kept.
  const nextLine = (): [number, number] | null => {
    if (pos >= buf.length) return null;
    const nl = buf.indexOf(10, pos);
    const s = pos;
    const e = nl < 0 ? buf.length : nl;
    pos = nl < 0 ? buf.length : nl + 1;
    return [s, e];
  };
  const startsWith = (r: [number, number], prefix: string) =>
    r[1] - r[0] >= prefix.length && buf.toString('latin1', r[0], r[0] + prefix.length) === prefix;
  let sec: PatchSection | null = null;
  for (let line = nextLine(); line; line = nextLine()) {
    if (startsWith(line, 'diff --git ')) {
      sec = { binary: false, indexOld: null, indexNew: null, hunks: [], partial: false };
      sections.push(sec);
      continue;
    }
    if (!sec) continue;
    if (startsWith(line, 'index ')) {
      const m = /^index ([0-9a-f]+)\.\.([0-9a-f]+)/.exec(buf.toString('latin1', line[0], line[1]));
      if (m) {
        sec.indexOld = m[1]!;
        sec.indexNew = m[2]!;
      }
    } else if (startsWith(line, 'Binary files ') || startsWith(line, 'GIT binary patch')) {
      sec.binary = true;
    } else if (startsWith(line, '@@ ')) {
      const m = HUNK_HEADER.exec(buf.toString('latin1', line[0], line[1]));
      if (!m) throw new ZzError('git_failed', 'unexpected hunk header in git diff-tree output');
      const hunk = {
        old_start: Number(m[1]),
        old_lines: m[2] === undefined ? 1 : Number(m[2]),
        new_start: Number(m[3]),
        new_lines: m[4] === undefined ? 1 : Number(m[4]),
        lines: [] as string[],
        bytes: 32,
      };
      let oldLeft = hunk.old_lines;
      let newLeft = hunk.new_lines;
      let complete = true;
      while (oldLeft > 0 || newLeft > 0) {
        const l = nextLine();
        if (!l) {
          complete = false;
          break;
        }
        // An empty context line is printed as "" under diff.suppressBlankEmpty.
        const c = l[1] > l[0] ? buf[l[0]] : 0x20;
        if (c === 0x20) {
          oldLeft--;
          newLeft--;
        } else if (c === 0x2d) oldLeft--;
        else if (c === 0x2b) newLeft--;
        else if (c !== 0x5c) {
          throw new ZzError('git_failed', 'unexpected line in a hunk of git diff-tree output');
        }
        hunk.lines.push(l[1] > l[0] ? buf.toString('utf8', l[0], l[1]) : ' ');
        hunk.bytes += l[1] - l[0] + 1;
      }
      // "\ No newline at end of file" follows the last line it applies to, possibly the final one.
      if (complete && pos < buf.length && buf[pos] === 0x5c) {
        const l = nextLine()!;
        hunk.lines.push(buf.toString('utf8', l[0], l[1]));
        hunk.bytes += l[1] - l[0] + 1;
      }
      if (!complete) {
        sec.partial = true;
        break;
      }
      sec.hunks.push(hunk);
    }
  }
  return sections;
}

function emptyTreeFor(oid: string): string {
  return oid.length === 64 ? EMPTY_TREE_SHA256 : EMPTY_TREE_SHA1;
}

/**
 * The files `commit` changed against its first parent (a root commit against the empty tree)
 * or against `base`, with hunks. Renames are detected (-M, git's default 50% similarity).
 * `max_bytes` bounds the payload (paths and hunk lines); past it no further hunks or files are
 * added and `truncated` is set (and the cut file's own `truncated`).
 */
export async function gitDiff(repo: HistoryRepo, opts: GitDiffOptions): Promise<GitDiffResult> {
  const context = intArg(
    opts.context_lines,
    'context_lines',
    0,
    DIFF_CONTEXT_MAX,
    DIFF_CONTEXT_DEFAULT,
  );
  const maxBytes = intArg(
    opts.max_bytes,
    'max_bytes',
    1,
    DIFF_MAX_BYTES_MAX,
    DIFF_MAX_BYTES_DEFAULT,
  );
  let paths: string[] = [];
  if (opts.paths !== undefined && opts.paths !== null) {
    if (!Array.isArray(opts.paths) || opts.paths.length > DIFF_MAX_PATHS) {
      throw new ZzError('invalid_argument', `paths must be an array of at most ${DIFF_MAX_PATHS}`, {
        field: 'paths',
      });
    }
    paths = opts.paths.map((p, i) => confinePath(p, `paths[${i}]`));
  }
  const commit = await resolveCommit(repo, opts.commit, 'commit');
  let base: string | null;
  if (opts.base !== undefined && opts.base !== null) {
    base = (await resolveCommit(repo, opts.base, 'base')).oid;
  } else {
    base = commit.parents[0] ?? null;
  }

  const args = [
    'diff-tree',
    '-r',
    '--raw',
    '-p',
    '-z',
    '-M',
    '--no-color',
    '--full-index',
    '--no-ext-diff',
    '--no-textconv',
    `-U${context}`,
    base ?? emptyTreeFor(commit.oid),
    commit.oid,
  ];
  if (paths.length) args.push('--', ...paths);
  // Headers and context make the output larger than the payload; past this much the payload
  // surely exceeds max_bytes, so git is stopped rather than read to the end.
  const cap = 2 * maxBytes + 8 * 1024 * 1024;
  const r = await spawnGit(repo.gitdir, args, { cap });
  if (!r.cut && r.code !== 0) throw gitFailure('diff-tree', r);

  const raw = parseRaw(r.stdout);
  const sections = parsePatch(r.stdout, raw.patchStart);
  const files: DiffFile[] = [];
  let truncated = r.cut || !raw.complete;
  let used = 0;
  let s = 0;
  for (const rec of raw.records) {
    // A type change (file <-> symlink) is printed as a deletion followed by a creation.
    const secs = sections.slice(s, s + (rec.status === 'T' ? 2 : 1));
    s += secs.length;
    if (secs.length < (rec.status === 'T' ? 2 : 1)) {
      truncated = true;
      break;
    }
    const first = secs[0]!;
    if (
      rec.status !== 'T' &&
      first.indexOld !== null &&
      (first.indexOld !== rec.oldOid || first.indexNew !== rec.newOid)
    ) {
      throw new ZzError(
        'git_failed',
        `git diff-tree output for "${printable(rec.path)}" is out of order`,
      );
    }
    const cost =
      64 + Buffer.byteLength(rec.path) + (rec.oldPath ? Buffer.byteLength(rec.oldPath) : 0);
    if (used + cost > maxBytes) {
      truncated = true;
      break;
    }
    used += cost;
    const file: DiffFile = {
      path: rec.path,
      old_path: rec.oldPath,
      status: STATUS[rec.status] ?? 'modified',
      binary: secs.some((x) => x.binary),
      old_mode: /^0+$/.test(rec.oldMode) ? null : rec.oldMode,
      new_mode: /^0+$/.test(rec.newMode) ? null : rec.newMode,
      hunks: [],
      truncated: false,
    };
    files.push(file);
    let stop = false;
    for (const sec of secs) {
      for (const h of sec.hunks) {
        if (used + h.bytes > maxBytes) {
          stop = true;
          break;
        }
        used += h.bytes;
        file.hunks.push({
          old_start: h.old_start,
          old_lines: h.old_lines,
          new_start: h.new_start,
          new_lines: h.new_lines,
          lines: h.lines,
        });
      }
      if (stop) break;
      if (sec.partial) stop = true;
    }
    if (stop) {
      file.truncated = true;
      truncated = true;
      break;
    }
  }
  return { commit: commit.oid, base, files, truncated };
}
