import { ZzError } from '../errors.js';
import { KeyedQueue } from '../local/keyed-queue.js';
import type { RungKind } from '../schema/rung.js';
import { encodeCursor } from './cursor.js';
import { forgetScratch } from './direct-scorer.js';
import { QueryEngine, type Ranked, type SearchRequest } from './query.js';
import type { ShardDoc } from './shard-file.js';
import {
  badArg,
  buildIndex,
  checkOid,
  checkRepoKey,
  countKinds,
  ownDocs,
  ShardStore,
  toDoc,
  type IndexRung,
  type InputsCheck,
  type LoadFailure,
} from './shard-store.js';

// Full-text search over the Ladders of every known repo: one shard per repo, persisted under
// <cacheDir>/search/ and keyed by the ladder ref's oid and whatever else the caller says its
// rungs depend on (opaque `inputs`, checked by the caller's InputsCheck: the Ladder fold's
// role inputs), updated in place (replace / discard / vacuum) when the ref moves. A persisted shard is served from its file: only its vocabulary
// is read at start, its index when a query first needs it (dropped again, least recently used
// first, past the memory budget), its documents row by row for the hits shown (shard-store.ts).
// Queries are planned against a router holding every shard's vocabulary (term-router.ts):
// fuzzy and prefix expansion happen once per query, and only shards holding every query word
// (for AND) are scored, rarest word first (direct-scorer.ts), from the packed postings;
// minisearch's own maps are built only when a shard changes.

// The pieces: shard-store.ts (shards in memory and on disk), query.ts (planning and ranking),
// cursor.ts (paging). This class is the API: set, diff and remove repos; search; stats.

export { DEFAULT_LIMIT, MAX_LIMIT, MAX_RESULTS, type SearchRequest } from './query.js';
export { OPTIONS_VERSION, shardFileName, type IndexRung, type InputsCheck } from './shard-store.js';

const RESULT_CACHE_SIZE = 32;
// Above this share of a shard changed at once, a fresh build beats replace/discard + vacuum.
const REBUILD_FRACTION = 0.3;

/** Rungs, and the inputs (besides the ladder oid) they were produced from. */
export interface KeyedRungs {
  rungs: readonly IndexRung[];
  inputs: string | null;
}

/** Rungs, or a function producing them; the function is only called when a build is needed. */
export type RungSource =
  | readonly IndexRung[]
  | (() =>
      | readonly IndexRung[]
      | KeyedRungs
      | Promise<readonly IndexRung[]>
      | Promise<KeyedRungs>
      | Promise<readonly IndexRung[] | KeyedRungs>);

export interface SetRepoOptions {
  /**
   * Whether a shard held (in memory, or persisted for the same ladder oid) is current by what
   * it is keyed on besides the oid; without it any such shard is. Not called for a rebuild.
   */
  check?: InputsCheck;
  /**
   * Build from the rungs even if a shard is held for this oid. The shard held stays searchable
   * until the new one replaces it: readers see the old entries or the new, never none.
   */
  rebuild?: boolean;
}

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
  /**
   * Bytes of shard index sections kept in memory, all shards together (default 64 MiB); past
   * it the least recently searched are dropped and read again from disk when next needed.
   */
  memoryBudget?: number;
}

export interface SetRepoResult {
  repo: string;
  ladder_oid: string;
  docs: number;
  /** `memory`: already current; `cache`: loaded from disk; `built`: indexed from the rungs. */
  source: 'memory' | 'cache' | 'built';
  /** Why the persisted shard was not used, when it was not. */
  reason?: LoadFailure;
  ms: number;
}

export interface LadderDiff {
  upsert?: readonly IndexRung[];
  remove?: readonly string[];
  /** The ladder oid the diff was computed from; a mismatch is a conflict (reindex instead). */
  base?: string;
  /** What the shard is keyed on besides the oid from now on (kept when not given). */
  inputs?: string | null;
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
  /** Whether minisearch's maps are built (a shard changed here, or materialize()d). */
  materialized: boolean;
  /** Served from its file with its index section in memory. */
  loaded: boolean;
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
  /** Index sections dropped to stay within the memory budget, since start. */
  evictions: number;
  shards: ShardStats[];
}

export class LadderSearch {
  private readonly vacuumMinDirt: number | undefined;
  private readonly store: ShardStore;
  private readonly engine: QueryEngine;
  /** Writes of one repo's shard run one at a time; different repos side by side. */
  private readonly writes = new KeyedQueue();
  private readonly results = new Map<string, { generation: number; ranked: Ranked[] }>();
  private generation = 0;

  constructor(opts: LadderSearchOptions) {
    if (typeof opts?.cacheDir !== 'string' || opts.cacheDir.length === 0) {
      throw badArg('cacheDir is required', 'cacheDir');
    }
    this.vacuumMinDirt = opts.vacuumMinDirt;
    this.store = new ShardStore(
      opts.cacheDir,
      opts.persistDelayMs ?? 1000,
      (docs) => {
        if (docs) this.generation++;
        this.engine.invalidate();
      },
      opts.memoryBudget,
    );
    this.engine = new QueryEngine(this.store, opts.scorer ?? 'direct');
  }

  /** Where a repo's shard is persisted. */
  fileFor(repo: string): string {
    return this.store.fileFor(repo);
  }

  /** The ladder oid a repo is indexed at, or null when it is not loaded. */
  ladderOid(repo: string): string | null {
    return this.store.shards.get(repo)?.ladderOid ?? null;
  }

  /** What a repo's shard is keyed on besides its ladder oid; undefined when it is not loaded. */
  inputsOf(repo: string): string | null | undefined {
    return this.store.shards.get(repo)?.inputs;
  }

  /**
   * Re-keys a repo's shard held at `ladderOid` (its inputs moved without changing its rungs:
   * see InputsCheck). Memory only: a persisted file keeps the inputs it was written with, which
   * the next load checks again. False when the shard is not held at that oid.
   */
  setInputs(repo: string, ladderOid: string, inputs: string | null): boolean {
    const shard = this.store.shards.get(repo);
    if (!shard || shard.ladderOid !== ladderOid) return false;
    shard.inputs = inputs;
    return true;
  }

  /**
   * Makes `repo` searchable at `ladderOid`: nothing to do if already there, else the persisted
   * shard when it was written for the same oid and options, else a build from `rungs`. See
   * SetRepoOptions for what else keys a shard and for a rebuild.
   */
  async setRepo(
    repo: string,
    ladderOid: string,
    rungs: RungSource,
    opts: SetRepoOptions = {},
  ): Promise<SetRepoResult> {
    checkRepoKey(repo);
    checkOid(ladderOid);
    return this.writes.run(repo, async () => {
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
      let reason: LoadFailure | undefined;
      if (!opts.rebuild) {
        const current = this.store.shards.get(repo);
        if (current && current.ladderOid === ladderOid) {
          const inputs = opts.check ? await opts.check(current.inputs).catch(() => null) : null;
          if (!opts.check || inputs !== null) {
            if (opts.check) current.inputs = inputs;
            return done('memory', current.docs.size);
          }
        }
        const loaded = await this.store.load(repo, ladderOid, opts.check);
        if ('shard' in loaded) {
          this.store.install(loaded.shard);
          return done('cache', loaded.shard.docs.size);
        }
        reason = loaded.reason;
      }
      const produced = typeof rungs === 'function' ? await rungs() : rungs;
      const keyed = !Array.isArray(produced) && produced !== null && typeof produced === 'object';
      const input = keyed ? (produced as KeyedRungs).rungs : produced;
      const inputs = keyed ? (produced as KeyedRungs).inputs : null;
      if (!Array.isArray(input)) throw badArg('rungs must be an array', 'rungs');
      const docs = new Map<string, ShardDoc>();
      for (const r of input) {
        const d = toDoc(r);
        docs.set(d.path, d);
      }
      const shard = this.store.newShard(
        repo,
        ladderOid,
        buildIndex(docs.values()),
        docs,
        'built',
        null,
        inputs,
      );
      // Replaces the shard held (if any) in one step: a search sees the old or the new.
      this.store.install(shard);
      // Written on the next turn, then served from its file: a built shard holds ~10 MiB of
      // minisearch maps until then (the debounce is for diffs, which come in bursts).
      this.store.schedulePersist(shard, 0);
      return done('built', docs.size, reason);
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
    return this.writes.run(repo, async () => {
      const shard = this.store.shards.get(repo);
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
      const ms = this.store.msOf(shard);
      const docs = ownDocs(shard);
      // From here the shard is what memory holds, not what its file says.
      this.store.detach(shard);
      shard.version++;
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
      if (diff.inputs !== undefined) shard.inputs = diff.inputs;
      shard.terms = null;
      shard.source = 'diff';
      shard.updatedAt = Date.now();
      this.changed();
      this.store.schedulePersist(shard);
      result.docs = shard.docs.size;
      return result;
    });
  }

  /** Forgets a repo; `purge` also deletes its persisted shard. */
  async removeRepo(repo: string, opts: { purge?: boolean } = {}): Promise<boolean> {
    checkRepoKey(repo);
    return this.writes.run(repo, () => this.store.remove(repo, opts.purge === true));
  }

  /** Searches every loaded repo (or one), ranked by score, paged by an opaque cursor. */
  search(req: SearchRequest): SearchPage {
    const plan = this.engine.plan(req);
    let entry = this.results.get(plan.key);
    if (!entry || entry.generation !== this.generation) {
      entry = { generation: this.generation, ranked: this.engine.run(plan) };
      this.results.delete(plan.key);
      this.results.set(plan.key, entry);
      if (this.results.size > RESULT_CACHE_SIZE)
        this.results.delete(this.results.keys().next().value!);
    }
    const ranked = entry.ranked;
    const page = ranked.slice(plan.offset, plan.offset + plan.limit);
    const hits: SearchHit[] = [];
    for (const r of page) {
      let doc: ShardDoc | undefined;
      try {
        doc = r.shard.docs.get(r.path);
      } catch {
        // Its file is damaged past the head: repaired from what can be read, or forgotten.
        this.store.repair(r.shard);
        doc =
          this.store.shards.get(r.shard.repo) === r.shard ? r.shard.docs.get(r.path) : undefined;
      }
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
    this.store.trim();
    return { hits, next_cursor: end < ranked.length ? encodeCursor(end, plan.key) : null };
  }

  stats(): LadderSearchStats {
    const shards = [...this.store.shards.values()].map((s) => ({
      repo: s.repo,
      ladder_oid: s.ladderOid,
      docs: s.docs.size,
      dirt: s.ms?.dirtCount ?? 0,
      materialized: s.ms !== null,
      loaded: s.packed !== null,
      source: s.source,
      updated_at: new Date(s.updatedAt).toISOString(),
      pending_write: s.pendingWrite,
      last_write_error: s.lastWriteError,
      file: this.store.fileFor(s.repo),
    }));
    return {
      cache_dir: this.store.dir,
      repos: shards.length,
      docs: shards.reduce((n, s) => n + s.docs, 0),
      router_terms: this.engine.routerTerms,
      generation: this.generation,
      evictions: this.store.evictions,
      shards,
    };
  }

  /** Writes every changed shard now. Rejects with the first write failure. */
  flush(): Promise<void> {
    return this.store.flush();
  }

  /** Flushes and stops scheduling writes. */
  close(): Promise<void> {
    return this.store.close();
  }

  /**
   * Builds minisearch's maps for every shard loaded from disk, one shard per turn of the event
   * loop. Searching does not need them (packed postings are scored directly); a diff, or the
   * `minisearch` scorer, does, so a daemon may call this once it is idle.
   */
  materialize(): Promise<void> {
    return this.store.materialize();
  }

  private changed(): void {
    this.generation++;
    this.engine.invalidate();
  }
}
