import { createHash } from 'node:crypto';
import { readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import MiniSearch, { type Options } from 'minisearch';
import { ZzError } from '../errors.js';
import { writeFileAtomic } from '../local/atomic-write.js';
import { RUNG_KINDS, rungPathProblem, type RungKind } from '../schema/rung.js';
import { forgetScratch } from './direct-scorer.js';
import {
  DocColumns,
  decodeShard,
  type PackedIndex,
  encodeShard,
  parseShard,
  type ShardDoc,
  type ShardTerms,
} from './shard-file.js';
import { indexTerms } from './tokenize.js';

// The shard store of ladder search: one minisearch index per repo, kept in memory, persisted
// under <cacheDir>/search/ (shard-file.ts is the format) and keyed by the ladder ref's oid and
// OPTIONS_VERSION. A shard read from disk stays packed until something needs minisearch's maps.

/** Bump whenever tokenizing, fields, boosts or the stored shape change: persisted shards rebuild. */
export const OPTIONS_VERSION = 1;
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
  'missing' | 'ladder_moved' | 'options_changed' | 'unreadable' | 'other_repo';

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
  /** The index; null until first needed when the shard came from disk (see unpack). */
  ms: MiniSearch<ShardDoc> | null;
  /** Builds `ms` from the loaded file; null once built. */
  unpack: (() => MiniSearch<ShardDoc>) | null;
  /** The loaded file's postings, searchable as they are until `ms` is built. */
  packed: PackedIndex | null;
  /** A Map once the shard was built or changed here; columns as read from disk before that. */
  docs: DocStore;
  kinds: Map<string, number>;
  /** Sorted vocabulary for the router; null once the shard changed. */
  terms: ShardTerms | null;
  source: 'cache' | 'built' | 'diff';
  updatedAt: number;
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
  private nextShardId = 0;
  private closed = false;

  /**
   * `onChange(true)`: the set of shards or their documents changed (results are outdated);
   * `onChange(false)`: only a shard's vocabulary must be read again.
   */
  constructor(
    cacheDir: string,
    private readonly persistDelayMs: number,
    private readonly onChange: (docsChanged: boolean) => void,
  ) {
    this.dir = join(cacheDir, 'search');
  }

  /** Where a repo's shard is persisted. */
  fileFor(repo: string): string {
    return join(this.dir, shardFileName(checkRepoKey(repo)));
  }

  async load(repo: string, ladderOid: string): Promise<{ shard: Shard } | { reason: LoadFailure }> {
    let text: string;
    try {
      // Buffer#toString decodes ~2x faster than readFile's string decoder on large files.
      text = (await readFile(this.fileFor(repo))).toString('utf8');
    } catch {
      return { reason: 'missing' };
    }
    try {
      const file = parseShard(text);
      if (file.repo !== repo) return { reason: 'other_repo' };
      if (file.options_version !== OPTIONS_VERSION || file.minisearch !== MINISEARCH_VERSION) {
        return { reason: 'options_changed' };
      }
      if (file.ladder_oid !== ladderOid) return { reason: 'ladder_moved' };
      const decoded = decodeShard(file, MINI_OPTIONS);
      const index = decoded.index;
      const shard = this.newShard(
        repo,
        ladderOid,
        index,
        decoded.docs,
        'cache',
        decoded.terms,
        decoded.packed,
      );
      shard.kinds = decoded.docs.kindCounts();
      return { shard };
    } catch {
      // A truncated or foreign file is only a cache miss: it is rebuilt and overwritten.
      return { reason: 'unreadable' };
    }
  }

  newShard(
    repo: string,
    ladderOid: string,
    index: MiniSearch<ShardDoc> | (() => MiniSearch<ShardDoc>),
    docs: DocStore,
    source: Shard['source'],
    terms: ShardTerms | null,
    packed: PackedIndex | null = null,
  ): Shard {
    return {
      id: this.nextShardId++,
      repo,
      ladderOid,
      ms: typeof index === 'function' ? null : index,
      unpack: typeof index === 'function' ? index : null,
      packed,
      docs,
      kinds: docs instanceof DocColumns ? new Map() : countKinds(docs.values()),
      terms,
      source,
      updatedAt: Date.now(),
      pendingWrite: false,
      timer: null,
      writing: Promise.resolve(),
      lastWriteError: null,
    };
  }

  /**
   * The shard's index, built from its file on first use. Postings that turn out damaged are
   * not fatal: the documents were read fine, so the index is rebuilt from them.
   */
  msOf(shard: Shard): MiniSearch<ShardDoc> {
    if (shard.ms) return shard.ms;
    const unpack = shard.unpack!;
    shard.unpack = null;
    if (shard.packed) forgetScratch(shard.packed);
    shard.packed = null;
    try {
      shard.ms = unpack();
    } catch {
      shard.ms = buildIndex(shard.docs.values());
      shard.terms = null;
      this.onChange(false);
      this.schedulePersist(shard);
    }
    return shard.ms;
  }

  /**
   * Builds minisearch's maps for every shard loaded from disk, one shard per turn of the event
   * loop. Searching does not need them (packed postings are scored directly); a diff, or the
   * `minisearch` scorer, does, so a daemon may call this once it is idle.
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
      this.byId.delete(old.id);
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
    }
    if (purge) {
      await unlink(this.fileFor(repo)).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
    }
    return shard !== undefined;
  }

  schedulePersist(shard: Shard): void {
    if (this.closed) return;
    shard.pendingWrite = true;
    if (shard.timer) clearTimeout(shard.timer);
    shard.timer = setTimeout(() => {
      shard.timer = null;
      if (this.shards.get(shard.repo) === shard) this.persist(shard);
    }, this.persistDelayMs);
    shard.timer.unref();
  }

  persist(shard: Shard): void {
    shard.pendingWrite = false;
    const { text, terms } = encodeShard(
      this.msOf(shard) as MiniSearch<never>,
      shard.docs.values(),
      {
        repo: shard.repo,
        ladder_oid: shard.ladderOid,
        options_version: OPTIONS_VERSION,
        minisearch: MINISEARCH_VERSION,
        written_at: new Date().toISOString(),
      },
    );
    if (terms.terms.length > 0 || shard.docs.size === 0) shard.terms = terms;
    const file = this.fileFor(shard.repo);
    shard.writing = shard.writing.then(() =>
      writeFileAtomic(file, text, { mkdir: true }).then(
        () => {
          shard.lastWriteError = null;
        },
        (e: unknown) => {
          shard.lastWriteError = e instanceof Error ? e.message : String(e);
        },
      ),
    );
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

  /** Flushes and stops scheduling writes. */
  async close(): Promise<void> {
    await this.flush().finally(() => {
      this.closed = true;
    });
  }
}
