// The storage contract: refs that each hold a tree of files, moved one commit at a time by
// compare-and-swap. Implemented on git (git-store.ts) and in memory (memory-store.ts); one
// contract suite (test/store/store-contract.ts) runs against both.

import type { OpRecord } from '../schema/ops.js';

/**
 * One operation as recorded in a commit: enough to replay it without any other input. Its
 * schema (schema/ops.ts) is the envelope every entity's op union shares.
 */
export type { OpRecord };

export interface CommitRecord {
  revision: string;
  parents: string[];
  ops: OpRecord[];
  /** Why the commit's ops could not be read (broken JSON, a bad envelope); ops is then []. */
  malformed?: string;
}

/** path → new content, or null to delete. */
export type FileChanges = Map<string, string | null>;

export interface CommitRequest {
  /** The revision the change was computed against (null: the ref must not exist yet). */
  parent: string | null;
  changes: FileChanges;
  ops: OpRecord[];
  /** First line of the commit message. */
  summary: string;
}

export interface Store {
  readonly kind: 'git' | 'memory';
  /**
   * This replica's id (16 hex), part of every op id so that ops written on two machines never
   * collide when sync merges them. A store without a persistent one uses a per-process id.
   */
  readonly replica?: string;
  head(ref: string): Promise<string | null>;
  listRefs(prefix: string): Promise<Map<string, string>>;
  /**
   * The names listRefs(prefix) gives, sorted, without reading each ref's value where that can
   * be helped (git: a loose ref that packed-refs also holds is not opened). For a reader that
   * needs the names only, e.g. the Lane ids.
   */
  refNames(prefix: string): Promise<string[]>;
  /**
   * The names one level below `prefix` (which ends in "/") that some ref lies under or is, e.g.
   * the remotes under refs/zz-remotes/, without listing every ref beneath them: a reader that
   * needs one ref per name (each remote's config) does not pay for all the others.
   */
  listNames(prefix: string): Promise<string[]>;
  readFile(revision: string, path: string): Promise<string | null>;
  /** Every file below `dir` ('' = all) at a revision. */
  readAll(revision: string, dir?: string): Promise<Map<string, string>>;
  /** Commits reachable from ref (after `since`, exclusive), oldest first. */
  history(ref: string, since?: string | null): Promise<CommitRecord[]>;
  /** One commit; moves `ref` by CAS from `parent`. Throws RefCasError when the ref moved. */
  commit(ref: string, req: CommitRequest): Promise<string>;
  /**
   * Writes (objects only, no ref) a code commit whose parent is `base` and whose tree is
   * base's tree with `changes` applied. Used for changesets; the caller moves a ref later.
   */
  writeCodeCommit(req: CodeCommitRequest): Promise<string>;
  /** Moves a ref by CAS to an existing commit (null expected: create). */
  setRef(ref: string, expected: string | null, oid: string): Promise<void>;
  close(): void;
}

export interface CodeCommitRequest {
  base: string;
  changes: Map<string, Buffer | null>;
  message: string;
  author: string;
}
