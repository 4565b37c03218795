import { createHash } from 'node:crypto';
import { unlink } from 'node:fs/promises';
import { join } from 'node:path';
import MiniSearch, { type Options } from 'minisearch';
import { ZzError } from '../errors.js';
import { writeFileAtomic } from '../local/atomic-write.js';
import { RUNG_KINDS, rungPathProblem, type RungKind } from '../schema/rung.js';
import { forgetScratch } from './direct-scorer.js';
import {
  buildFromPacked,
  encodeShard,
  fileSource,
  ShardDocs,
  ShardFile,
  type PackedIndex,
  type ShardDoc,
  type ShardHead,
  type ShardTerms,
} from './shard-file.js';
import { indexTerms } from './tokenize.js';

// The shard store of ladder search: one shard per repo, persisted under <cacheDir>/search/
// (shard-file.ts is the format) and keyed by the ladder ref's oid and OPTIONS_VERSION.
// A persisted shard is served from its file: loading it reads only its head (vocabulary, kind
// counts); its index section is read when a query first needs it and dropped again, least
// recently used first, past a memory budget; documents are read row by row for the hits shown.
// A shard built or changed here is a minisearch index in memory until it has been written;
// then it is served from the file it was written to, like any other.

/**
 * Bump whenever tokenizing, fields, boosts, the stored shape or what is indexed change:
 * persisted shards rebuild. 2: rungs come from the Ladder's guarded fold, not its tree (a shard
 * of 1 may hold a rung the fold refused).
 */
export const OPTIONS_VERSION = 2;
/**
 * Index sections kept in memory (all shards together) before the coldest are dropped. 50
 * shards of 2,000 rungs take ~17.5 MiB: under the budget nothing thrashes. Past it (~180 such
 * repos) broad queries, which touch most shards, re-read whole sections again and again: at a
 * budget of a third of the working set search p95 went from ~25 to ~450 ms of CPU
 * (`npm run bench -- search` compares budgets), so a smaller cap is no way to save memory.
 */
export const DEFAULT_MEMORY_BUDGET = 64 * 1024 * 1024;
/** The minisearch the persisted postings were written for (package.json pins it). */
const MINISEARCH_VERSION = '7.2.0';
const MAX_REPO_KEY_CHARS = 200;

/** A rung as the index needs it. */
export interface IndexRung {
  path: string;
  kind: RungKind;
  title: string;
  summary: string;
  symbols?: readonly string[];
  anchor?: { commit: string; oid: string } | null;
}

export type LoadFailure =
  'missing' | 'ladder_moved' | 'inputs_changed' | 'options_changed' | 'unreadable' | 'other_repo';

/**
 * Whether a shard keyed with `held` inputs (besides its ladder oid) is current: the inputs to
 * key it with from now on, or null when it is not (it is then rebuilt).
 */
export type InputsCheck = (held: string | null) => Promise<string | null>;

export const FIELDS = ['title', 'path', 'symbols', 'summary'] as const;
export const BOOST: Record<string, number> = { title: 3, symbols: 2, path: 2, summary: 1 };
type Field = (typeof FIELDS)[number];

export const MINI_OPTIONS: Options<ShardDoc> = {
  idField: 'path',
  fields: [...FIELDS],
  storeFields: ['kind'],
  extractField: (doc, field) =>
    field === 'symbols' ? (doc.symbols ?? []).join(' ') : doc[field as Field],
  tokenize: (text, field) => indexTerms(text, field),
  processTerm: (term) => term,
  // Vacuuming is triggered explicitly (applyDiff), so its cost lands where it is measured.
  autoVacuum: false,
  searchOptions: { boost: BOOST },
};

export const KIND_SET: ReadonlySet<string> = new Set(RUNG_KINDS);
const OID_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export interface Shard {
  id: number;
  repo: string;
  ladderOid: string;
  /** What it is keyed on besides the ladder oid (opaque here; see InputsCheck). */
  inputs: string | null;
  /** The index when built or changed here (or materialized); null while served from its file. */
  ms: MiniSearch<ShardDoc> | null;
  /** The persisted file the shard is served from, while it is what that file holds. */
  file: ShardFile | null;
  head: ShardHead | null;
  /** The file's index section, while loaded (see ShardStore.packedOf). */
  packed: PackedIndex | null;
  /** A Map once the shard was built or changed here; read from the file before that. */
  docs: DocStore;
  kinds: Map<string, number>;
  /** Sorted vocabulary for the router; null once the shard changed. */
  terms: ShardTerms | null;
  source: 'cache' | 'built' | 'diff';
  updatedAt: number;
  /** Bumped on every change: a finished write is adopted only if nothing changed meanwhile. */
  version: number;
  lastUsed: number;
  pendingWrite: boolean;
  timer: NodeJS.Timeout | null;
  writing: Promise<void>;
  lastWriteError: string | null;
}

export interface DocStore {
  readonly size: number;
  get(path: string): ShardDoc | undefined;
  has(path: string): boolean;
  values(): IterableIterator<ShardDoc>;
}

export function shardFileName(repo: string): string {
  const slug =
    repo
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '_')
      .replace(/^[._-]+/, '')
      .slice(0, 80) || 'repo';
  return `${slug}-${createHash('sha256').update(repo).digest('hex').slice(0, 12)}.json`;
}

export function badArg(message: string, field: string, details?: Record<string, unknown>): ZzError {
  return new ZzError('invalid_argument', message, { field, ...details });
}

export function checkRepoKey(repo: unknown): string {
  if (
    typeof repo !== 'string' ||
    repo.length === 0 ||
    repo.length > MAX_REPO_KEY_CHARS ||
    /[\u0000-\u001f]/.test(repo)
  ) {
    throw badArg(
      `repo must be a repo key such as "owner/name" (got ${JSON.stringify(repo)})`,
      'repo',
    );
  }
  return repo;
}

export function checkOid(oid: unknown): string {
  if (typeof oid !== 'string' || !OID_RE.test(oid)) {
    throw badArg(
      `ladder oid must be a full hex object id (got ${JSON.stringify(oid)})`,
      'ladder_oid',
    );
  }
  return oid;
}

export function toDoc(r: IndexRung): ShardDoc {
  if (r === null || typeof r !== 'object') throw badArg('a rung must be an object', 'rungs');
  const problem = rungPathProblem(r.path);
  if (problem !== null)
    throw badArg(`rung path ${JSON.stringify(r.path)} ${problem}`, 'path', { path: r.path });
  if (!KIND_SET.has(r.kind))
    throw badArg(`rung ${r.path} has an unknown kind ${JSON.stringify(r.kind)}`, 'kind');
  if (typeof r.title !== 'string' || typeof r.summary !== 'string') {
    throw badArg(`rung ${r.path} needs a string title and summary`, 'summary', { path: r.path });
  }
  const doc: ShardDoc = { path: r.path, kind: r.kind, title: r.title, summary: r.summary };
  if (r.symbols !== undefined) {
    if (!Array.isArray(r.symbols) || !r.symbols.every((s) => typeof s === 'string')) {
      throw badArg(`rung ${r.path} has symbols that are not strings`, 'symbols', { path: r.path });
    }
    // Newlines separate symbols on disk; identifiers have none worth keeping.
    const symbols = r.symbols.map((x) => x.replace(/\s+/g, ' ').trim()).filter((x) => x.length > 0);
    if (symbols.length > 0) doc.symbols = symbols;
  }
  if (r.anchor) {
    if (typeof r.anchor.commit !== 'string' || typeof r.anchor.oid !== 'string') {
      throw badArg(`rung ${r.path} has a malformed anchor`, 'anchor', { path: r.path });
    }
    doc.anchor = { commit: r.anchor.commit, oid: r.anchor.oid };
  }
  return doc;
}

/** The same vocabulary shardTerms() reads from the index, computed from the documents. */
export function termsFromDocs(docs: Iterable<ShardDoc>): ShardTerms {
  const counts = new Map<string, number>();
  for (const d of docs) {
    for (const field of FIELDS) {
      const text = field === 'symbols' ? (d.symbols ?? []).join(' ') : d[field];
      for (const t of new Set(indexTerms(text, field))) counts.set(t, (counts.get(t) ?? 0) + 1);
    }
  }
  const terms = [...counts.keys()].sort();
  return { terms, counts: Uint32Array.from(terms, (t) => counts.get(t)!) };
}

export function countKinds(docs: Iterable<ShardDoc>): Map<string, number> {
  const kinds = new Map<string, number>();
  for (const d of docs) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
  return kinds;
}

/** The shard's documents as a Map it can change (columns read from disk are converted once). */
export function ownDocs(shard: Shard): Map<string, ShardDoc> {
  if (shard.docs instanceof Map) return shard.docs;
  const docs = new Map<string, ShardDoc>();
  for (const d of shard.docs.values()) docs.set(d.path, d);
  shard.docs = docs;
  return docs;
}

export function buildIndex(docs: Iterable<ShardDoc>): MiniSearch<ShardDoc> {
  const ms = new MiniSearch<ShardDoc>(MINI_OPTIONS);
  ms.addAll([...docs]);
  return ms;
}

export class ShardStore {
  readonly dir: string;
  readonly shards = new Map<string, Shard>();
  readonly byId = new Map<number, Shard>();
  /** Index sections dropped to stay within the budget (for stats and tests). */
  evictions = 0;
  private nextShardId = 0;
  private useClock = 0;
  private closed = false;

  /**
   * `onChange(true)`: the set of shards or their documents changed (results are outdated);
   * `onChange(false)`: only a shard's vocabulary must be read again.
   */
  constructor(
    cacheDir: string,
    private readonly persistDelayMs: number,
    private readonly onChange: (docsChanged: boolean) => void,
    private readonly memoryBudget = DEFAULT_MEMORY_BUDGET,
  ) {
    this.dir = join(cacheDir, 'search');
  }

  /** Where a repo's shard is persisted. */
  fileFor(repo: string): string {
    return join(this.dir, shardFileName(checkRepoKey(repo)));
  }

  /**
   * Opens the persisted shard of `repo` when it was written for `ladderOid` (and, given
   * `check`, for inputs it accepts); reads its head.
   */
  async load(
    repo: string,
    ladderOid: string,
    check?: InputsCheck,
  ): Promise<{ shard: Shard } | { reason: LoadFailure }> {
    let file: ShardFile;
    try {
      const src = fileSource(this.fileFor(repo));
      try {
        file = new ShardFile(src);
      } catch {
        src.close();
        // A truncated or foreign file is only a cache miss: it is rebuilt and overwritten.
        return { reason: 'unreadable' };
      }
    } catch {
      return { reason: 'missing' };
    }
    const reject = (reason: LoadFailure) => {
      file.close();
      return { reason };
    };
    const meta = file.meta;
    if (meta.repo !== repo) return reject('other_repo');
    if (meta.options_version !== OPTIONS_VERSION || meta.minisearch !== MINISEARCH_VERSION) {
      return reject('options_changed');
    }
    if (meta.ladder_oid !== ladderOid) return reject('ladder_moved');
    let head: ShardHead;
    try {
      head = file.head();
    } catch {
      return reject('unreadable');
    }
    let inputs = head.inputs;
    if (check) {
      const checked = await check(inputs).catch(() => null);
      if (checked === null) return reject('inputs_changed');
      inputs = checked;
    }
    const shard = this.newShard(repo, ladderOid, null, new Map(), 'cache', head.terms, inputs);
    this.serveFrom(shard, file, head);
    return { shard };
  }

  newShard(
    repo: string,
    ladderOid: string,
    ms: MiniSearch<ShardDoc> | null,
    docs: DocStore,
    source: Shard['source'],
    terms: ShardTerms | null,
    inputs: string | null,
  ): Shard {
    return {
      id: this.nextShardId++,
      repo,
      ladderOid,
      inputs,
      ms,
      file: null,
      head: null,
      packed: null,
      docs,
      kinds: countKinds(docs.values()),
      terms,
      source,
      updatedAt: Date.now(),
      version: 0,
      lastUsed: 0,
      pendingWrite: false,
      timer: null,
      writing: Promise.resolve(),
      lastWriteError: null,
    };
  }

  /** Serves `shard` from `file` from now on (its in-memory index and documents are dropped). */
  private serveFrom(shard: Shard, file: ShardFile, head: ShardHead): void {
    this.detach(shard);
    if (shard.ms) forgetScratch(shard.ms);
    shard.ms = null;
    shard.file = file;
    shard.head = head;
    shard.terms = head.terms;
    shard.kinds = head.kinds;
    shard.docs = new ShardDocs(head.docCount, file, () => this.packedOf(shard));
  }

  /** Stops serving a shard from its file (it changed, or is gone). */
  detach(shard: Shard): void {
    if (shard.packed) forgetScratch(shard.packed);
    shard.packed = null;
    shard.file?.close();
    shard.file = null;
    shard.head = null;
  }

  /** The index section of a shard served from its file, read now if it is not in memory. */
  packedOf(shard: Shard): PackedIndex {
    shard.lastUsed = ++this.useClock;
    if (shard.packed) return shard.packed;
    if (!shard.file || !shard.head) throw new Error(`shard ${shard.repo} has no file`);
    shard.packed = shard.file.index(shard.head);
    return shard.packed;
  }

  /**
   * Drops the least recently used index sections until the rest fit the memory budget. Called
   * between queries, never during one: a query's shards stay loaded while it runs.
   */
  trim(): void {
    let total = 0;
    const loaded: Shard[] = [];
    for (const s of this.shards.values()) {
      if (s.packed) {
        total += s.packed.bytes;
        loaded.push(s);
      }
    }
    if (total <= this.memoryBudget) return;
    loaded.sort((a, b) => a.lastUsed - b.lastUsed);
    for (const s of loaded) {
      if (total <= this.memoryBudget) break;
      total -= s.packed!.bytes;
      forgetScratch(s.packed!);
      s.packed = null;
      this.evictions++;
    }
  }

  /**
   * The shard's index, built from its file on first use. Postings that turn out damaged are
   * not fatal: the documents were read fine, so the index is rebuilt from them.
   */
  msOf(shard: Shard): MiniSearch<ShardDoc> {
    if (shard.ms) return shard.ms;
    try {
      shard.ms = buildFromPacked(this.packedOf(shard), MINI_OPTIONS);
    } catch {
      // Forgotten when even its documents cannot be read: it holds nothing from now on.
      if (!this.repair(shard)) shard.ms = buildIndex([]);
    }
    return shard.ms!;
  }

  /**
   * A shard whose file turned out damaged past its head: rebuilt from its documents when they
   * can still be read (and written again), else forgotten and its file deleted, so that the
   * next sync of the repo indexes it afresh. True when the shard is still searchable.
   */
  repair(shard: Shard): boolean {
    try {
      const docs = ownDocs(shard);
      shard.ms = buildIndex(docs.values());
    } catch {
      if (this.shards.get(shard.repo) === shard && !this.closed) {
        this.shards.delete(shard.repo);
        this.byId.delete(shard.id);
        void unlink(this.fileFor(shard.repo)).catch(() => {});
      }
      this.detach(shard);
      this.onChange(true);
      return false;
    }
    this.detach(shard);
    shard.version++;
    shard.terms = null;
    this.onChange(false);
    this.schedulePersist(shard);
    return true;
  }

  /**
   * Builds minisearch's maps for every shard served from its file, one shard per turn of the
   * event loop. Searching does not need them (packed postings are scored directly); a diff,
   * or the `minisearch` scorer, does.
   */
  async materialize(): Promise<void> {
    for (const s of [...this.shards.values()]) {
      if (s.ms === null && this.shards.get(s.repo) === s) this.msOf(s);
      await new Promise((r) => setImmediate(r));
    }
  }

  install(shard: Shard): void {
    const old = this.shards.get(shard.repo);
    if (old) {
      if (old.timer) clearTimeout(old.timer);
      old.timer = null;
      old.pendingWrite = false;
      this.byId.delete(old.id);
      this.detach(old);
    }
    this.shards.set(shard.repo, shard);
    this.byId.set(shard.id, shard);
    this.onChange(true);
  }

  /** Forgets a repo's shard (its pending write is dropped, a running one awaited). */
  async remove(repo: string, purge: boolean): Promise<boolean> {
    const shard = this.shards.get(repo);
    if (shard) {
      if (shard.timer) clearTimeout(shard.timer);
      shard.timer = null;
      shard.pendingWrite = false;
      this.shards.delete(repo);
      this.byId.delete(shard.id);
      this.onChange(true);
      await shard.writing;
      this.detach(shard);
    }
    if (purge) {
      await unlink(this.fileFor(repo)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
    }
    return shard !== undefined;
  }

  /** Writes the shard after the debounce (or `delayMs`: a fresh build need not wait). */
  schedulePersist(shard: Shard, delayMs = this.persistDelayMs): void {
    if (this.closed) return;
    shard.pendingWrite = true;
    if (shard.timer) clearTimeout(shard.timer);
    shard.timer = setTimeout(() => {
      shard.timer = null;
      if (this.shards.get(shard.repo) === shard) this.persist(shard);
    }, delayMs);
    shard.timer.unref();
  }

  /**
   * Writes the shard; once written, and if it did not change meanwhile, it is served from the
   * new file and its in-memory index is dropped (a built shard would otherwise hold ~10 MiB).
   */
  persist(shard: Shard): void {
    shard.pendingWrite = false;
    const meta = {
      repo: shard.repo,
      ladder_oid: shard.ladderOid,
      options_version: OPTIONS_VERSION,
      minisearch: MINISEARCH_VERSION,
      written_at: new Date().toISOString(),
    };
    let encoded: ReturnType<typeof encodeShard>;
    try {
      encoded = encodeShard(
        this.msOf(shard) as MiniSearch<never>,
        shard.docs.values(),
        meta,
        shard.inputs,
      );
    } catch (e) {
      shard.lastWriteError = e instanceof Error ? e.message : String(e);
      return;
    }
    const { bytes, terms } = encoded;
    shard.terms = terms;
    const version = shard.version;
    const path = this.fileFor(shard.repo);
    shard.writing = shard.writing.then(() =>
      writeFileAtomic(path, bytes, { mkdir: true }).then(
        () => {
          shard.lastWriteError = null;
          if (
            shard.version !== version ||
            shard.pendingWrite ||
            this.shards.get(shard.repo) !== shard
          )
            return;
          this.adopt(shard, path, meta.written_at, terms);
        },
        (e: unknown) => {
          shard.lastWriteError = e instanceof Error ? e.message : String(e);
        },
      ),
    );
  }

  private adopt(shard: Shard, path: string, writtenAt: string, terms: ShardTerms): void {
    let file: ShardFile | null = null;
    try {
      file = new ShardFile(fileSource(path));
      // Another process may have replaced it already; then keep what we hold.
      if (file.meta.written_at !== writtenAt || file.meta.ladder_oid !== shard.ladderOid) {
        file.close();
        return;
      }
    } catch {
      file?.close();
      return;
    }
    const inputs = shard.inputs;
    this.serveFrom(shard, file, { docCount: shard.docs.size, inputs, kinds: shard.kinds, terms });
  }

  /** Writes every changed shard now. Rejects with the first write failure. */
  async flush(): Promise<void> {
    const errors: unknown[] = [];
    await Promise.all(
      [...this.shards.values()].map(async (s) => {
        if (s.timer) clearTimeout(s.timer);
        s.timer = null;
        if (s.pendingWrite) this.persist(s);
        await s.writing;
        if (s.lastWriteError !== null) errors.push(s.lastWriteError);
      }),
    );
    if (errors.length > 0) {
      throw new ZzError('internal', `could not write the search index: ${String(errors[0])}`);
    }
  }

  /**
   * Flushes and stops scheduling writes. Shards stay searchable from their files; a file is
   * closed when its shard is replaced or removed.
   */
  async close(): Promise<void> {
    await this.flush().finally(() => {
      this.closed = true;
    });
  }
}
