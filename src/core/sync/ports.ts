import type { PushOutcome, PushUpdate, RefUpdate } from '../../git/index.js';
import type { FileChanges } from '../../store/index.js';

// What the sync engine needs from the local repository and from a remote, and nothing more:
// the engine runs unchanged on real git (git-ports.ts) and on the in-memory replicas of the
// property tests, so what the tests prove is what `zz sync` does.

export interface SyncCommit {
  oid: string;
  parents: string[];
  message: string;
}

export interface SyncLocal {
  /** This clone's replica id (ops it wrote carry it); unset where the store keeps none. */
  readonly replica?: string;
  listRefs(prefix: string): Promise<Map<string, string>>;
  /** Commits reachable from `include` and not from `exclude`, parents first. */
  commits(include: readonly string[], exclude: readonly string[]): Promise<SyncCommit[]>;
  /**
   * Whether `ancestor` is among the first `limit` commits of `descendant`'s history (itself
   * included); null when that walk ended undecided. A cheap answer for the usual case (a few
   * local commits on top of what the remote holds): the engine's full walk decides the rest.
   */
  reachesWithin(descendant: string, ancestor: string, limit: number): Promise<boolean | null>;
  /**
   * The type of each of `oids` (`commit`, `blob`, …); absent when not held. A remote's ref can
   * name any object: only a commit is a history.
   */
  objectTypes(oids: readonly string[]): Promise<Map<string, string>>;
  /** The raw commit objects (headers and message), for signature checks; none in memory. */
  rawCommits(oids: readonly string[]): Promise<Map<string, Buffer>>;
  /**
   * Writes a merge commit (tree = the first parent's with `changes`; what equals the second
   * parent's tree at the same path is reused, not written again); moves no ref.
   */
  writeMerge(req: {
    parents: [string, string];
    changes: FileChanges;
    message: string;
  }): Promise<string>;
  /**
   * Every file of a commit's tree (path → text), for a merge whose fold checks its base's tree
   * (EntityCodec.files); without it that check is skipped (the in-memory replicas).
   */
  files?(commit: string): Promise<Map<string, string>>;
  /** Moves refs in one transaction with old values; RefCasError when one moved meanwhile. */
  update(updates: readonly RefUpdate[]): Promise<void>;
}

export interface SyncRemote {
  readonly name: string;
  /**
   * Mirrors the remote's refs/zz/* of zz's layout into refs/zz-remotes/<name>/* (only those:
   * other names can conflict with them, git-ports.ts); TransportError on failure. Returns every
   * name the remote holds under refs/zz/, fetched or not (name → oid).
   */
  fetch(): Promise<ReadonlyMap<string, string>>;
  push(updates: readonly PushUpdate[]): Promise<PushOutcome>;
}
