import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import MiniSearch, {
  type Options,
  type Query,
  type SearchOptions,
  type SearchResult,
} from 'minisearch';
import { ZzError } from '../errors.js';
import { RUNG_KINDS, rungPathProblem, type RungKind } from '../schema/rung.js';
import {
  DocColumns,
  decodeShard,
  type PackedIndex,
  encodeShard,
  parseShard,
  shardTerms,
  type ShardDoc,
  type ShardTerms,
} from './shard-file.js';
import { forgetScratch, scorePacked, scoreShard } from './direct-scorer.js';
import { TermRouter, type Expansion } from './term-router.js';
import { indexTerms, queryTokens, type QueryToken } from './tokenize.js';

// Full-text search over the Ladders of every known repo: one minisearch shard per repo, kept
// in memory, persisted under <cacheDir>/search/ and keyed by the ladder ref's oid, updated in
// place (replace / discard / vacuum) when the ref moves. Queries are planned against a router
// holding every shard's vocabulary (term-router.ts): fuzzy and prefix expansion happen once per
// query, and only shards holding every query word (for AND) are scored, rarest word first
// (direct-scorer.ts). A shard read from disk is scored from its packed postings; minisearch's
// own maps are built only when it changes.

/** Bump whenever tokenizing, fields, boosts or the stored shape change: persisted shards rebuild. */
export const OPTIONS_VERSION = 1;
/** The minisearch the persisted postings were written for (package.json pins it). */
const MINISEARCH_VERSION = '7.2.0';

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 50;
/** Deepest a cursor can page: results are capped, as ranking that far down is noise. */
export const MAX_RESULTS = 1000;
const MAX_QUERY_CHARS = 500;
const MAX_QUERY_TOKENS = 16;
const MAX_REPO_KEY_CHARS = 200;
const RESULT_CACHE_SIZE = 32;
// Above this share of a shard changed at once, a fresh build beats replace/discard + vacuum.
const REBUILD_FRACTION = 0.3;

export interface IndexRung {
  path: string;
  kind: RungKind;
  title: string;
  summary: string;
  symbols?: readonly string[];
  anchor?: { commit: string; oid: string } | null;
}

/** Rungs, or a function producing them; the function is only called when a build is needed. */
export type RungSource =
  readonly IndexRung[] | (() => readonly IndexRung[] | Promise<readonly IndexRung[]>);

export interface LadderSearchOptions {
  /** The per-user cache (`~/.cache/zz`); shards live in `<cacheDir>/search/`. */
  cacheDir: string;
  /** Debounce for writing a changed shard; 0 writes on the next tick. */
  persistDelayMs?: number;
  /** Vacuum a shard once this many discarded documents accumulate (default max(20, 10%)). */
  vacuumMinDirt?: number;
  /**
   * `direct` (default) scores minisearch's index with the same BM25 into typed arrays;
   * `minisearch` uses its search() with boostDocument filters. Same results; see
   * bench/search.ts for the difference in speed.
   */
  scorer?: 'direct' | 'minisearch';
}

export interface SetRepoResult {
  repo: string;
  ladder_oid: string;
  docs: number;
  /** `memory`: already current; `cache`: loaded from disk; `built`: indexed from the rungs. */
  source: 'memory' | 'cache' | 'built';
  /** Why the persisted shard was not used, when it was not. */
  reason?: 'missing' | 'ladder_moved' | 'options_changed' | 'unreadable' | 'other_repo';
  ms: number;
}

export interface LadderDiff {
  upsert?: readonly IndexRung[];
  remove?: readonly string[];
  /** The ladder oid the diff was computed from; a mismatch is a conflict (reindex instead). */
  base?: string;
}

export interface ApplyDiffResult {
  repo: string;
  ladder_oid: string;
  docs: number;
  upserted: number;
  removed: number;
  rebuilt: boolean;
  vacuumed: boolean;
}

export interface SearchRequest {
  query: string;
  repo?: string;
  kind?: RungKind | readonly RungKind[];
  limit?: number;
  cursor?: string;
}

export interface SearchHit {
  repo: string;
  path: string;
  kind: RungKind;
  title: string;
  summary: string;
  score: number;
  anchor: { commit: string; oid: string } | null;
}

export interface SearchPage {
  hits: SearchHit[];
  next_cursor: string | null;
}

export interface ShardStats {
  repo: string;
  ladder_oid: string;
  docs: number;
  dirt: number;
  /** False while a shard loaded from disk has not been searched or materialize()d yet. */
  materialized: boolean;
  source: 'cache' | 'built' | 'diff';
  updated_at: string;
  pending_write: boolean;
  last_write_error: string | null;
  file: string;
}

export interface LadderSearchStats {
  cache_dir: string;
  repos: number;
  docs: number;
  router_terms: number | null;
  generation: number;
  shards: ShardStats[];
}

const FIELDS = ['title', 'path', 'symbols', 'summary'] as const;
const BOOST: Record<string, number> = { title: 3, symbols: 2, path: 2, summary: 1 };
type Field = (typeof FIELDS)[number];

const MINI_OPTIONS: Options<ShardDoc> = {
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

// Leaves of a planned query are exact, already-processed terms.
const LEAF_OPTIONS: SearchOptions = {
  tokenize: (s) => [s],
  processTerm: (t) => t,
  prefix: false,
  fuzzy: false,
  combineWith: 'OR',
};

const KIND_SET: ReadonlySet<string> = new Set(RUNG_KINDS);
const OID_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

interface Shard {
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

interface DocStore {
  readonly size: number;
  get(path: string): ShardDoc | undefined;
  has(path: string): boolean;
  values(): IterableIterator<ShardDoc>;
}

interface Plan {
  tokens: QueryToken[];
  repo: string | null;
  kinds: ReadonlySet<string> | null;
  limit: number;
  offset: number;
  key: string;
}

interface Ranked {
  shard: Shard;
  path: string;
  score: number;
}

interface Group {
  expansions: Expansion[];
}

/** `owner/repo` → a file name that is safe, readable and collision-free on any filesystem. */
export function shardFileName(repo: string): string {
  const slug =
    repo
      .toLowerCase()
      .replace(/[^a-z0-9._-]+/g, '_')
      .replace(/^[._-]+/, '')
      .slice(0, 80) || 'repo';
  return `${slug}-${createHash('sha256').update(repo).digest('hex').slice(0, 12)}.json`;
}

function badArg(message: string, field: string, details?: Record<string, unknown>): ZzError {
  return new ZzError('invalid_argument', message, { field, ...details });
}

function checkRepoKey(repo: unknown): string {
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

function checkOid(oid: unknown): string {
  if (typeof oid !== 'string' || !OID_RE.test(oid)) {
    throw badArg(
      `ladder oid must be a full hex object id (got ${JSON.stringify(oid)})`,
      'ladder_oid',
    );
  }
  return oid;
}

function toDoc(r: IndexRung): ShardDoc {
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
function termsFromDocs(docs: Iterable<ShardDoc>): ShardTerms {
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

function countKinds(docs: Iterable<ShardDoc>): Map<string, number> {
  const kinds = new Map<string, number>();
  for (const d of docs) kinds.set(d.kind, (kinds.get(d.kind) ?? 0) + 1);
  return kinds;
}

/** The shard's documents as a Map it can change (columns read from disk are converted once). */
function ownDocs(shard: Shard): Map<string, ShardDoc> {
  if (shard.docs instanceof Map) return shard.docs;
  const docs = new Map<string, ShardDoc>();
  for (const d of shard.docs.values()) docs.set(d.path, d);
  shard.docs = docs;
  return docs;
}

function buildIndex(docs: Iterable<ShardDoc>): MiniSearch<ShardDoc> {
  const ms = new MiniSearch<ShardDoc>(MINI_OPTIONS);
  ms.addAll([...docs]);
  return ms;
}

const fuzzyDistance = (term: string): number =>
  term.length >= 5 ? Math.min(2, Math.round(term.length * 0.2)) : 0;

export class LadderSearch {
  private readonly dir: string;
  private readonly persistDelayMs: number;
  private readonly vacuumMinDirt: number | undefined;
  private readonly scorer: 'direct' | 'minisearch';
  private readonly shards = new Map<string, Shard>();
  private readonly byId = new Map<number, Shard>();
  private readonly chains = new Map<string, Promise<unknown>>();
  private readonly results = new Map<string, { generation: number; ranked: Ranked[] }>();
  private router: TermRouter | null = TermRouter.empty();
  private nextShardId = 0;
  private generation = 0;
  private closed = false;

  constructor(opts: LadderSearchOptions) {
    if (typeof opts?.cacheDir !== 'string' || opts.cacheDir.length === 0) {
      throw badArg('cacheDir is required', 'cacheDir');
    }
    this.dir = join(opts.cacheDir, 'search');
    this.persistDelayMs = opts.persistDelayMs ?? 1000;
    this.vacuumMinDirt = opts.vacuumMinDirt;
    this.scorer = opts.scorer ?? 'direct';
  }

  /** Where a repo's shard is persisted. */
  fileFor(repo: string): string {
    return join(this.dir, shardFileName(checkRepoKey(repo)));
  }

  /** The ladder oid a repo is indexed at, or null when it is not loaded. */
  ladderOid(repo: string): string | null {
    return this.shards.get(repo)?.ladderOid ?? null;
  }

  /**
   * Makes `repo` searchable at `ladderOid`: nothing to do if already there, else the persisted
   * shard when it was written for the same oid and options, else a build from `rungs`.
   */
  async setRepo(repo: string, ladderOid: string, rungs: RungSource): Promise<SetRepoResult> {
    checkRepoKey(repo);
    checkOid(ladderOid);
    return this.serial(repo, async () => {
      const started = performance.now();
      const done = (
        source: SetRepoResult['source'],
        docs: number,
        reason?: SetRepoResult['reason'],
      ) => ({
        repo,
        ladder_oid: ladderOid,
        docs,
        source,
        ...(reason ? { reason } : {}),
        ms: Math.round((performance.now() - started) * 10) / 10,
      });
      const current = this.shards.get(repo);
      if (current && current.ladderOid === ladderOid) return done('memory', current.docs.size);

      const loaded = await this.load(repo, ladderOid);
      if ('shard' in loaded) {
        this.install(loaded.shard);
        return done('cache', loaded.shard.docs.size);
      }
      const input = typeof rungs === 'function' ? await rungs() : rungs;
      if (!Array.isArray(input)) throw badArg('rungs must be an array', 'rungs');
      const docs = new Map<string, ShardDoc>();
      for (const r of input) {
        const d = toDoc(r);
        docs.set(d.path, d);
      }
      const shard = this.newShard(repo, ladderOid, buildIndex(docs.values()), docs, 'built', null);
      this.install(shard);
      this.schedulePersist(shard);
      return done('built', docs.size, loaded.reason);
    });
  }

  /**
   * Moves an indexed repo to `ladderOid` by upserting and removing rungs (replace / discard,
   * vacuum past a threshold, a fresh build when most of the shard changed).
   */
  async applyDiff(repo: string, ladderOid: string, diff: LadderDiff): Promise<ApplyDiffResult> {
    checkRepoKey(repo);
    checkOid(ladderOid);
    const upserts = (diff?.upsert ?? []).map(toDoc);
    const removes = diff?.remove ?? [];
    if (!Array.isArray(removes) || !removes.every((p) => typeof p === 'string')) {
      throw badArg('remove must be an array of rung paths', 'remove');
    }
    return this.serial(repo, async () => {
      const shard = this.shards.get(repo);
      if (!shard)
        throw new ZzError('not_found', `repo ${repo} is not indexed; index it whole first`, {
          repo,
        });
      if (diff.base !== undefined && diff.base !== shard.ladderOid) {
        throw new ZzError(
          'conflict',
          `the index of ${repo} is at ${shard.ladderOid}, not ${diff.base}; reindex`,
          {
            repo,
            current: shard.ladderOid,
          },
        );
      }
      const result: ApplyDiffResult = {
        repo,
        ladder_oid: ladderOid,
        docs: 0,
        upserted: upserts.length,
        removed: 0,
        rebuilt: false,
        vacuumed: false,
      };
      const changes = upserts.length + removes.length;
      const ms = this.msOf(shard);
      const docs = ownDocs(shard);
      if (changes > 100 && changes > shard.docs.size * REBUILD_FRACTION) {
        for (const p of removes) if (docs.delete(p)) result.removed++;
        for (const d of upserts) docs.set(d.path, d);
        shard.ms = buildIndex(docs.values());
        result.rebuilt = true;
      } else {
        for (const p of removes) {
          if (!docs.delete(p)) continue;
          ms.discard(p);
          result.removed++;
        }
        for (const d of upserts) {
          if (docs.has(d.path)) ms.replace(d);
          else ms.add(d);
          docs.set(d.path, d);
        }
        const minDirt = this.vacuumMinDirt ?? Math.max(20, Math.ceil(shard.docs.size * 0.1));
        if (ms.dirtCount >= minDirt) {
          await ms.vacuum({ batchSize: 2000, batchWait: 1 });
          result.vacuumed = true;
        }
      }
      forgetScratch(ms);
      shard.kinds = countKinds(shard.docs.values());
      shard.ladderOid = ladderOid;
      shard.terms = null;
      shard.source = 'diff';
      shard.updatedAt = Date.now();
      this.changed();
      this.schedulePersist(shard);
      result.docs = shard.docs.size;
      return result;
    });
  }

  /** Forgets a repo; `purge` also deletes its persisted shard. */
  async removeRepo(repo: string, opts: { purge?: boolean } = {}): Promise<boolean> {
    checkRepoKey(repo);
    return this.serial(repo, async () => {
      const shard = this.shards.get(repo);
      if (shard) {
        if (shard.timer) clearTimeout(shard.timer);
        shard.timer = null;
        shard.pendingWrite = false;
        this.shards.delete(repo);
        this.byId.delete(shard.id);
        this.changed();
        await shard.writing;
      }
      if (opts.purge) {
        await unlink(this.fileFor(repo)).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== 'ENOENT') throw e;
        });
      }
      return shard !== undefined;
    });
  }

  /** Searches every loaded repo (or one), ranked by score, paged by an opaque cursor. */
  search(req: SearchRequest): SearchPage {
    const plan = this.plan(req);
    let entry = this.results.get(plan.key);
    if (!entry || entry.generation !== this.generation) {
      entry = { generation: this.generation, ranked: this.run(plan) };
      this.results.delete(plan.key);
      this.results.set(plan.key, entry);
      if (this.results.size > RESULT_CACHE_SIZE)
        this.results.delete(this.results.keys().next().value!);
    }
    const ranked = entry.ranked;
    const page = ranked.slice(plan.offset, plan.offset + plan.limit);
    const hits: SearchHit[] = [];
    for (const r of page) {
      const doc = r.shard.docs.get(r.path);
      if (!doc) continue;
      hits.push({
        repo: r.shard.repo,
        path: doc.path,
        kind: doc.kind as RungKind,
        title: doc.title,
        summary: doc.summary,
        score: Math.round(r.score * 1000) / 1000,
        anchor: doc.anchor ? { ...doc.anchor } : null,
      });
    }
    const end = plan.offset + plan.limit;
    return { hits, next_cursor: end < ranked.length ? encodeCursor(end, plan.key) : null };
  }

  stats(): LadderSearchStats {
    const shards = [...this.shards.values()].map((s) => ({
      repo: s.repo,
      ladder_oid: s.ladderOid,
      docs: s.docs.size,
      dirt: s.ms?.dirtCount ?? 0,
      materialized: s.ms !== null,
      source: s.source,
      updated_at: new Date(s.updatedAt).toISOString(),
      pending_write: s.pendingWrite,
      last_write_error: s.lastWriteError,
      file: this.fileFor(s.repo),
    }));
    return {
      cache_dir: this.dir,
      repos: shards.length,
      docs: shards.reduce((n, s) => n + s.docs, 0),
      router_terms: this.router?.size ?? null,
      generation: this.generation,
      shards,
    };
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

  // --- loading and persisting ---------------------------------------------------------------

  private async load(
    repo: string,
    ladderOid: string,
  ): Promise<{ shard: Shard } | { reason: NonNullable<SetRepoResult['reason']> }> {
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
      const decoded = decodeShard(file, MINI_OPTIONS as Options<never>);
      const index = decoded.index as unknown as () => MiniSearch<ShardDoc>;
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

  private newShard(
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
  private msOf(shard: Shard): MiniSearch<ShardDoc> {
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
      this.router = null;
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

  private install(shard: Shard): void {
    const old = this.shards.get(shard.repo);
    if (old) {
      if (old.timer) clearTimeout(old.timer);
      this.byId.delete(old.id);
    }
    this.shards.set(shard.repo, shard);
    this.byId.set(shard.id, shard);
    this.changed();
  }

  private changed(): void {
    this.generation++;
    this.router = null;
  }

  private schedulePersist(shard: Shard): void {
    if (this.closed) return;
    shard.pendingWrite = true;
    if (shard.timer) clearTimeout(shard.timer);
    shard.timer = setTimeout(() => {
      shard.timer = null;
      if (this.shards.get(shard.repo) === shard) this.persist(shard);
    }, this.persistDelayMs);
    shard.timer.unref();
  }

  private persist(shard: Shard): void {
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
      writeAtomic(this.dir, file, text).then(
        () => {
          shard.lastWriteError = null;
        },
        (e: unknown) => {
          shard.lastWriteError = e instanceof Error ? e.message : String(e);
        },
      ),
    );
  }

  private serial<T>(repo: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.chains.get(repo) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.chains.set(repo, tail);
    void tail.then(() => {
      if (this.chains.get(repo) === tail) this.chains.delete(repo);
    });
    return next;
  }

  // --- querying -----------------------------------------------------------------------------

  private plan(req: SearchRequest): Plan {
    if (req === null || typeof req !== 'object')
      throw badArg('search needs an object argument', 'query');
    const { query } = req;
    if (typeof query !== 'string' || query.trim().length === 0)
      throw badArg('query must be a non-empty string', 'query');
    if (query.length > MAX_QUERY_CHARS)
      throw badArg(`query is longer than ${MAX_QUERY_CHARS} characters`, 'query');
    const tokens = queryTokens(query);
    if (tokens.length === 0) throw badArg('query has no searchable words', 'query');
    if (tokens.length > MAX_QUERY_TOKENS)
      throw badArg(`query has more than ${MAX_QUERY_TOKENS} words`, 'query');

    const limit = req.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw badArg(`limit must be an integer from 1 to ${MAX_LIMIT}`, 'limit');
    }
    let repo: string | null = null;
    if (req.repo !== undefined) {
      repo = checkRepoKey(req.repo);
      if (!this.shards.has(repo))
        throw new ZzError('not_found', `repo ${repo} is not indexed`, { repo });
    }
    let kinds: Set<string> | null = null;
    if (req.kind !== undefined) {
      const list: unknown[] = Array.isArray(req.kind) ? [...(req.kind as unknown[])] : [req.kind];
      if (list.length === 0 || !list.every((k) => typeof k === 'string' && KIND_SET.has(k))) {
        throw badArg(`kind must be one of ${RUNG_KINDS.join(', ')}`, 'kind');
      }
      kinds = new Set(list as string[]);
    }
    const key = JSON.stringify([tokens, repo, kinds ? [...kinds].sort() : null]);
    const offset = req.cursor === undefined ? 0 : decodeCursor(req.cursor, key);
    return { tokens, repo, kinds, limit, offset, key };
  }

  private routerNow(): TermRouter {
    if (this.router) return this.router;
    const inputs: Array<{ shard: number; terms: ShardTerms }> = [];
    for (const s of this.shards.values()) {
      s.terms ??= shardTerms(this.msOf(s) as MiniSearch<never>) ?? termsFromDocs(s.docs.values());
      inputs.push({ shard: s.id, terms: s.terms });
    }
    this.router = TermRouter.build(inputs);
    return this.router;
  }

  private run(plan: Plan): Ranked[] {
    const router = this.routerNow();
    const allowed = (id: number): Shard | null => {
      const s = this.byId.get(id);
      if (!s) return null;
      if (plan.repo !== null && s.repo !== plan.repo) return null;
      if (plan.kinds !== null && ![...plan.kinds].some((k) => (s.kinds.get(k) ?? 0) > 0))
        return null;
      return s;
    };
    const n = plan.tokens.length;
    const expand = (term: string, last: boolean): Group => ({
      expansions: router.expand(term, {
        prefix: last && term.length >= 2,
        fuzzy: fuzzyDistance(term),
      }),
    });
    // 1. every word, identifiers whole (`parseConfig` matches parseConfigFile by prefix).
    const whole = plan.tokens.map((t, i) => expand(t.whole, i === n - 1));
    let ranked = this.runAnd(whole, allowed, plan.kinds);
    if (ranked.length > 0) return ranked;
    // 2. identifiers as their parts, for prose that says "parse the config".
    const hasParts = plan.tokens.some((t) => t.parts.length > 0);
    const parts = hasParts
      ? plan.tokens.flatMap((t, i) =>
          t.parts.length === 0
            ? [expand(t.whole, i === n - 1)]
            : t.parts.map((p, j) => expand(p, i === n - 1 && j === t.parts.length - 1)),
        )
      : [];
    if (hasParts) {
      ranked = this.runAnd(parts, allowed, plan.kinds);
      if (ranked.length > 0) return ranked;
    }
    // 3. all words but one: "server events nuvonuka" still finds "server events" rungs.
    const words = hasParts ? parts : whole;
    if (words.length >= 3) {
      const best = new Map<string, Ranked>();
      for (let skip = 0; skip < words.length; skip++) {
        for (const r of this.runAnd(
          words.filter((_, i) => i !== skip),
          allowed,
          plan.kinds,
        )) {
          const k = `${r.shard.id}\u0000${r.path}`;
          const seen = best.get(k);
          if (!seen || seen.score < r.score) best.set(k, r);
        }
      }
      if (best.size > 0) return rank([...best.values()]);
    }
    // 4. any word at all, ranked by how many matched.
    return this.runOr([...whole, ...parts], allowed, plan.kinds);
  }

  /** Per shard: the rarest word first, then each next word only over the survivors. */
  private runAnd(
    groups: Group[],
    allowed: (id: number) => Shard | null,
    kinds: ReadonlySet<string> | null,
  ): Ranked[] {
    if (groups.length === 0 || groups.some((g) => g.expansions.length === 0)) return [];
    const perShard = this.bucket(groups, allowed);
    const out: Ranked[] = [];
    for (const [shard, b] of perShard) {
      if (b.exps.some((e) => e.length === 0)) continue;
      const direct = this.direct(shard, b.exps, 'and', kinds);
      if (direct !== null) {
        for (const r of direct) out.push({ shard, path: r.id, score: r.score });
        continue;
      }
      const order = b.exps.map((_, g) => g).sort((x, y) => b.df[x]! - b.df[y]!);
      let acc: Map<string, number> | null = null;
      for (const g of order) {
        const gate: Map<string, number> | null = acc;
        const results = this.query(shard, b.exps[g]!, kinds, gate);
        const next = new Map<string, number>();
        for (const r of results) {
          const id = r.id as string;
          next.set(id, (gate?.get(id) ?? 0) + r.score / Math.max(1, r.queryTerms.length));
        }
        acc = next;
        if (acc.size === 0) break;
      }
      if (acc) for (const [path, score] of acc) out.push({ shard, path, score });
    }
    return rank(out);
  }

  /** Any word; as in minisearch's OR, a document's score grows with the words it matched. */
  private runOr(
    groups: Group[],
    allowed: (id: number) => Shard | null,
    kinds: ReadonlySet<string> | null,
  ): Ranked[] {
    let live = groups.filter((g) => g.expansions.length > 0);
    if (live.length === 0) return [];
    // A word found in a quarter of all rungs says little on its own, and scoring every rung that
    // holds it is what makes OR slow: when rarer words are present, only they are used.
    const router = this.router!;
    let docs = 0;
    for (const s of this.shards.values()) if (allowed(s.id)) docs += s.docs.size;
    const df = (g: Group) => g.expansions.reduce((n, e) => n + router.frequency(e.row), 0);
    const rare = live.filter((g) => df(g) <= docs / 4);
    if (rare.length > 0) live = rare;
    const perShard = this.bucket(live, allowed);
    const out: Ranked[] = [];
    for (const [shard, b] of perShard) {
      const direct = this.direct(shard, b.exps, 'or', kinds);
      if (direct !== null) {
        for (const r of direct) out.push({ shard, path: r.id, score: r.score });
        continue;
      }
      const termGroups = new Map<string, number[]>();
      const exps: Expansion[] = [];
      b.exps.forEach((list, g) => {
        for (const e of list) {
          const seen = termGroups.get(e.term);
          if (seen) seen.push(g);
          else {
            termGroups.set(e.term, [g]);
            exps.push(e);
          }
        }
      });
      if (exps.length === 0) continue;
      for (const r of this.query(shard, exps, kinds, null)) {
        const matched = new Set<number>();
        for (const t of r.queryTerms) for (const g of termGroups.get(t) ?? []) matched.add(g);
        out.push({
          shard,
          path: r.id as string,
          score: (r.score / Math.max(1, r.queryTerms.length)) * matched.size,
        });
      }
    }
    return rank(out);
  }

  /** Scores a shard with the direct scorer; null to use minisearch's search() instead. */
  private direct(
    shard: Shard,
    exps: Expansion[][],
    mode: 'and' | 'or',
    kinds: ReadonlySet<string> | null,
  ) {
    if (this.scorer !== 'direct') return null;
    const req = { groups: exps, mode, kinds, boost: BOOST };
    if (shard.ms === null && shard.packed !== null) return scorePacked(shard.packed, req);
    return scoreShard(this.msOf(shard), req);
  }

  /** Which expansions of each group every candidate shard holds, and how common they are. */
  private bucket(
    groups: Group[],
    allowed: (id: number) => Shard | null,
  ): Map<Shard, { exps: Expansion[][]; df: number[] }> {
    const router = this.router!;
    const perShard = new Map<Shard, { exps: Expansion[][]; df: number[] }>();
    groups.forEach((g, gi) => {
      for (const e of g.expansions) {
        router.forEachShard(e.row, (id, count) => {
          const shard = allowed(id);
          if (!shard) return;
          let b = perShard.get(shard);
          if (!b) {
            b = { exps: groups.map(() => []), df: groups.map(() => 0) };
            perShard.set(shard, b);
          }
          b.exps[gi]!.push(e);
          b.df[gi]! += count;
        });
      }
    });
    return perShard;
  }

  private query(
    shard: Shard,
    exps: Expansion[],
    kinds: ReadonlySet<string> | null,
    gate: Map<string, number> | null,
  ): SearchResult[] {
    const leaves: Query[] = exps.map((e) =>
      e.weight === 1 ? e.term : { queries: [e.term], boostTerm: () => e.weight },
    );
    const query: Query =
      leaves.length === 1 && typeof leaves[0] === 'string' ? leaves[0] : { queries: leaves };
    let boostDocument: SearchOptions['boostDocument'];
    if (gate && kinds)
      boostDocument = (id, _t, sf) =>
        gate.has(id as string) && kinds.has(sf?.kind as string) ? 1 : 0;
    else if (gate) boostDocument = (id) => (gate.has(id as string) ? 1 : 0);
    else if (kinds) boostDocument = (_id, _t, sf) => (kinds.has(sf?.kind as string) ? 1 : 0);
    return this.msOf(shard).search(
      query,
      boostDocument ? { ...LEAF_OPTIONS, boostDocument } : LEAF_OPTIONS,
    );
  }
}

function rank(all: Ranked[]): Ranked[] {
  let out = all;
  if (out.length > 2 * MAX_RESULTS) {
    // Only the best MAX_RESULTS are kept: cut at their lowest score before the full sort.
    const scores = Float64Array.from(out, (r) => r.score).sort();
    const cut = scores[scores.length - MAX_RESULTS]!;
    out = out.filter((r) => r.score >= cut);
  }
  out.sort(
    (a, b) =>
      b.score - a.score ||
      (a.shard.repo < b.shard.repo ? -1 : a.shard.repo > b.shard.repo ? 1 : 0) ||
      (a.path < b.path ? -1 : a.path > b.path ? 1 : 0),
  );
  if (out.length > MAX_RESULTS) out.length = MAX_RESULTS;
  return out;
}

const cursorTag = (key: string): string =>
  createHash('sha256').update(key).digest('base64url').slice(0, 16);

function encodeCursor(offset: number, key: string): string {
  return Buffer.from(JSON.stringify({ v: 1, o: offset, q: cursorTag(key) })).toString('base64url');
}

function decodeCursor(cursor: unknown, key: string): number {
  const bad = (why: string) => badArg(`cursor ${why}; pass back next_cursor unchanged`, 'cursor');
  if (
    typeof cursor !== 'string' ||
    cursor.length === 0 ||
    cursor.length > 200 ||
    !/^[A-Za-z0-9_-]+$/.test(cursor)
  ) {
    throw bad('is malformed');
  }
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad('is malformed');
  }
  const o = (c as { o?: unknown })?.o;
  if (
    (c as { v?: unknown })?.v !== 1 ||
    !Number.isInteger(o) ||
    (o as number) < 0 ||
    (o as number) > MAX_RESULTS
  ) {
    throw bad('is malformed');
  }
  if ((c as { q?: unknown }).q !== cursorTag(key))
    throw bad('belongs to a different query or filter');
  return o as number;
}

async function writeAtomic(dir: string, file: string, text: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const fh = await open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(text, 'utf8');
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, file);
  } catch (e) {
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}
