import { createHash } from 'node:crypto';
import {
  reachesWithinBy,
  RefCasError,
  TransportError,
  type PushOutcome,
  type PushUpdate,
  type RefUpdate,
} from '../../src/git/index.js';
import type { SyncCommit, SyncLocal, SyncRemote } from '../../src/core/sync/index.js';
import type { FileChanges } from '../../src/store/index.js';

// In-memory replicas and remote for the property tests: the same engine (syncWith) runs over
// these ports as over git. Objects live in one shared content-addressed universe (as if every
// fetch and push copied them), refs per replica and on the remote. Faults are injected here:
// partitions (offline), lost push races, and crashes at each step of a sync.

export interface MemCommit {
  parents: string[];
  message: string;
  files: Map<string, string>;
}

export class Universe {
  readonly objects = new Map<string, MemCommit>();

  put(c: MemCommit): string {
    const files = [...c.files].sort(([a], [b]) => (a < b ? -1 : 1));
    const oid = createHash('sha1')
      .update(JSON.stringify([c.parents, c.message, files]))
      .digest('hex');
    if (!this.objects.has(oid)) this.objects.set(oid, c);
    return oid;
  }

  get(oid: string): MemCommit {
    const c = this.objects.get(oid);
    if (!c) throw new Error(`missing object ${oid}`);
    return c;
  }

  /** Every ancestor of `tips` (inclusive). */
  ancestors(tips: readonly string[]): Set<string> {
    const seen = new Set<string>();
    const stack = [...tips];
    while (stack.length) {
      const o = stack.pop()!;
      if (seen.has(o)) continue;
      seen.add(o);
      stack.push(...this.get(o).parents);
    }
    return seen;
  }
}

export type CrashStep = 'fetch' | 'merge' | 'update' | 'push';

export class CrashError extends Error {}

export class MemoryRemoteRepo {
  readonly refs = new Map<string, string>();
  /** Every value each ref has held, in order (published-prefix stability is checked on it). */
  readonly timeline = new Map<string, Array<{ oid: string | null; vandal: boolean }>>();

  /** `vandal`: someone deleted or force-pushed the ref by hand (not a zz push). */
  set(ref: string, oid: string | null, vandal = false): void {
    if (oid === null) this.refs.delete(ref);
    else this.refs.set(ref, oid);
    this.timeline.set(ref, [...(this.timeline.get(ref) ?? []), { oid, vandal }]);
  }
}

export class MemoryReplica implements SyncLocal {
  readonly refs = new Map<string, string>();
  offline = false;
  failNextPush = false;
  crashAt: CrashStep | null = null;

  constructor(
    readonly name: string,
    readonly u: Universe,
    readonly server: MemoryRemoteRepo,
  ) {}

  private crash(step: CrashStep): void {
    if (this.crashAt === step) {
      this.crashAt = null;
      throw new CrashError(`crash at ${step}`);
    }
  }

  async listRefs(prefix: string): Promise<Map<string, string>> {
    return new Map([...this.refs].filter(([r]) => r.startsWith(prefix)));
  }

  async commits(include: readonly string[], exclude: readonly string[]): Promise<SyncCommit[]> {
    const ex = this.u.ancestors(exclude);
    // Parents first: iterative post-order.
    const out: SyncCommit[] = [];
    const done = new Set<string>(ex);
    const stack: Array<{ oid: string; expanded: boolean }> = include.map((oid) => ({
      oid,
      expanded: false,
    }));
    while (stack.length) {
      const top = stack.pop()!;
      if (done.has(top.oid)) continue;
      const c = this.u.get(top.oid);
      if (top.expanded) {
        done.add(top.oid);
        out.push({ oid: top.oid, parents: c.parents, message: c.message });
        continue;
      }
      stack.push({ oid: top.oid, expanded: true });
      for (const p of [...c.parents].reverse()) {
        if (!done.has(p)) stack.push({ oid: p, expanded: false });
      }
    }
    return out;
  }

  // As on git (GitSyncLocal): a breadth-first walk, undecided past its bound. The bound is
  // smaller than the engine asks for, so that the schedules (a few commits per replica between
  // syncs) exercise the engine's full walk answering "only we moved" as well.
  async reachesWithin(
    descendant: string,
    ancestor: string,
    asked: number,
  ): Promise<boolean | null> {
    return reachesWithinBy(
      async (oids) => oids.map((o) => this.u.get(o).parents),
      descendant,
      ancestor,
      Math.min(asked, 2),
    );
  }

  // Everything in memory is a commit.
  async objectTypes(oids: readonly string[]): Promise<Map<string, string>> {
    return new Map(oids.map((o) => [o, 'commit']));
  }

  async rawCommits(): Promise<Map<string, Buffer>> {
    return new Map(); // nothing is signed in memory
  }

  async writeMerge(req: {
    parents: [string, string];
    changes: FileChanges;
    message: string;
  }): Promise<string> {
    const files = new Map(this.u.get(req.parents[0]).files);
    for (const [p, c] of req.changes) {
      if (c === null) files.delete(p);
      else files.set(p, c);
    }
    const oid = this.u.put({ parents: [...req.parents], message: req.message, files });
    this.crash('merge');
    return oid;
  }

  async update(updates: readonly RefUpdate[]): Promise<void> {
    this.crash('update');
    for (const u of updates) {
      const cur = this.refs.get(u.ref) ?? null;
      if (cur !== u.old) throw new RefCasError(u.ref, u.old, cur);
    }
    for (const u of updates) {
      if (u.new === null) this.refs.delete(u.ref);
      else this.refs.set(u.ref, u.new);
    }
  }

  /** The remote as this replica sees it (fails while partitioned). */
  remote(): SyncRemote {
    const prefix = 'refs/zz-remotes/origin/';
    return {
      name: 'origin',
      fetch: async () => {
        if (this.offline) throw new TransportError({ kind: 'offline', message: 'partitioned' });
        for (const r of [...this.refs.keys()]) if (r.startsWith(prefix)) this.refs.delete(r);
        for (const [r, oid] of this.server.refs) {
          this.refs.set(prefix + r.slice('refs/zz/'.length), oid);
        }
        this.crash('fetch');
        return new Map(this.server.refs);
      },
      push: async (updates: readonly PushUpdate[]): Promise<PushOutcome> => {
        if (this.offline) return { kind: 'offline', message: 'partitioned' };
        if (this.failNextPush) {
          this.failNextPush = false;
          return { kind: 'race', reason: 'remote_rejected', refs: [], message: 'injected' };
        }
        for (const p of updates) {
          if ((this.server.refs.get(p.ref) ?? null) !== p.expected) {
            return { kind: 'race', reason: 'stale_info', refs: [p.ref], message: 'stale info' };
          }
        }
        for (const p of updates) this.server.set(p.ref, p.next);
        this.crash('push');
        return { kind: 'ok' };
      },
    };
  }
}
