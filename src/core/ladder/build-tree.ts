import { ZzError } from '../../errors.js';
import type { GitObject, TreeItem } from '../../git/index.js';
import { REPO_RUNG_PATH } from '../../schema/rung.js';
import {
  basename,
  dirname,
  EXTRACTIVE,
  extractOf,
  sameGenerator,
  type BuildContext,
} from './build-context.js';
import {
  MAX_FILE_BYTES,
  skipReason,
  type DirectoryChild,
  type Extract,
  type PackageInfo,
} from './extract.js';
import { rungPlacementProblem, type RungRecord } from './ladder-state.js';

// The tree phases of `zz ladder build`: every file at head (read through a window of parallel
// blob reads, reusing summaries by blob oid for renames and copies), then every folder
// bottom-up, then the repo, then submodules. A folder is summarised from its children's
// summaries, so it is only rewritten when one of them changed.

const READ_WINDOW = 32;
// Blobs are asked of git ahead of the summariser, READ_BATCH ids to one pipe write (a write per
// blob showed in profiles of a full build), at most READ_AHEAD (≤ 512 KiB each) in flight.
const READ_BATCH = 32;
const READ_AHEAD = 64;
const README_RE = /^readme(?:\.[\w.-]+)?$/i;

interface Child {
  name: string;
  kind: 'file' | 'directory';
  item: TreeItem;
  /** The rung written for it, or null (a path a rung cannot have). */
  record: RungRecord | null;
  extract: Extract;
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

/** Whether blobText reads the blob (a link's target, a text file), or answers from its shape. */
function readsBlob(it: TreeItem): boolean {
  if (it.mode === '120000') return true;
  return it.size <= MAX_FILE_BYTES && skipReason(it.path, Buffer.alloc(0)) !== 'binary';
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

const byName = (a: Child, b: Child): number => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/** The tree phases over `items` (ls-tree of head) and the head's root tree. */
export class TreePhase {
  private readonly children = new Map<string, Child[]>();
  private readonly childOf = new Map<string, Child>();
  private readonly dirs: TreeItem[] = [];
  readonly fileItems: TreeItem[] = [];
  // Summaries by blob oid and the path features a summary depends on: this build's, and the
  // previous build's (seeded lazily), so that renames and copies need no read.
  private readonly memo = new Map<string, Extract | Promise<Extract>>();
  private seeded = false;
  private readonly pkgMemo = new Map<string, PackageInfo | null>();

  constructor(
    private readonly ctx: BuildContext,
    private readonly items: readonly TreeItem[],
    private readonly rootTree: string,
  ) {
    for (const it of items) {
      const parent = dirname(it.path);
      let list = this.children.get(parent);
      if (!list) this.children.set(parent, (list = []));
      const child: Child = {
        name: basename(it.path),
        kind: it.type !== 'blob' ? 'directory' : 'file',
        item: it,
        record: null,
        extract: { title: basename(it.path), summary: '', symbols: [] },
      };
      list.push(child);
      this.childOf.set(it.path, child);
      if (it.type === 'tree') this.dirs.push(it);
      else if (it.type === 'blob') this.fileItems.push(it);
    }
  }

  async run(): Promise<void> {
    await this.files();
    await this.folders();
    this.submodules();
    for (const c of this.childOf.values())
      if (c.kind === 'file' && c.record) this.ctx.desired.set(c.item.path, c.record);
  }

  private seedMemo(): void {
    if (this.seeded) return;
    this.seeded = true;
    const { ctx } = this;
    for (const r of ctx.prev.values()) {
      if (r.kind !== 'file' || !r.anchor || !sameGenerator(r.generator, ctx.writer('file')))
        continue;
      if (r.inputs_hash !== ctx.inputsBy(r.generator, 'file', r.path, r.anchor.oid)) continue;
      this.memo.set(reuseKey(r.path, r.anchor.oid), {
        ...extractOf(r),
        ...(r.detail === undefined ? {} : { detail: r.detail }),
      });
    }
  }

  private async files(): Promise<void> {
    const { ctx } = this;
    let done = 0;
    const total = this.fileItems.length;
    const tick = () => ctx.progress({ phase: 'files', done: ++done, total });
    const toRead: Array<{ item: TreeItem; child: Child; inputs: unknown[] }> = [];
    for (const it of this.fileItems) {
      const child = this.childOf.get(it.path)!;
      if (rungPlacementProblem(it.path, 'file') !== null) {
        ctx.skipped++; // no rung, but the folder still counts it (census) by name
        tick();
        continue;
      }
      const inputs = ['file', it.path, it.oid];
      const kept = ctx.kept(it.path, 'file', inputs, it.oid);
      if (kept) {
        child.record = kept;
        child.extract = extractOf(kept);
        tick();
        continue;
      }
      toRead.push({ item: it, child, inputs });
    }
    const keys = toRead.map((j) => reuseKey(j.item.path, j.item.oid));
    // The first summary looked up seeds the memo from the previous Ladder: done first here, so
    // that the read-ahead below skips what the memo already holds.
    if (toRead.length > 0) this.seedMemo();
    const ahead = new Map<number, Promise<GitObject | null>>();
    const asked = new Set<string>();
    let issued = 0;
    const readAhead = (upTo: number) => {
      const stop = Math.min(upTo, toRead.length);
      while (issued < stop) {
        const batch: number[] = [];
        for (const end = Math.min(issued + READ_BATCH, toRead.length); issued < end; issued++) {
          const key = keys[issued]!;
          if (this.memo.has(key) || asked.has(key) || !readsBlob(toRead[issued]!.item)) continue;
          asked.add(key);
          batch.push(issued);
        }
        const reads = ctx.git.catFile.readMany(batch.map((i) => toRead[i]!.item.oid));
        batch.forEach((i, n) => {
          const read = reads[n]!;
          read.catch(() => {}); // awaited (and its failure reported) by the job, if it still reads
          ahead.set(i, read);
        });
      }
    };
    let next = 0;
    const worker = async () => {
      while (next < toRead.length) {
        const i = next++;
        readAhead(i + READ_AHEAD);
        const job = toRead[i]!;
        const key = keys[i]!;
        const read = ahead.get(i);
        ahead.delete(i);
        let e = this.memo.get(key);
        if (!e) {
          // Set before awaiting, so that a copy read by another worker meanwhile waits for it.
          const p = this.blobExtract(job.item, read);
          this.memo.set(key, p);
          e = await p;
          this.memo.set(key, e);
        }
        const ex = await e;
        job.child.record = ctx.makeRecord(
          job.item.path,
          'file',
          ex,
          job.inputs,
          ctx.anchorAt(job.item.oid),
          ex.detail,
        );
        if (job.child.record) job.child.extract = extractOf(job.child.record);
        tick();
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(READ_WINDOW, Math.max(1, toRead.length)) }, worker),
    );
    ahead.clear();
  }

  /** What a blob says, from the summariser or (links, binaries, huge files) from its shape. */
  private async blobExtract(it: TreeItem, read?: Promise<GitObject | null>): Promise<Extract> {
    const e = await this.blobText(it, read);
    // Shape-only text is extractive whoever the build's summariser is.
    return e.generator || this.readByModel.has(e) ? e : { ...e, generator: EXTRACTIVE };
  }

  private readonly readByModel = new WeakSet<Extract>();

  /** `read`: the blob, when the read-ahead already asked git for it. */
  private async blobText(it: TreeItem, read?: Promise<GitObject | null>): Promise<Extract> {
    const { ctx } = this;
    const name = basename(it.path);
    if (it.mode === '120000') {
      const obj = await (read ?? ctx.git.catFile.read(it.oid));
      const target = obj ? obj.data.toString('utf8').slice(0, 300) : '?';
      return { title: name, summary: `Symbolic link to ${target}.`, symbols: [] };
    }
    if (it.size > MAX_FILE_BYTES) {
      return { title: name, summary: `Large file (${kib(it.size)}), not summarised.`, symbols: [] };
    }
    if (skipReason(it.path, Buffer.alloc(0)) === 'binary') {
      return { title: name, summary: `Binary file (${kib(it.size)}).`, symbols: [] };
    }
    const obj = await (read ?? ctx.git.catFile.read(it.oid));
    if (!obj) throw new ZzError('git_failed', `blob ${it.oid} (${it.path}) is missing`);
    ctx.summarized++;
    const e = await ctx.summarizer.file(it.path, obj.data);
    if (e) {
      this.readByModel.add(e);
      return e;
    }
    const why = skipReason(it.path, obj.data);
    return {
      title: name,
      summary:
        why === 'too_large'
          ? `Large file (${kib(obj.data.length)}), not summarised.`
          : `Binary file (${kib(obj.data.length)}).`,
      symbols: [],
    };
  }

  private async readPkg(oid: string): Promise<PackageInfo | null> {
    if (!this.pkgMemo.has(oid)) {
      const obj = await this.ctx.git.catFile.read(oid);
      this.pkgMemo.set(
        oid,
        obj && obj.data.length <= MAX_FILE_BYTES ? packageInfo(obj.data) : null,
      );
    }
    return this.pkgMemo.get(oid)!;
  }

  /** Folders deepest first, then the repo: each from its children's (final) summaries. */
  private async folders(): Promise<void> {
    const depth = (p: string) => (p === '' ? 0 : p.split('/').length);
    const folders: Array<{ path: string; oid: string; kind: 'directory' | 'repo' }> = [
      ...this.dirs.map((d) => ({ path: d.path, oid: d.oid, kind: 'directory' as const })),
      { path: '', oid: this.rootTree, kind: 'repo' as const },
    ].sort((a, b) => depth(b.path) - depth(a.path));
    let done = 0;
    for (const f of folders) {
      if (f.kind === 'directory' && rungPlacementProblem(f.path, 'directory') !== null) {
        this.ctx.skipped++;
      } else {
        await this.folder(f);
      }
      this.ctx.progress({ phase: 'directories', done: ++done, total: folders.length });
    }
  }

  private async folder(f: { path: string; oid: string; kind: 'directory' | 'repo' }) {
    const { ctx } = this;
    const list = (this.children.get(f.path) ?? []).slice().sort(byName);
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
    const inputs = [
      f.kind,
      rungPath,
      f.kind === 'repo' ? ctx.repoKey : null,
      pkgChild?.item.oid ?? null,
      dirChildren.map((c) => [c.name, c.kind, c.title, c.summary, c.symbols ?? [], c.size ?? null]),
    ];
    let rec = ctx.kept(rungPath, f.kind, inputs, f.oid);
    if (!rec) {
      const pkg = pkgChild ? await this.readPkg(pkgChild.item.oid) : null;
      const readme = readmeChild
        ? { title: readmeChild.extract.title, summary: readmeChild.extract.summary }
        : null;
      const e =
        f.kind === 'repo'
          ? await ctx.summarizer.repo(readme, dirChildren, pkg, ctx.repoKey)
          : await ctx.summarizer.directory(f.path, dirChildren, readme, pkg);
      rec = ctx.makeRecord(rungPath, f.kind, e, inputs, ctx.anchorAt(f.oid), e.detail);
    }
    if (!rec) return;
    ctx.desired.set(rungPath, rec);
    const self = f.kind === 'repo' ? null : this.childOf.get(f.path);
    if (self) {
      self.record = rec;
      self.extract = extractOf(rec);
    }
  }

  /** Submodules: a folder in the checkout, summarised by what it pins. */
  private submodules(): void {
    const { ctx } = this;
    for (const it of this.items) {
      if (it.type !== 'commit' || rungPlacementProblem(it.path, 'directory') !== null) continue;
      const inputs = ['submodule', it.path, it.oid];
      const rec =
        ctx.kept(it.path, 'directory', inputs, it.oid) ??
        ctx.makeRecord(
          it.path,
          'directory',
          {
            title: `${basename(it.path)}/`,
            summary: `Git submodule pinned at commit ${it.oid.slice(0, 12)}.`,
            symbols: [],
          },
          inputs,
          ctx.anchorAt(it.oid),
        );
      if (rec) ctx.desired.set(it.path, rec);
    }
  }
}
