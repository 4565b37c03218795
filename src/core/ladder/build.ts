import { ZzError } from '../../errors.js';
import { runGit, type GitRepository } from '../../git/index.js';
import { ACTOR_RE } from '../../schema/ids.js';
import {
  MAX_SUMMARY_BYTES,
  MAX_TITLE_CHARS,
  REPO_RUNG_PATH,
  RUNG_PATH_PREFIX,
  rungDoc,
  type Rung,
  type RungAnchor,
  type RungGenerator,
  type RungKind,
} from '../../schema/rung.js';
import type { ZzRepo } from '../zz-repo.js';
import {
  EXTRACT_VERSION,
  MAX_FILE_BYTES,
  skipReason,
  summarizeChangeset,
  summarizeDirectory,
  summarizeFile,
  summarizeRelease,
  summarizeRepo,
  type ChangesetCommit,
  type DirectoryChild,
  type Extract,
  type PackageInfo,
  type ReleaseRange,
} from './extract.js';
import { commitTree, lsTree, type TreeItem } from './git-tree.js';
import { ladderEntity, sha } from './ladder.js';
import {
  rungPlacementProblem,
  type LadderBuildArgs,
  type LadderState,
  type RungRecord,
} from './ladder-state.js';

// `zz ladder build` (DESIGN §6): every file, directory and the repo at the default-branch head,
// releases from tags and the last N commits, summarised with no model and no network, written
// as ONE ladder commit (one `ladder_build` op), or none when nothing changed.
//
// Incremental by construction: each rung records an inputs_hash of exactly what produced it
// (a file: its path and blob oid; a folder: its children's summaries, sizes and package.json;
// plus the generator's version). A rung whose inputs did not change is not rewritten and its
// blob is not even read. A folder whose inputs are unchanged but whose tree moved (a file body
// changed without changing its summary) is only re-anchored, so `stale` stays meaningful.
// Renamed or duplicated files reuse a summary by blob oid instead of re-reading the blob.

export const BUILD_VERSION = 'build-1';

/**
 * Writes the prose. The extractive one is the default; `--model` will plug in here (and fall
 * back to the extractive text on failure). Implementations may be async.
 */
export interface Summarizer {
  readonly generator: RungGenerator;
  file(path: string, content: Buffer): Extract | null | Promise<Extract | null>;
  directory(
    path: string,
    children: readonly DirectoryChild[],
    readme: { summary: string } | null,
    pkg: PackageInfo | null,
  ): Extract | Promise<Extract>;
  repo(
    readme: { title?: string | null; summary: string } | null,
    topChildren: readonly DirectoryChild[],
    pkg: PackageInfo | null,
    name: string,
  ): Extract | Promise<Extract>;
  release(
    tag: string,
    commits: ReadonlyArray<{ subject: string }>,
    range: ReleaseRange,
  ): Extract | Promise<Extract>;
  changeset(commit: ChangesetCommit): Extract | Promise<Extract>;
}

export const extractiveSummarizer: Summarizer = {
  generator: { method: 'extractive', version: EXTRACT_VERSION },
  file: summarizeFile,
  directory: summarizeDirectory,
  repo: summarizeRepo,
  release: summarizeRelease,
  changeset: summarizeChangeset,
};

export interface BuildProgress {
  phase: 'files' | 'directories' | 'history' | 'commit';
  done: number;
  total: number;
}

export interface LadderBuildOptions {
  /** Who the rungs are written as (the `zz ladder build` user). */
  actor: string;
  onProgress?: (p: BuildProgress) => void;
  /** How many of the latest commits get a changeset rung (default 20; 0 for none). */
  changesetsLimit?: number;
  /** How many of the latest tags (by version order) get a release rung (default 50). */
  releasesLimit?: number;
  /** Not available yet: a model-written Ladder is the next step. */
  model?: string;
  summarizer?: Summarizer;
}

export interface LadderBuildResult {
  /** The ladder revision after the build (the previous one when nothing changed). */
  revision: string | null;
  committed: boolean;
  /** The default-branch commit the tree rungs are anchored to. */
  head: string;
  /** Rungs written (including re-anchored ones). */
  written: number;
  /** Of those, rungs whose text was unchanged and only moved their anchor to this head. */
  reanchored: number;
  unchanged: number;
  removed: number;
  /** Files (blobs and links) in the tree at head. */
  files: number;
  /** Blobs actually read and summarised (the rest were unchanged or reused by oid). */
  summarized: number;
  /** Rungs in the Ladder after the build. */
  rungs: number;
  /** Tree entries given no rung: paths a rung cannot have (e.g. `*.lock` components). */
  skipped: number;
  ms: number;
}

const READ_WINDOW = 32;
const DEFAULT_CHANGESETS = 20;
const DEFAULT_RELEASES = 50;
const MAX_DETAIL_FILES = 200;
const README_RE = /^readme(?:\.[\w.-]+)?$/i;

function basename(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? p : p.slice(i + 1);
}

function dirname(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? '' : p.slice(0, i);
}

/**
 * What a file's summary may depend on besides its bytes: its name, the parent folder's name for
 * an index-like file (an `index.ts` speaks for its folder) and any test-like folder above it.
 * Two files with the same blob and the same key get the same summary, so a moved or copied
 * file reuses it without a read. (Mirrors what extract.ts reads from a path.)
 */
function reuseKey(path: string, oid: string): string {
  const parts = path.split('/');
  const name = parts.pop()!;
  const stem = name.replace(/^(\.?[^.]*).*$/, '$1').toLowerCase();
  const parent = /^(?:index|mod|main|lib|__init__|init)$/.test(stem)
    ? (parts[parts.length - 1] ?? '')
    : '';
  const testish = parts.filter((p) => /test|spec/i.test(p)).join('/');
  return `${oid}\0${name}\0${parent}\0${testish}`;
}

function kib(n: number): string {
  if (n >= 1024 * 1024) return `${(n / (1024 * 1024)).toFixed(1)} MiB`;
  return `${Math.max(1, Math.round(n / 1024))} KiB`;
}

/** Rank-relevant size, bucketed (4 per decade) so small edits do not change a folder's inputs. */
function sizeBucket(size: number): number | undefined {
  if (size <= 0) return undefined;
  return Math.round(10 ** (Math.round(Math.log10(size) * 4) / 4));
}

function clipBytes(s: string, max: number): string {
  if (Buffer.byteLength(s, 'utf8') <= max) return s;
  let out = s.slice(0, max);
  while (Buffer.byteLength(out, 'utf8') > max - 3) out = out.slice(0, -16);
  return out + '…';
}

/** Makes an extract fit the rung schema whatever a summariser returned. */
function tidy(e: Extract, fallbackTitle: string): Extract {
  const title =
    (e.title ?? '').trim().slice(0, MAX_TITLE_CHARS) ||
    fallbackTitle.slice(0, MAX_TITLE_CHARS) ||
    'untitled';
  const summary = clipBytes((e.summary ?? '').trim() || `${title}.`, MAX_SUMMARY_BYTES);
  const symbols = [
    ...new Set(
      (e.symbols ?? []).filter((s) => typeof s === 'string' && s.length > 0 && s.length <= 200),
    ),
  ].slice(0, 200);
  return { title, summary, symbols };
}

const METHOD_RANK: Record<RungGenerator['method'], number> = { extractive: 0, model: 1, human: 2 };

/**
 * Whether a rung written another way stands against this build while its object is unchanged:
 * a human's over any build, a model's over an extractive one.
 */
function outranks(written: RungGenerator, build: RungGenerator): boolean {
  return METHOD_RANK[written.method] > METHOD_RANK[build.method];
}

function sameGenerator(a: RungGenerator, b: RungGenerator): boolean {
  return (
    a.method === b.method && a.version === b.version && (a.model ?? null) === (b.model ?? null)
  );
}

interface Child {
  name: string;
  kind: 'file' | 'directory';
  item: TreeItem;
  /** The rung written for it, or null (a path a rung cannot have). */
  record: RungRecord | null;
  extract: Extract;
}

function packageInfo(content: Buffer): PackageInfo | null {
  try {
    const j = JSON.parse(content.toString('utf8')) as Record<string, unknown>;
    if (!j || typeof j !== 'object') return null;
    const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
    const info: PackageInfo = {};
    if (str(j.name)) info.name = str(j.name)!;
    if (str(j.description)) info.description = str(j.description)!;
    if (str(j.version)) info.version = str(j.version)!;
    if (Array.isArray(j.keywords))
      info.keywords = j.keywords.filter((k): k is string => typeof k === 'string');
    return info;
  } catch {
    return null;
  }
}

class NothingToWrite extends Error {}

export async function ladderBuild(
  repo: ZzRepo,
  opts: LadderBuildOptions,
): Promise<LadderBuildResult> {
  const started = performance.now();
  if (opts.model !== undefined) {
    throw new ZzError(
      'invalid_argument',
      `--model is not available yet: zz ladder build writes extractive summaries only (no model, no network) in this version; run it without --model`,
      { field: 'model' },
    );
  }
  if (typeof opts.actor !== 'string' || !ACTOR_RE.test(opts.actor)) {
    throw new ZzError(
      'invalid_argument',
      `actor ${JSON.stringify(opts.actor)} must be an email, or email[agent]`,
      {
        field: 'actor',
      },
    );
  }
  const git = repo.git;
  if (!git)
    throw new ZzError(
      'precondition_failed',
      `repository ${repo.key} has no git checkout to build a Ladder from`,
    );
  const summarizer = opts.summarizer ?? extractiveSummarizer;
  const gen = summarizer.generator;
  const GEN = [BUILD_VERSION, gen.method, gen.model ?? null, gen.version];
  const progress = opts.onProgress ?? (() => {});

  const branch = await repo.defaultBranch();
  const head = await git.refs.read(`refs/heads/${branch}`).catch(() => null);
  if (!head) {
    throw new ZzError(
      'precondition_failed',
      `the default branch ${branch} has no commits yet; commit something first`,
    );
  }
  const root = await commitTree(git, head);
  if (!root) throw new ZzError('git_failed', `refs/heads/${branch} does not point at a commit`);
  const headCommit = head;

  const entity = ladderEntity(repo);
  const [items, snap] = await Promise.all([
    lsTree(git.gitdir, head, { sizes: true }),
    entity.read(),
  ]);
  const prev = snap.state;
  const desired = new Map<string, RungRecord>();
  const anchorAt = (oid: string): RungAnchor => ({ commit: headCommit, oid });

  // A previous rung as a record (generator kept only when it is not the build's own).
  const recordOf = (r: Rung, anchor?: RungAnchor): RungRecord => {
    const { author: _a, written_at: _w, generator, ...rest } = r;
    return {
      ...rest,
      ...(anchor ? { anchor } : {}),
      ...(sameGenerator(generator, gen) ? {} : { generator }),
    };
  };
  const extractOf = (r: RungRecord): Extract => ({
    title: r.title,
    summary: r.summary,
    symbols: r.symbols ?? [],
  });
  /** The previous rung when it may stand: same inputs, or a human/model rung on the same object. */
  const keep = (
    path: string,
    kind: RungKind,
    inputs: string,
    oid: string,
  ): { rung: Rung; anchorMoved: boolean } | null => {
    const p = prev.get(path);
    if (!p || p.kind !== kind) return null;
    const sameObject = p.anchor?.oid === oid;
    if (outranks(p.generator, gen)) return sameObject ? { rung: p, anchorMoved: false } : null;
    if (p.inputs_hash !== inputs || !sameGenerator(p.generator, gen)) return null;
    return { rung: p, anchorMoved: !sameObject };
  };
  let skipped = 0;
  const checkedAt = new Date().toISOString();
  const makeRecord = (
    path: string,
    kind: RungKind,
    e: Extract,
    inputs: string,
    anchor: RungAnchor,
    detail?: string,
  ): RungRecord | null => {
    const t = tidy(e, basename(path) || path);
    const rec: RungRecord = {
      path,
      kind,
      title: t.title,
      summary: t.summary,
      ...(detail ? { detail } : {}),
      ...(t.symbols.length > 0 ? { symbols: t.symbols } : {}),
      anchor,
      inputs_hash: inputs,
    };
    const check = rungDoc.safeParse({
      ...rec,
      generator: gen,
      author: opts.actor,
      written_at: checkedAt,
    });
    if (!check.success) {
      skipped++;
      return null;
    }
    return rec;
  };

  // --- files -------------------------------------------------------------------------------
  const children = new Map<string, Child[]>();
  const dirs: TreeItem[] = [];
  const fileItems: TreeItem[] = [];
  for (const it of items) {
    const parent = dirname(it.path);
    let list = children.get(parent);
    if (!list) children.set(parent, (list = []));
    const isDir = it.type !== 'blob';
    list.push({
      name: basename(it.path),
      kind: isDir ? 'directory' : 'file',
      item: it,
      record: null,
      extract: { title: basename(it.path), summary: '', symbols: [] },
    });
    if (it.type === 'tree') dirs.push(it);
    else if (it.type === 'blob') fileItems.push(it);
  }
  const childOf = new Map<string, Child>();
  for (const list of children.values()) for (const c of list) childOf.set(c.item.path, c);

  // Summaries by blob oid (and the path features a summary depends on): this build's, and the
  // previous build's, so that renames and copies need no read.
  const memo = new Map<string, Extract | Promise<Extract>>();
  let seeded = false;
  const seedMemo = () => {
    if (seeded) return;
    seeded = true;
    for (const r of prev.values()) {
      if (r.kind !== 'file' || !r.anchor || r.generator.method !== gen.method) continue;
      if (!sameGenerator(r.generator, gen) || r.detail !== undefined) continue;
      if (r.inputs_hash !== sha(GEN, 'file', r.path, r.anchor.oid)) continue;
      memo.set(reuseKey(r.path, r.anchor.oid), extractOf(r));
    }
  };

  let filesDone = 0;
  const fileTotal = fileItems.length;
  const tick = () => progress({ phase: 'files', done: ++filesDone, total: fileTotal });
  const toRead: Array<{ item: TreeItem; child: Child; inputs: string; valid: boolean }> = [];
  for (const it of fileItems) {
    const child = childOf.get(it.path)!;
    const valid = rungPlacementProblem(it.path, 'file') === null;
    if (!valid) {
      skipped++;
      // No rung, but the folder still counts it (census) by name.
      tick();
      continue;
    }
    const inputs = sha(GEN, 'file', it.path, it.oid);
    const k = keep(it.path, 'file', inputs, it.oid);
    if (k && !k.anchorMoved) {
      child.record = recordOf(k.rung);
      child.extract = extractOf(child.record);
      tick();
      continue;
    }
    toRead.push({ item: it, child, inputs, valid });
  }
  let summarized = 0;
  const blobExtract = async (it: TreeItem): Promise<Extract> => {
    const name = basename(it.path);
    if (it.mode === '120000') {
      const obj = await git.catFile.read(it.oid);
      const target = obj ? obj.data.toString('utf8').slice(0, 300) : '?';
      return { title: name, summary: `Symbolic link to ${target}.`, symbols: [] };
    }
    if (it.size > MAX_FILE_BYTES) {
      return { title: name, summary: `Large file (${kib(it.size)}), not summarised.`, symbols: [] };
    }
    const binaryByName = skipReason(it.path, Buffer.alloc(0)) === 'binary';
    if (binaryByName) {
      return { title: name, summary: `Binary file (${kib(it.size)}).`, symbols: [] };
    }
    const obj = await git.catFile.read(it.oid);
    if (!obj) throw new ZzError('git_failed', `blob ${it.oid} (${it.path}) is missing`);
    summarized++;
    const e = await summarizer.file(it.path, obj.data);
    if (e) return e;
    const why = skipReason(it.path, obj.data);
    return {
      title: name,
      summary:
        why === 'too_large'
          ? `Large file (${kib(obj.data.length)}), not summarised.`
          : `Binary file (${kib(obj.data.length)}).`,
      symbols: [],
    };
  };
  let nextRead = 0;
  const worker = async () => {
    while (nextRead < toRead.length) {
      const job = toRead[nextRead++]!;
      const key = reuseKey(job.item.path, job.item.oid);
      let e: Extract | Promise<Extract> | undefined = memo.get(key);
      if (!e) {
        seedMemo();
        e = memo.get(key);
      }
      if (!e) {
        // Set before awaiting, so that a copy read by another worker meanwhile waits for it.
        const p = blobExtract(job.item);
        memo.set(key, p);
        e = await p;
        memo.set(key, e);
      }
      e = await e;
      job.child.record = makeRecord(job.item.path, 'file', e, job.inputs, anchorAt(job.item.oid));
      if (job.child.record) job.child.extract = extractOf(job.child.record);
      tick();
    }
  };
  await Promise.all(
    Array.from({ length: Math.min(READ_WINDOW, Math.max(1, toRead.length)) }, worker),
  );

  // --- folders, bottom-up, then the repo ----------------------------------------------------
  const pkgMemo = new Map<string, PackageInfo | null>();
  const readPkg = async (oid: string): Promise<PackageInfo | null> => {
    if (!pkgMemo.has(oid)) {
      const obj = await git.catFile.read(oid);
      pkgMemo.set(oid, obj && obj.data.length <= MAX_FILE_BYTES ? packageInfo(obj.data) : null);
    }
    return pkgMemo.get(oid)!;
  };
  const depth = (p: string) => (p === '' ? 0 : p.split('/').length);
  const folders: Array<{ path: string; oid: string; kind: 'directory' | 'repo' }> = [
    ...dirs.map((d) => ({ path: d.path, oid: d.oid, kind: 'directory' as const })),
    { path: '', oid: root.tree, kind: 'repo' as const },
  ].sort((a, b) => depth(b.path) - depth(a.path));
  let dirsDone = 0;
  for (const f of folders) {
    const list = (children.get(f.path) ?? [])
      .slice()
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const dirChildren: DirectoryChild[] = list.map((c) => {
      const size = c.kind === 'file' ? sizeBucket(c.item.size) : undefined;
      return {
        name: c.name,
        kind: c.kind,
        title: c.extract.title,
        // A folder speaks for a subfolder by its first line (lead and census), never by the
        // subfolder's own list of children: so a change deep down stops cascading upward as
        // soon as a folder's first line is unchanged.
        summary: c.kind === 'directory' ? c.extract.summary.split('\n')[0]! : c.extract.summary,
        ...(c.extract.symbols.length > 0 ? { symbols: c.extract.symbols } : {}),
        ...(size === undefined ? {} : { size }),
      };
    });
    const pkgChild = list.find((c) => c.name === 'package.json' && c.kind === 'file');
    const readmeChild =
      list.find((c) => c.kind === 'file' && /^readme\.md$/i.test(c.name) && c.extract.summary) ??
      list.find((c) => c.kind === 'file' && README_RE.test(c.name) && c.extract.summary);
    const rungPath = f.kind === 'repo' ? REPO_RUNG_PATH : f.path;
    const inputs = sha(
      GEN,
      f.kind,
      rungPath,
      f.kind === 'repo' ? repo.key : null,
      pkgChild?.item.oid ?? null,
      dirChildren.map((c) => [c.name, c.kind, c.title, c.summary, c.symbols ?? [], c.size ?? null]),
    );
    const self = f.kind === 'repo' ? null : childOf.get(f.path)!;
    if (f.kind === 'directory' && rungPlacementProblem(f.path, 'directory') !== null) {
      skipped++;
    } else {
      const k = keep(rungPath, f.kind, inputs, f.oid);
      let rec: RungRecord | null;
      if (k) {
        rec = recordOf(k.rung, k.anchorMoved ? anchorAt(f.oid) : undefined);
      } else {
        const pkg = pkgChild ? await readPkg(pkgChild.item.oid) : null;
        const readme = readmeChild
          ? { title: readmeChild.extract.title, summary: readmeChild.extract.summary }
          : null;
        const e =
          f.kind === 'repo'
            ? await summarizer.repo(readme, dirChildren, pkg, repo.key)
            : await summarizer.directory(f.path, dirChildren, readme, pkg);
        rec = makeRecord(rungPath, f.kind, e, inputs, anchorAt(f.oid));
      }
      if (rec) {
        desired.set(rungPath, rec);
        if (self) {
          self.record = rec;
          self.extract = extractOf(rec);
        }
      }
    }
    progress({ phase: 'directories', done: ++dirsDone, total: folders.length });
  }
  // Submodules: a folder in the checkout, summarised by what it pins.
  for (const it of items) {
    if (it.type !== 'commit' || rungPlacementProblem(it.path, 'directory') !== null) continue;
    const inputs = sha(GEN, 'submodule', it.path, it.oid);
    const k = keep(it.path, 'directory', inputs, it.oid);
    const rec = k
      ? recordOf(k.rung, k.anchorMoved ? anchorAt(it.oid) : undefined)
      : makeRecord(
          it.path,
          'directory',
          {
            title: `${basename(it.path)}/`,
            summary: `Git submodule pinned at commit ${it.oid.slice(0, 12)}.`,
            symbols: [],
          },
          inputs,
          anchorAt(it.oid),
        );
    if (rec) desired.set(it.path, rec);
  }
  for (const c of childOf.values())
    if (c.kind === 'file' && c.record) desired.set(c.item.path, c.record);

  // --- history: changesets and releases -----------------------------------------------------
  progress({ phase: 'history', done: 0, total: 1 });
  const changesets = await changesetRecords(
    git,
    headCommit,
    opts.changesetsLimit ?? DEFAULT_CHANGESETS,
    {
      gen: GEN,
      prev,
      keep,
      recordOf,
      makeRecord,
      summarizer,
    },
  );
  for (const r of changesets) desired.set(r.path, r);
  const { records: releases, tags } = await releaseRecords(
    git,
    opts.releasesLimit ?? DEFAULT_RELEASES,
    {
      gen: GEN,
      prev,
      keep,
      recordOf,
      makeRecord,
      summarizer,
    },
  );
  for (const r of releases) desired.set(r.path, r);
  progress({ phase: 'history', done: 1, total: 1 });

  // --- one commit ---------------------------------------------------------------------------
  const plan = (state: LadderState) => {
    const upsert: RungRecord[] = [];
    let reanchored = 0;
    let unchanged = 0;
    for (const [p, rec] of desired) {
      const s = state.get(p);
      if (
        s &&
        s.kind === rec.kind &&
        s.inputs_hash === rec.inputs_hash &&
        s.anchor?.oid === rec.anchor?.oid
      ) {
        if (sameGenerator(s.generator, rec.generator ?? gen)) {
          unchanged++;
          continue;
        }
      }
      if (
        s &&
        outranks(s.generator, gen) &&
        s.kind === rec.kind &&
        s.anchor?.oid === rec.anchor?.oid
      ) {
        unchanged++; // a human's (or a model's) rung on the very same object stands
        continue;
      }
      if (s && s.kind === rec.kind && s.inputs_hash === rec.inputs_hash) reanchored++;
      upsert.push(rec);
    }
    const remove: string[] = [];
    for (const [p, s] of state) {
      if (desired.has(p)) continue;
      if (s.kind === 'file' || s.kind === 'directory') remove.push(p);
      else if (s.kind === 'release' && !outranks(s.generator, gen)) {
        if (!tags.has(p.slice(RUNG_PATH_PREFIX.release.length))) remove.push(p);
      }
    }
    return { upsert, remove, reanchored, unchanged };
  };

  let counts = plan(prev);
  let revision = snap.revision;
  let committed = false;
  let rungs = prev.size;
  if (counts.upsert.length > 0 || counts.remove.length > 0) {
    progress({ phase: 'commit', done: 0, total: 1 });
    try {
      const r = await entity.mutate({
        actor: opts.actor,
        // Decided again against the state the commit applies to: another writer may have
        // landed rungs since this build read the Ladder.
        decide: (state) => {
          counts = plan(state);
          if (counts.upsert.length === 0 && counts.remove.length === 0) throw new NothingToWrite();
          const args: LadderBuildArgs = {
            branch,
            head: headCommit,
            generator: gen,
            upsert: counts.upsert,
            remove: counts.remove,
          };
          return {
            op: 'ladder_build',
            summary: `ladder_build at ${headCommit.slice(0, 12)}: ${counts.upsert.length} written, ${counts.remove.length} removed`,
            args,
          };
        },
        result: (state) => state.size,
      });
      revision = r.revision;
      committed = true;
      rungs = r.result;
    } catch (e) {
      if (!(e instanceof NothingToWrite)) throw e;
      counts = { upsert: [], remove: [], reanchored: 0, unchanged: desired.size };
      const now = await entity.read();
      revision = now.revision;
      rungs = now.state.size;
    }
    progress({ phase: 'commit', done: 1, total: 1 });
  }
  return {
    revision,
    committed,
    head: headCommit,
    written: counts.upsert.length,
    reanchored: counts.reanchored,
    unchanged: counts.unchanged,
    removed: counts.remove.length,
    files: fileItems.length,
    summarized,
    rungs,
    skipped,
    ms: Math.round(performance.now() - started),
  };
}

interface HistoryCtx {
  gen: unknown[];
  prev: LadderState;
  keep: (
    path: string,
    kind: RungKind,
    inputs: string,
    oid: string,
  ) => { rung: Rung; anchorMoved: boolean } | null;
  recordOf: (r: Rung, anchor?: RungAnchor) => RungRecord;
  makeRecord: (
    path: string,
    kind: RungKind,
    e: Extract,
    inputs: string,
    anchor: RungAnchor,
    detail?: string,
  ) => RungRecord | null;
  summarizer: Summarizer;
}

async function gitText(git: GitRepository, args: string[]): Promise<string> {
  const r = await runGit(['--git-dir', git.gitdir, ...args], { cwd: git.gitdir });
  return r.stdout.toString('utf8');
}

/** The last `limit` commits of the default branch as `_changesets/<sha>` rungs. */
async function changesetRecords(
  git: GitRepository,
  head: string,
  limit: number,
  ctx: HistoryCtx,
): Promise<RungRecord[]> {
  if (limit <= 0) return [];
  const shas = (await gitText(git, ['rev-list', '-n', String(limit), head]))
    .split('\n')
    .filter(Boolean);
  const out: RungRecord[] = [];
  const missing: string[] = [];
  for (const c of shas) {
    const path = RUNG_PATH_PREFIX.changeset + c;
    const k = ctx.keep(path, 'changeset', sha(ctx.gen, 'changeset', c), c);
    if (k) out.push(ctx.recordOf(k.rung));
    else missing.push(c);
  }
  if (missing.length === 0) return out;
  // One `git log` for every new commit: subject, body and per-file line counts vs first parent.
  const text = await gitText(git, [
    'log',
    '--no-walk=unsorted',
    '--no-renames',
    '--diff-merges=first-parent',
    '--numstat',
    '--format=%x1e%H%x1f%s%x1f%b%x1d',
    ...missing,
    '--',
  ]);
  for (const rec of text.split('\x1e')) {
    if (!rec.trim()) continue;
    const [oid, subject, rest] = rec.split('\x1f', 3) as [string, string, string | undefined];
    if (!/^[0-9a-f]{40}$/.test(oid)) continue;
    const cut = (rest ?? '').lastIndexOf('\x1d');
    const body = cut < 0 ? (rest ?? '') : rest!.slice(0, cut);
    const stat = cut < 0 ? '' : rest!.slice(cut + 1);
    const paths: string[] = [];
    let insertions = 0;
    let deletions = 0;
    const lines: string[] = [];
    for (const line of stat.split('\n')) {
      const m = /^(\d+|-)\t(\d+|-)\t(.+)$/.exec(line);
      if (!m) continue;
      const path = m[3]!.replace(/^"(.*)"$/, '$1');
      paths.push(path);
      insertions += m[1] === '-' ? 0 : Number(m[1]);
      deletions += m[2] === '-' ? 0 : Number(m[2]);
      if (lines.length < MAX_DETAIL_FILES) lines.push(`${m[1]}\t${m[2]}\t${path}`);
    }
    const e = await ctx.summarizer.changeset({
      oid,
      subject,
      body: body.trim(),
      stats: { files: paths.length, insertions, deletions },
      paths,
    });
    const detail =
      `${subject}\n\n${body.trim()}\n\n`.replace(/\n{3,}/g, '\n\n') +
      `Files (+added -deleted path):\n${lines.join('\n')}${paths.length > lines.length ? `\n… and ${paths.length - lines.length} more` : ''}\n`;
    const r = ctx.makeRecord(
      RUNG_PATH_PREFIX.changeset + oid,
      'changeset',
      e,
      sha(ctx.gen, 'changeset', oid),
      { commit: oid, oid },
      detail.slice(0, 64 * 1024),
    );
    if (r) out.push(r);
  }
  return out;
}

/** The latest tags (version order) as `_releases/<tag>` rungs, each with its commits since the previous tag. */
async function releaseRecords(
  git: GitRepository,
  limit: number,
  ctx: HistoryCtx,
): Promise<{ records: RungRecord[]; tags: Set<string> }> {
  const text = await gitText(git, [
    'for-each-ref',
    '--sort=v:refname',
    '--format=%(refname:strip=2)%00%(objecttype)%00%(objectname)%00%(*objecttype)%00%(*objectname)',
    'refs/tags',
  ]);
  const all: Array<{ tag: string; commit: string }> = [];
  const tags = new Set<string>();
  for (const line of text.split('\n')) {
    const [tag, type, oid, ptype, poid] = line.split('\0');
    if (!tag) continue;
    tags.add(tag);
    const commit = type === 'commit' ? oid : ptype === 'commit' ? poid : undefined;
    if (commit && /^[0-9a-f]{40}$/.test(commit)) all.push({ tag, commit });
  }
  const records: RungRecord[] = [];
  const start = Math.max(0, all.length - Math.max(0, limit));
  const jobs: Array<() => Promise<void>> = [];
  for (let i = start; i < all.length; i++) {
    const { tag, commit } = all[i]!;
    const before = i > 0 ? all[i - 1]! : null;
    const path = RUNG_PATH_PREFIX.release + tag;
    if (rungPlacementProblem(path, 'release') !== null) continue;
    const inputs = sha(
      ctx.gen,
      'release',
      tag,
      commit,
      before?.tag ?? null,
      before?.commit ?? null,
    );
    const k = ctx.keep(path, 'release', inputs, commit);
    if (k) {
      records.push(ctx.recordOf(k.rung));
      continue;
    }
    jobs.push(async () => {
      const range = before && before.commit !== commit ? [`${before.commit}..${commit}`] : [commit];
      const subjects = (await gitText(git, ['log', '-n', '1000', '--format=%s', ...range, '--']))
        .split('\n')
        .filter(Boolean);
      const e = await ctx.summarizer.release(
        tag,
        subjects.map((s) => ({ subject: s })),
        { from: before?.tag ?? null, to: tag },
      );
      const r = ctx.makeRecord(path, 'release', e, inputs, { commit, oid: commit });
      if (r) records.push(r);
    });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(4, jobs.length) }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
  return { records, tags };
}
