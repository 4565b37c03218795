import {
  commitMessages,
  fetchZzRefs,
  objectTypes,
  pushZzRefs,
  rawCommits,
  reachesWithin,
  remoteCwd,
  updateRefsAtomic,
  type GitRepository,
  type PendingDirs,
  type PushUpdate,
  type RefUpdate,
} from '../../git/index.js';
import type { GitStore } from '../../store/index.js';
import { type FileChanges } from '../../store/index.js';
import type { SyncCommit, SyncLocal, SyncRemote } from './ports.js';
import { layoutProblem } from './validate.js';

// The sync engine's ports on a real repository. What a merge round costs is mostly git's
// (measured in bench/sync.ts, merge-1k): so a history is one `git log` (oids, parents and
// messages in one spawn, not a rev-list and then a read per commit), the raw bytes of only the
// commits whose signatures are checked come through the long-lived cat-file, the merge's objects
// are written in-process (reusing what the local tip already holds), and refs move in-process
// under git's lock protocol; fetch and push are native git.

/** Histories kept for the rest of a round (refs/zz/config is read by several checks). */
const HISTORY_MEMO = 4;
const HISTORY_MEMO_MAX_COMMITS = 10_000;

export class GitSyncLocal implements SyncLocal {
  private readonly memo = new Map<string, Promise<SyncCommit[]>>();
  /** Merges written but not yet named by a ref: their small packs stay .kept until update(). */
  private readonly unnamed: PendingDirs[] = [];

  constructor(
    private readonly repo: GitRepository,
    private readonly store: GitStore,
  ) {}

  get replica(): string | undefined {
    return this.store.replica;
  }

  listRefs(prefix: string): Promise<Map<string, string>> {
    return this.repo.refs.list(prefix);
  }

  commits(include: readonly string[], exclude: readonly string[]): Promise<SyncCommit[]> {
    // Commits never change, so a history by its tips is the same all round.
    const key = `${include.join(' ')}^${exclude.join(' ')}`;
    const hit = this.memo.get(key);
    if (hit) return hit;
    const p = commitMessages(this.repo.gitdir, include, exclude);
    this.memo.set(key, p);
    if (this.memo.size > HISTORY_MEMO) this.memo.delete(this.memo.keys().next().value!);
    p.then(
      (h) => {
        if (h.length > HISTORY_MEMO_MAX_COMMITS) this.memo.delete(key);
      },
      () => this.memo.delete(key),
    );
    return p;
  }

  reachesWithin(descendant: string, ancestor: string, limit: number): Promise<boolean | null> {
    return reachesWithin(this.repo.catFile, descendant, ancestor, limit);
  }

  objectTypes(oids: readonly string[]): Promise<Map<string, string>> {
    return objectTypes(this.repo.gitdir, oids);
  }

  rawCommits(oids: readonly string[]): Promise<Map<string, Buffer>> {
    return rawCommits(this.repo.catFile, oids);
  }

  files(commit: string): Promise<Map<string, string>> {
    return this.store.readAll(commit);
  }

  async writeMerge(req: {
    parents: [string, string];
    changes: FileChanges;
    message: string;
  }): Promise<string> {
    // Written with a pending set so that a small pack keeps its .keep until the ref names it
    // (git/small-packs.ts, "In-flight packs"); its directory is made durable here and now.
    const pending: PendingDirs = new Set();
    this.unnamed.push(pending);
    const oid = await this.store.writeCommit(
      {
        parents: req.parents,
        changes: req.changes,
        author: 'zz',
        message: req.message,
        reuse: req.parents[1],
      },
      pending,
    );
    await this.repo.objects.syncDirs(pending);
    return oid;
  }

  /**
   * Writes (objects only, no ref) one op commit over `parent`: tree = the parent's with
   * `changes`, signed as the store signs `author`'s writes (`zz sync --drop-held` re-applies an
   * op with it). Its small pack stays .kept until update() names it or gives up, like a merge.
   */
  async writeOpCommit(req: {
    parent: string;
    changes: FileChanges;
    author: string;
    message: string;
  }): Promise<string> {
    const pending: PendingDirs = new Set();
    this.unnamed.push(pending);
    const oid = await this.store.writeCommit(
      { parents: [req.parent], changes: req.changes, author: req.author, message: req.message },
      pending,
    );
    await this.repo.objects.syncDirs(pending);
    return oid;
  }

  /** Lets go of what writeMerge/writeOpCommit wrote when no update() will name it. */
  releaseUnnamed(): void {
    for (const pending of this.unnamed.splice(0)) this.repo.objects.release(pending);
  }

  async update(updates: readonly RefUpdate[]): Promise<void> {
    try {
      // Deleting a ref may mean rewriting packed-refs: git's own transaction does that (a
      // quarantine cleared). Everything else (merges, fast-forwards, confirmations) moves
      // in-process under the same lock files, one transaction: no spawn.
      if (updates.some((u) => u.new === null && u.old !== null)) {
        return await updateRefsAtomic(this.repo.gitdir, updates);
      }
      const moves = updates.filter((u) => u.new !== null);
      if (moves.length === 0) return;
      return await this.repo.refs.casMany(
        moves.map((u) => ({ ref: u.ref, expected: u.old, next: u.new! })),
      );
    } finally {
      this.releaseUnnamed();
    }
  }
}

export class GitSyncRemote implements SyncRemote {
  constructor(
    private readonly repo: GitRepository,
    readonly name: string,
  ) {}

  fetch(): Promise<ReadonlyMap<string, string>> {
    // Only zz's layout is fetched: its names never conflict with one another, and a name
    // outside it (`lanes/junk/x` beside `lanes/junk`) then never lands in a local ref.
    return fetchZzRefs(this.repo.gitdir, this.name, {
      keep: (ref) => layoutProblem(ref) === null,
      cwd: remoteCwd(this.repo),
    });
  }

  push(updates: readonly PushUpdate[]) {
    return pushZzRefs(this.repo.gitdir, this.name, updates, { cwd: remoteCwd(this.repo) });
  }
}
