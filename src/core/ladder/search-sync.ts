import { isZzError } from '../../errors.js';
import { cacheDir } from '../../local/paths.js';
import { changedPaths as gitChangedPaths, commitMessages, readCommit } from '../../git/index.js';
import { rungPathFromFile, type Rung } from '../../schema/rung.js';
import type { OpRecord, Snapshot } from '../../store/index.js';
import {
  LadderSearch,
  watchRefs,
  type IndexRung,
  type KeyedRungs,
  type RefWatcher,
  type SetRepoResult,
} from '../../search/index.js';
import type { LadderOp } from '../../schema/ladder-ops.js';
import { CONFIG_REF, LADDER_REF, LANES_PREFIX, type CommitEvent, type ZzRepo } from '../zz-repo.js';
import { CLAIM_LOST_EVENT } from '../sync/auto-sync.js';
import { mentionsOf } from './extract/mentions.js';
import { LadderEntity, roleKeyOfFold } from './ladder-entity.js';
import { pathsOfOp, type LadderState } from './ladder-state.js';
import { checkRoleKey, sameRoles } from './role-key.js';

// Keeps a LadderSearch in step with the Ladders of the repositories a front end serves: each is
// indexed from its ladder ref's guarded fold, then updated by diff (a) on this process's own
// ladder commits and (b) whenever refs/zz/ladder moves from outside — another zz process,
// `git update-ref`, a fetch and its hook — as seen by the ref watcher. Every update re-reads
// the ref, so a missed or coalesced signal only delays.
//
// The fold's rungs depend on more than the ladder ref: on refs/zz/config (a demoted owner's
// rungs, and those resting on them, are refused retroactively) and on the coordinator history
// of the Lanes its writes cite (a revoke dated before a rung, arriving by sync). So each shard
// is keyed on the ladder oid and the fold's role key (role-key.ts): a persisted shard is
// loaded only while both hold (checked without a fold: a ref read each while the refs stand),
// and a config move or a cited Lane's move (own commit or ref watcher) checks the key again;
// a changed key re-indexes the repository whole, the old entries searchable until the new
// replace them.

export function toIndexRung(r: Rung): IndexRung {
  // A file's index entry also holds the words its comments and messages use (the outline's
  // "Mentions:" line), so a reader's wording finds the file that explains itself in prose.
  const mentions = r.kind === 'file' ? mentionsOf(r.detail) : [];
  const symbols = mentions.length > 0 ? [...(r.symbols ?? []), ...mentions] : r.symbols;
  return {
    path: r.path,
    kind: r.kind,
    title: r.title,
    summary: r.summary,
    ...(symbols ? { symbols } : {}),
    anchor: r.anchor ?? null,
  };
}

/**
 * The rungs of the Ladder as its guarded fold holds them (what ladder_read and ladder_tree
 * show), never its tree's files: a fast-forward adopts another machine's tree as it is, and a
 * merge keeps every file its local ops did not touch, so a file a refused op put there (or an
 * extra one beside a permitted op) sits in the tree while the fold refuses it (DESIGN §7).
 * Indexing the tree made such text searchable and fed it to `zz work` prompts (found in
 * review). The shared entity (kept for the process's life once a ladder_read made it) is
 * used when it exists; otherwise a fold of its own, dropped after indexing: a daemon serving 50
 * repos must not keep every Ladder's folded state and op log (tens of MiB for 2,000 rungs) just
 * to index it. Hazard: that fold reads the whole op log each time the ref moves.
 */
async function foldAt(
  repo: ZzRepo,
): Promise<{ snap: Snapshot<LadderState, LadderOp>; inputs: string | null }> {
  const shared = repo.existingEntity(LADDER_REF) as LadderEntity | undefined;
  const snap = await (shared ?? new LadderEntity(repo)).read();
  return { snap, inputs: roleKeyOfFold(snap) };
}

function keyedRungs(fold: Awaited<ReturnType<typeof foldAt>>): KeyedRungs {
  return { rungs: [...fold.snap.state.values()].map(toIndexRung), inputs: fold.inputs };
}

/**
 * Makes `repo` searchable at its current Ladder. `force` rebuilds its entries from the rungs
 * (the old ones searchable until the new replace them). Null when it has no Ladder.
 */
export async function indexRepo(
  search: LadderSearch,
  repo: ZzRepo,
  opts: { force?: boolean } = {},
): Promise<SetRepoResult | null> {
  const revision = await repo.store.head(LADDER_REF);
  if (revision === null) {
    await search.removeRepo(repo.key, { purge: opts.force === true });
    return null;
  }
  // Folded only when the index has no shard for this revision whose role key holds: a daemon
  // starting on 50 indexed repositories loads their shards and folds none (and keeps no fold:
  // see foldAt). A fold that finds the ref moved on indexes the newer rungs under `revision`;
  // the move's own update re-reads every path it changed, so the shard ends current either way.
  return search.setRepo(
    repo.key,
    revision,
    async () => keyedRungs(await foldAt(repo)),
    opts.force ? { rebuild: true } : { check: (held) => checkRoleKey(repo, held) },
  );
}

/**
 * Whether a Lane commit event may change a coordinator timeline. A local write appends its ops
 * (earlier ones fold as before), so only a propose or a grant can; a sync that adopted or
 * merged another machine's history (auto-sync.ts announce: no ops, or only claim_lost notices)
 * may have brought anything. Other processes' moves are seen by the ref watcher.
 */
function movesRoles(e: CommitEvent): boolean {
  if (e.ops.length === 0 || e.ops.every((op) => op.op === CLAIM_LOST_EVENT)) return true;
  return e.ops.some((op) => op.op === 'lane_propose' || op.op === 'lane_grant');
}

export interface LadderSync {
  /** Resolves once every repository has been indexed once. */
  ready: Promise<void>;
  /** Re-reads one repository's ladder ref and brings its entries up to date. */
  refresh(repo: ZzRepo): Promise<void>;
  close(): Promise<void>;
}

export interface LadderSyncOptions {
  log?: (line: string) => void;
  /** Watch the repositories' refs for moves made by other processes (default true). */
  watch?: boolean;
  debounceMs?: number;
}

/** Starts syncing; resolves once the ref watcher is live (initial indexing continues in `ready`). */
export async function startLadderSync(
  search: LadderSearch,
  repos: ReadonlyMap<string, ZzRepo>,
  opts: LadderSyncOptions = {},
): Promise<LadderSync> {
  const log = opts.log ?? (() => {});
  const chains = new Map<
    string,
    { tail: Promise<void>; queued: boolean; event: CommitEvent | null }
  >();
  let closed = false;

  const changedPaths = async (
    repo: ZzRepo,
    snap: Snapshot<LadderState>,
    from: string,
    to: string,
    event: CommitEvent | null,
  ): Promise<string[] | null> => {
    const git = repo.git;
    if (!git) return null;
    const paths = new Set<string>();
    const ofOps = (ops: Iterable<OpRecord>) => {
      for (const op of ops) {
        const { upserted, removed } = pathsOfOp(op);
        for (const p of upserted) paths.add(p);
        for (const p of removed) paths.add(p);
      }
    };
    // Our own commit on top of what the index holds: its ops name every path it touched.
    if (event && event.revision === to) {
      if ((await readCommit(git.catFile, to))?.parents[0] === from) {
        ofOps(event.ops);
        return [...paths];
      }
    }
    // Another machine's commits: the paths their trees changed (a file a refused op rewrote
    // is put back to the fold's rung) and those their ops name (a tree need not match its ops).
    for (const file of await gitChangedPaths(git.gitdir, from, to)) {
      try {
        paths.add(rungPathFromFile(file));
      } catch {
        /* not a rung file: nothing to index */
      }
    }
    const arrived = new Set((await commitMessages(git.gitdir, to, from)).map((c) => c.oid));
    const ops: OpRecord[] = [];
    snap.log.forEach((op) => {
      if (arrived.has(op.revision)) ops.push(op);
    });
    ofOps(ops);
    return [...paths];
  };

  const syncOnce = async (repo: ZzRepo, event: CommitEvent | null): Promise<void> => {
    // The refs alone say whether anything is to be done; the fold is read only for a diff or
    // a build (a shard of the same revision and role key needs neither).
    const head = await repo.store.head(LADDER_REF);
    const from = search.ladderOid(repo.key);
    if (head === null) {
      if (from !== null) await search.removeRepo(repo.key);
      return;
    }
    if (from === null) {
      // Not indexed yet (a start): the persisted shard if its key holds, else a build.
      await indexRepo(search, repo);
      return;
    }
    if (from === head) {
      const held = search.inputsOf(repo.key) ?? null;
      const now = await checkRoleKey(repo, held);
      if (now === null) await indexRepo(search, repo, { force: true });
      else if (now !== held) search.setInputs(repo.key, head, now);
      return;
    }
    const fold = await foldAt(repo);
    const { snap, inputs } = fold;
    const to = snap.revision;
    if (to === null || from === to) return;
    // A diff re-reads the paths the ladder commits touched; when the roles moved too, any rung
    // may have changed: index it whole.
    if (sameRoles(search.inputsOf(repo.key) ?? null, inputs)) {
      const paths = await changedPaths(repo, snap, from, to, event).catch(() => null);
      if (paths !== null) {
        const upsert: IndexRung[] = [];
        const remove: string[] = [];
        for (const p of paths) {
          const r = snap.state.get(p);
          if (r) upsert.push(toIndexRung(r));
          else remove.push(p);
        }
        try {
          await search.applyDiff(repo.key, to, { upsert, remove, base: from, inputs });
          return;
        } catch (e) {
          if (!isZzError(e)) throw e;
          // The index moved meanwhile (or lost the repo): index it whole instead.
        }
      }
    }
    await search.setRepo(repo.key, to, () => keyedRungs(fold), { rebuild: true });
  };

  const refresh = (repo: ZzRepo, event: CommitEvent | null = null): Promise<void> => {
    let c = chains.get(repo.key);
    if (!c) chains.set(repo.key, (c = { tail: Promise.resolve(), queued: false, event: null }));
    const chain = c;
    if (chain.queued) {
      // Coalesced with the sync already waiting; it re-reads the ref, so nothing is lost.
      if (event === null || chain.event?.revision !== event.revision) chain.event = null;
      return chain.tail;
    }
    chain.queued = true;
    chain.event = event;
    chain.tail = chain.tail.then(async () => {
      chain.queued = false;
      const ev = chain.event;
      chain.event = null;
      if (closed) return;
      try {
        await syncOnce(repo, ev);
      } catch (e) {
        log(`search: could not index ${repo.key}: ${(e as Error)?.message ?? String(e)}`);
      }
    });
    return chain.tail;
  };

  const unsubscribe: Array<() => void> = [];
  for (const repo of repos.values()) {
    unsubscribe.push(
      repo.onCommit((e) => {
        if (e.ref === LADDER_REF) void refresh(repo, e);
        else if (e.ref === CONFIG_REF || (e.ref.startsWith(LANES_PREFIX) && movesRoles(e))) {
          void refresh(repo);
        }
      }),
    );
  }
  const byGitdir = new Map<string, ZzRepo>();
  for (const repo of repos.values()) if (repo.git) byGitdir.set(repo.git.gitdir, repo);
  let watcher: RefWatcher | null = null;
  if (opts.watch !== false && byGitdir.size > 0) {
    watcher = watchRefs(
      [...byGitdir.keys()],
      (gitdir) => {
        const repo = byGitdir.get(gitdir);
        if (repo) void refresh(repo);
      },
      {
        ...(opts.debounceMs === undefined ? {} : { debounceMs: opts.debounceMs }),
        onError: (e, gitdir) =>
          log(`search: watching ${gitdir}: ${(e as Error)?.message ?? String(e)}`),
      },
    );
    await watcher.ready;
  }
  // One repository at a time: a cold start that must build 50 Ladders' shards then holds one
  // build in memory (each is written and dropped before the next), not all 50 at once.
  const ready = (async () => {
    for (const r of repos.values()) await refresh(r);
  })();

  return {
    ready,
    refresh: (repo) => refresh(repo),
    async close() {
      closed = true;
      for (const u of unsubscribe) u();
      await watcher?.();
      await Promise.all([...chains.values()].map((c) => c.tail));
    },
  };
}

export interface ServedSearch {
  search: LadderSearch;
  sync: LadderSync;
  /** Every served repository indexed once. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * The daemon's search: the given LadderSearch (left open on close) or a new one persisted under
 * `cacheDir` (flushed and closed on close), synced with every served repository.
 */
export async function startServedSearch(
  repos: ReadonlyMap<string, ZzRepo>,
  opts: LadderSyncOptions & { search?: LadderSearch; cacheDir?: string } = {},
): Promise<ServedSearch> {
  const own = !opts.search;
  const search = opts.search ?? new LadderSearch({ cacheDir: opts.cacheDir ?? cacheDir() });
  const { search: _s, cacheDir: _c, ...syncOpts } = opts;
  const sync = await startLadderSync(search, repos, syncOpts);
  return {
    search,
    sync,
    ready: sync.ready,
    async close() {
      await sync.close();
      if (own)
        await search
          .close()
          .catch((e: unknown) => opts.log?.(`search: ${(e as Error)?.message ?? String(e)}`));
    },
  };
}
