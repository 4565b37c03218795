import {
  commitsBetween,
  fetchZzRefs,
  isAncestor,
  readCommit,
  pushZzRefs,
  updateRefsAtomic,
  type GitRepository,
  type PushUpdate,
  type RefUpdate,
} from '../../git/index.js';
import type { GitStore } from '../../store/index.js';
import { type FileChanges } from '../../store/index.js';
import type { SyncCommit, SyncLocal, SyncRemote } from './ports.js';

// The sync engine's ports on a real repository: commits through the long-lived cat-file,
// ref transactions through `git update-ref --stdin`, fetch and push through native git.

export class GitSyncLocal implements SyncLocal {
  constructor(
    private readonly repo: GitRepository,
    private readonly store: GitStore,
  ) {}

  listRefs(prefix: string): Promise<Map<string, string>> {
    return this.repo.refs.list(prefix);
  }

  async commits(include: readonly string[], exclude: readonly string[]): Promise<SyncCommit[]> {
    const dag = await commitsBetween(this.repo.gitdir, include, exclude);
    const objs = await Promise.all(dag.map((d) => readCommit(this.repo.catFile, d.oid)));
    return dag.map((d, i) => {
      const c = objs[i];
      return {
        oid: d.oid,
        parents: d.parents,
        message: c?.message ?? '',
        ...(c ? { raw: c.raw } : {}),
      };
    });
  }

  isAncestor(ancestor: string, descendant: string): Promise<boolean> {
    return isAncestor(this.repo.gitdir, ancestor, descendant);
  }

  writeMerge(req: {
    parents: [string, string];
    changes: FileChanges;
    message: string;
  }): Promise<string> {
    return this.store.writeCommit({
      parents: req.parents,
      changes: req.changes,
      author: 'zz',
      message: req.message,
    });
  }

  update(updates: readonly RefUpdate[]): Promise<void> {
    return updateRefsAtomic(this.repo.gitdir, updates);
  }
}

export class GitSyncRemote implements SyncRemote {
  constructor(
    private readonly repo: GitRepository,
    readonly name: string,
  ) {}

  fetch(): Promise<void> {
    return fetchZzRefs(this.repo.gitdir, this.name);
  }

  push(updates: readonly PushUpdate[]) {
    return pushZzRefs(this.repo.gitdir, this.name, updates);
  }
}
