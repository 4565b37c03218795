import { ZzError } from '../../errors.js';
import { cacheDir } from '../../local/paths.js';
import type { RungKind } from '../../schema/rung.js';
import type { LadderSearch, SearchHit, SetRepoResult } from '../../search/index.js';
import type { Caller } from '../access.js';
import { readableRepos } from '../repo-access.js';
import type { TokenStore } from '../token-store.js';
import { LADDER_REF, type ZzRepo } from '../zz-repo.js';
import { headIndex, isStale } from './ladder.js';
import { checkRoleKey } from './role-key.js';

// The `ladder_search` and `ladder_reindex` use cases. A front end that keeps a LadderSearch
// (the daemon) passes it in; without one (the CLI in-process) a one-off index of this
// repository is used, loaded from the user's cache when it is current, and closed after the
// call. minisearch and chokidar load only on that path (dynamic import), so plain CLI calls
// never pay for them. Hits carry `stale`, computed like ladder_read's: the anchored object
// differs from the one at the default branch head of the hit's repository.
// Hazard: the daemon's index holds every served repository's Ladder, private ones included. A
// search sees only those the caller may read (repo-access.ts); a `repo` naming another is
// answered as an unknown one is. A hostile review's token of one repository read another
// private repository's summaries here.

export interface LadderSearchArgs {
  query: string;
  repo?: string | undefined;
  kind?: RungKind | undefined;
  limit?: number | undefined;
  cursor?: string | undefined;
}

// A type alias (not an interface) so it stays assignable to the tool's loose output schema.
export type StaleSearchHit = {
  repo: string;
  path: string;
  kind: RungKind;
  title: string;
  summary: string;
  score: number;
  anchor: { commit: string; oid: string } | null;
  stale: boolean;
};

export interface LadderSearchPage {
  hits: StaleSearchHit[];
  next_cursor: string | null;
}

export interface SearchServices {
  /** The front end's index, when it keeps one. */
  search?: LadderSearch | null;
  /** Every repository the front end serves, by key (for `repo` and for staleness). */
  repos?: ReadonlyMap<string, ZzRepo> | undefined;
  /** Brings the front end's index up to a repository's ladder ref (see ensureCurrent). */
  current?: ((repo: ZzRepo) => Promise<void>) | undefined;
  /** A served repository's own token store: whether the caller's actor holds a token there. */
  tokensFor?: ((key: string) => TokenStore | undefined) | undefined;
}

/**
 * The front end's index catches up with a ladder ref moved by another process only when its
 * ref watcher fires (debounced): `zz ladder build` in-process beside a running daemon, then
 * `zz ladder search`, answered no hits. A search of a repository whose ref is ahead of its
 * entries waits for them instead; the check is a few ref reads, and a search across every
 * repository checks only the caller's (the others' watchers keep them).
 */
async function ensureCurrent(
  search: LadderSearch,
  repo: ZzRepo | undefined,
  current: SearchServices['current'],
): Promise<void> {
  if (!repo || !current) return;
  if (search.ladderOid(repo.key) !== (await repo.store.head(LADDER_REF))) return current(repo);
  // Nor while its role key no longer holds (a demotion, a Lane's revoke arriving by sync): the
  // watcher's look may be pending, and a refused rung must not be answered meanwhile. While
  // the refs stand the check is a ref read each.
  const held = search.inputsOf(repo.key);
  if (held !== undefined && (await checkRoleKey(repo, held)) === null) await current(repo);
}

/** A throwaway index of this repository alone, closed after use. */
async function withOneOffSearch<T>(
  repo: ZzRepo,
  force: boolean,
  f: (s: LadderSearch, indexed: SetRepoResult | null) => Promise<T> | T,
): Promise<T> {
  const [{ LadderSearch }, { indexRepo }] = await Promise.all([
    import('../../search/index.js'),
    import('./search-sync.js'),
  ]);
  const search = new LadderSearch({ cacheDir: cacheDir(), persistDelayMs: 0 });
  try {
    return await f(search, await indexRepo(search, repo, { force }));
  } finally {
    await search.close().catch(() => {});
  }
}

function runSearch(
  search: LadderSearch,
  args: LadderSearchArgs,
  within: readonly string[],
  known: (repo: string) => boolean,
) {
  try {
    return search.search({
      query: args.query,
      within,
      ...(args.repo === undefined ? {} : { repo: args.repo }),
      ...(args.kind === undefined ? {} : { kind: args.kind }),
      ...(args.limit === undefined ? {} : { limit: args.limit }),
      ...(args.cursor === undefined ? {} : { cursor: args.cursor }),
    });
  } catch (e) {
    // A served repository with no Ladder yet has no entries: no hits, not an unknown repo.
    if (
      e instanceof ZzError &&
      e.code === 'not_found' &&
      args.repo !== undefined &&
      known(args.repo)
    ) {
      return { hits: [], next_cursor: null };
    }
    throw e;
  }
}

/** Marks each hit stale or not, reading each hit repository's head once. */
async function withStale(
  hits: readonly SearchHit[],
  repoOf: (key: string) => ZzRepo | undefined,
): Promise<StaleSearchHit[]> {
  const indexes = new Map<string, ReturnType<typeof headIndex>>();
  return Promise.all(
    hits.map(async (h) => {
      const repo = repoOf(h.repo);
      if (!repo || !h.anchor) return { ...h, stale: false };
      let index = indexes.get(h.repo);
      if (!index) {
        index = headIndex(repo).catch(() => null);
        indexes.set(h.repo, index);
      }
      const rung = { path: h.path, kind: h.kind, anchor: h.anchor };
      const stale = await isStale(repo, await index, rung).catch(() => false);
      return { ...h, stale };
    }),
  );
}

/**
 * Full-text search over the Ladders this front end knows that the caller may read (or this
 * repository's alone). caller: who asks, authenticated in `repo`.
 */
export async function ladderSearch(
  repo: ZzRepo,
  caller: Caller | null,
  services: SearchServices,
  args: LadderSearchArgs,
): Promise<LadderSearchPage> {
  const repos = services.repos;
  const reader = caller ? { actor: caller.actor, repo: repo.key } : null;
  const within = repos
    ? await readableRepos(repos, reader, services.tokensFor, args.repo)
    : [repo.key];
  if (!within.includes(repo.key)) within.push(repo.key);
  const readable = new Set(within);
  const known = (r: string) => readable.has(r);
  const repoOf = (key: string) => (key === repo.key ? repo : repos?.get(key));
  if (services.search) {
    const scope = args.repo === undefined ? repo : known(args.repo) ? repoOf(args.repo) : undefined;
    await ensureCurrent(services.search, scope, services.current);
  }
  const page = services.search
    ? runSearch(services.search, args, within, known)
    : await withOneOffSearch(repo, false, (s) => runSearch(s, args, within, known));
  return { hits: await withStale(page.hits, repoOf), next_cursor: page.next_cursor };
}

export interface LadderReindexResult {
  repo: string;
  ladder_oid: string | null;
  docs: number;
  source: string | null;
  ms: number;
}

/** Rebuilds this repository's entries in the index from its current Ladder. */
export async function ladderReindex(
  repo: ZzRepo,
  services: SearchServices,
): Promise<LadderReindexResult> {
  const started = performance.now();
  const search = services.search;
  const r = search
    ? await (await import('./search-sync.js')).indexRepo(search, repo, { force: true })
    : await withOneOffSearch(repo, true, (_s, indexed) => indexed);
  return {
    repo: repo.key,
    ladder_oid: r?.ladder_oid ?? null,
    docs: r?.docs ?? 0,
    source: r?.source ?? null,
    ms: Math.round((performance.now() - started) * 10) / 10,
  };
}
