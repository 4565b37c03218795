import type MiniSearch from 'minisearch';
import type { Query, SearchOptions, SearchResult } from 'minisearch';
import { ZzError } from '../errors.js';
import { RUNG_KINDS, type RungKind } from '../schema/rung.js';
import { decodeCursor } from './cursor.js';
import { scorePacked, scoreShard } from './direct-scorer.js';
import { shardTerms, type ShardTerms } from './shard-file.js';
import {
  badArg,
  BOOST,
  checkRepoKey,
  KIND_SET,
  termsFromDocs,
  type Shard,
  type ShardStore,
} from './shard-store.js';
import { TermRouter, type Expansion } from './term-router.js';
import { queryTokens, type QueryToken } from './tokenize.js';

// Query planning and ranking over the shard store. A query is planned against a router holding
// every shard's vocabulary (term-router.ts): fuzzy and prefix expansion happen once per query,
// and only shards holding every query word (for AND) are scored, rarest word first
// (direct-scorer.ts). While AND finds fewer than FILL rungs it relaxes in steps, each step's
// rungs ranked below the stricter ones: identifier parts, all words but one, then any word.

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 50;
/** Deepest a cursor can page: results are capped, as ranking that far down is noise. */
export const MAX_RESULTS = 1000;
const MAX_QUERY_CHARS = 500;
const MAX_QUERY_TOKENS = 16;
/** Relaxed steps run until this many results are found (independent of the page size). */
const FILL = DEFAULT_LIMIT;
/**
 * A query word of ABBREV_WORD letters or more also matches, weighed down, the terms its first
 * ABBREV_MIN to ABBREV_MAX letters spell: the abbreviations code uses for it (`inc`, `decl`,
 * `expr`). Longer heads are left out: "classes" must not match every summary's "class".
 */
const ABBREV_MIN = 3;
const ABBREV_MAX = 4;
const ABBREV_WORD = 6;
const ABBREV_WEIGHT = 0.5;

export interface SearchRequest {
  query: string;
  repo?: string;
  /**
   * Only these repositories (the ones the caller may read): others are never scored, counted
   * or named. A `repo` outside them answers as an unknown one does. Absent: every loaded repo.
   */
  within?: readonly string[];
  kind?: RungKind | readonly RungKind[];
  limit?: number;
  cursor?: string;
}

// Leaves of a planned query are exact, already-processed terms.
const LEAF_OPTIONS: SearchOptions = {
  tokenize: (s) => [s],
  processTerm: (t) => t,
  prefix: false,
  fuzzy: false,
  combineWith: 'OR',
};
export interface Plan {
  tokens: QueryToken[];
  repo: string | null;
  within: ReadonlySet<string> | null;
  kinds: ReadonlySet<string> | null;
  limit: number;
  offset: number;
  key: string;
}

export interface Ranked {
  readonly shard: Shard;
  readonly path: string;
  readonly score: number;
}

interface Group {
  expansions: Expansion[];
}

const fuzzyDistance = (term: string): number =>
  term.length >= 5 ? Math.min(2, Math.round(term.length * 0.2)) : 0;

export class QueryEngine {
  private router: TermRouter | null = TermRouter.empty();
  /** The router of the query being run (a shard lost mid-query must not take it away). */
  private active: TermRouter = TermRouter.empty();

  constructor(
    private readonly store: ShardStore,
    private readonly scorer: 'direct' | 'minisearch',
  ) {}

  /** Vocabulary changed: the router is rebuilt on the next query. */
  invalidate(): void {
    this.router = null;
  }

  get routerTerms(): number | null {
    return this.router?.size ?? null;
  }

  plan(req: SearchRequest): Plan {
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
    const within = req.within === undefined ? null : new Set(req.within);
    let repo: string | null = null;
    if (req.repo !== undefined) {
      repo = checkRepoKey(req.repo);
      // One answer for a repo that is not there and one the caller may not read: the
      // refusal must not tell a private repository's existence.
      if (!this.store.shards.has(repo) || (within !== null && !within.has(repo)))
        throw new ZzError(
          'not_found',
          `repo ${repo} is not indexed: search names a repository this daemon serves and you may read; repo_state (zz repo state) lists them`,
          { repo },
        );
    }
    let kinds: Set<string> | null = null;
    if (req.kind !== undefined) {
      const list: unknown[] = Array.isArray(req.kind) ? [...(req.kind as unknown[])] : [req.kind];
      if (list.length === 0 || !list.every((k) => typeof k === 'string' && KIND_SET.has(k))) {
        throw badArg(`kind must be one of ${RUNG_KINDS.join(', ')}`, 'kind');
      }
      kinds = new Set(list as string[]);
    }
    // `within` is in the key: a cursor (which carries the key's hash) minted for one caller's
    // set of repositories does not page another's.
    const key = JSON.stringify([
      tokens,
      repo,
      kinds ? [...kinds].sort() : null,
      within ? [...within].sort() : null,
    ]);
    const offset = req.cursor === undefined ? 0 : decodeCursor(req.cursor, key, MAX_RESULTS);
    return { tokens, repo, within, kinds, limit, offset, key };
  }

  private routerNow(): TermRouter {
    if (this.router) return this.router;
    const inputs: Array<{ shard: number; terms: ShardTerms }> = [];
    for (const s of this.store.shards.values()) {
      s.terms ??=
        shardTerms(this.store.msOf(s) as MiniSearch<never>) ?? termsFromDocs(s.docs.values());
      inputs.push({ shard: s.id, terms: s.terms });
    }
    this.router = TermRouter.build(inputs);
    return this.router;
  }

  run(plan: Plan): Ranked[] {
    const router = this.routerNow();
    this.active = router;
    const allowed = (id: number): Shard | null => {
      const s = this.store.byId.get(id);
      if (!s) return null;
      if (plan.repo !== null && s.repo !== plan.repo) return null;
      if (plan.within !== null && !plan.within.has(s.repo)) return null;
      if (plan.kinds !== null && ![...plan.kinds].some((k) => (s.kinds.get(k) ?? 0) > 0))
        return null;
      return s;
    };
    // The shards of the repositories the caller may read: what the query's words expand to
    // is computed from their vocabulary alone (TermRouter.expand, ExpandOptions.shards).
    let shards: Set<number> | null = null;
    if (plan.within !== null) {
      shards = new Set();
      for (const s of this.store.shards.values()) if (plan.within.has(s.repo)) shards.add(s.id);
    }
    const n = plan.tokens.length;
    const expand = (term: string, last: boolean): Group => {
      const expansions = router.expand(term, {
        prefix: last && term.length >= 2,
        fuzzy: fuzzyDistance(term),
        shards,
      });
      // The word's abbreviations that are terms too (ABBREV_*): "increment" meets `inc`.
      const have = new Set(expansions.map((e) => e.term));
      const longest = term.length >= ABBREV_WORD ? Math.min(ABBREV_MAX, term.length - 1) : 0;
      for (let len = longest; len >= ABBREV_MIN; len--) {
        const head = term.slice(0, len);
        if (have.has(head)) continue;
        for (const e of router.expand(head, { prefix: false, fuzzy: 0, shards }))
          expansions.push({ ...e, weight: ABBREV_WEIGHT * (len / term.length) });
      }
      return { expansions };
    };
    // Each step's results rank below the previous step's, and a step runs only while fewer
    // than FILL results are found: a query whose every word matches one rung still lists the
    // rungs that match all words but one (a reader's wording rarely matches a summary's).
    const out: Ranked[] = [];
    const seen = new Set<string>();
    const add = (rs: readonly Ranked[]): boolean => {
      const fresh = rs.filter((r) => !seen.has(`${r.shard.id}\u0000${r.path}`));
      // A step ranks below the stricter ones, and so must its scores: a relaxed step's best
      // (its words rarer) could score above a stricter step's last, and callers that sort or
      // cut by score read that as out of order. Scaled by one factor, the step keeps its order.
      const floor = out.length > 0 ? out[out.length - 1]!.score : Infinity;
      const top = fresh.length > 0 ? fresh[0]!.score : 0;
      const f = top > floor ? floor / top : 1;
      for (const r of fresh) {
        seen.add(`${r.shard.id}\u0000${r.path}`);
        out.push(f === 1 ? r : { shard: r.shard, path: r.path, score: r.score * f });
      }
      if (out.length > MAX_RESULTS) out.length = MAX_RESULTS;
      return out.length >= FILL;
    };
    // 1. every word, identifiers whole (`parseConfig` matches parseConfigFile by prefix).
    const whole = plan.tokens.map((t, i) => expand(t.whole, i === n - 1));
    if (add(this.runAnd(whole, allowed, plan.kinds))) return out;
    // 2. identifiers as their parts, for prose that says "parse the config".
    const hasParts = plan.tokens.some((t) => t.parts.length > 0);
    const parts = hasParts
      ? plan.tokens.flatMap((t, i) =>
          t.parts.length === 0
            ? [expand(t.whole, i === n - 1)]
            : t.parts.map((p, j) => expand(p, i === n - 1 && j === t.parts.length - 1)),
        )
      : [];
    if (hasParts && add(this.runAnd(parts, allowed, plan.kinds))) return out;
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
          const prior = best.get(k);
          if (!prior || prior.score < r.score) best.set(k, r);
        }
      }
      if (add(rank([...best.values()]))) return out;
    }
    // 4. any word at all, ranked by how many matched.
    add(this.runOr([...whole, ...parts], allowed, plan.kinds));
    return out;
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
        for (const r of direct) out.push(r);
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
    // A word found in a quarter of all rungs says little on its own, and scoring every rung that
    // holds it is what makes OR slow: when rarer words are present, only they are used. Both
    // are counted over the shards this search may use: a word common (or only present) in other
    // repositories must not crowd out the word a repo-scoped query has here.
    const router = this.active;
    let docs = 0;
    for (const s of this.store.shards.values()) if (allowed(s.id)) docs += s.docs.size;
    const df = (g: Group) => {
      let n = 0;
      for (const e of g.expansions)
        router.forEachShard(e.row, (id, count) => {
          if (allowed(id)) n += count;
        });
      return n;
    };
    const counted = groups.map((g) => ({ g, n: df(g) })).filter((x) => x.n > 0);
    if (counted.length === 0) return [];
    const rare = counted.filter((x) => x.n <= docs / 4);
    const live = (rare.length > 0 ? rare : counted).map((x) => x.g);
    const perShard = this.bucket(live, allowed);
    const out: Ranked[] = [];
    for (const [shard, b] of perShard) {
      const direct = this.direct(shard, b.exps, 'or', kinds);
      if (direct !== null) {
        for (const r of direct) out.push(r);
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
    if (shard.ms === null && shard.file !== null) {
      try {
        return scorePacked(this.store.packedOf(shard), req, shard);
      } catch {
        // Damaged past its head: rebuilt from its documents, or forgotten when they are too.
        if (!this.store.repair(shard)) return [];
      }
    }
    return scoreShard(this.store.msOf(shard), req, shard);
  }

  /** Which expansions of each group every candidate shard holds, and how common they are. */
  private bucket(
    groups: Group[],
    allowed: (id: number) => Shard | null,
  ): Map<Shard, { exps: Expansion[][]; df: number[] }> {
    const router = this.active;
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
    return this.store
      .msOf(shard)
      .search(query, boostDocument ? { ...LEAF_OPTIONS, boostDocument } : LEAF_OPTIONS);
  }
}

export function rank(all: Ranked[]): Ranked[] {
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
  // What is kept has its path decoded now: a kept result never refers to a shard's index.
  for (const r of out) void r.path;
  return out;
}
