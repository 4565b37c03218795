import { ZzError } from '../errors.js';
import { headBranch, openRepository, repoKeyOf, type GitRepository } from '../git/index.js';
import type { ConfigOp, LaneOp } from '../schema/index.js';
import { replicaId } from '../local/index.js';
import {
  Entity,
  GitStore,
  MemoryStore,
  type LoggedOp,
  type OpRecord,
  type Snapshot,
  type Store,
} from '../store/index.js';
import { configCodec, type ConfigState } from './config-state.js';
import { laneCodec, type LaneState, type RoleSource } from './lane-state.js';
import { roleTimeline } from './role-timeline.js';

// One served repository: its store, its entities (config and one per Lane), and a commit
// signal that long-polls and server-sent events wait on. Everything above talks to a ZzRepo.

export const CONFIG_REF = 'refs/zz/config';
export const LANES_PREFIX = 'refs/zz/lanes/';
export const LADDER_REF = 'refs/zz/ladder';
export const CHANGESETS_PREFIX = 'refs/zz/changesets/';
export { SERVER_ACTOR } from './follow-ups.js';

export const laneRef = (laneId: string): string => LANES_PREFIX + laneId;

export type CommitEvent = { ref: string; revision: string; ops: readonly LoggedOp[] };
type Listener = (e: CommitEvent) => void;

export interface ZzRepoOptions {
  key: string;
  store: Store;
  git?: GitRepository | null;
  clock?: () => Date;
}

export class ZzRepo {
  readonly key: string;
  readonly store: Store;
  readonly git: GitRepository | null;
  readonly clock: () => Date;
  readonly config: Entity<ConfigState, ConfigOp>;
  private readonly lanes = new Map<string, Entity<LaneState, LaneOp>>();
  private readonly listeners = new Set<Listener>();
  private readonly entities = new Map<string, unknown>();
  /**
   * The config the latest-started Lane read saw (see configSeenBy), or the error reading it
   * raised; `seq` orders reads by when they started.
   */
  private configSeen: { seq: number; read: Snapshot<ConfigState, ConfigOp> | Error } | null = null;
  private configSeq = 0;
  private readonly laneEntities = new WeakSet<object>();
  /** The roles timeline of the config revision last read (see roles()). */
  private roleCache: { revision: string | null; source: RoleSource } = {
    revision: null,
    source: roleTimeline([]),
  };

  constructor(opts: ZzRepoOptions) {
    this.key = opts.key;
    this.store = opts.store;
    this.git = opts.git ?? null;
    this.clock = opts.clock ?? (() => new Date());
    this.config = new Entity(this.store, CONFIG_REF, configCodec, this.emit, this.clock);
  }

  static async open(dir: string, opts: { key?: string; clock?: () => Date } = {}): Promise<ZzRepo> {
    const git = await openRepository(dir);
    const key = opts.key ?? (await repoKeyOf(git));
    // A clone where the id cannot be stored (read-only git dir) still works: ops then carry
    // the process's id, as before replica ids were kept.
    const replica = await replicaId(git.gitdir).catch(() => undefined);
    return new ZzRepo({
      key,
      store: new GitStore(git, replica !== undefined ? { replica } : {}),
      git,
      ...(opts.clock ? { clock: opts.clock } : {}),
    });
  }

  static memory(key = 'local/memory', clock?: () => Date): ZzRepo {
    return new ZzRepo({ key, store: new MemoryStore(), ...(clock ? { clock } : {}) });
  }

  private readonly emit = (ref: string, revision: string, ops: readonly LoggedOp[]): void => {
    for (const l of this.listeners) l({ ref, revision, ops });
  };

  onCommit(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  lane(laneId: string): Entity<LaneState, LaneOp> {
    let e = this.lanes.get(laneId);
    if (!e) {
      const codec = {
        ...laneCodec,
        empty: () => ({ ...laneCodec.empty(), roles: this.roleCache.source }),
      };
      e = new LaneEntity(
        () => this.roles(),
        this.store,
        laneRef(laneId),
        codec,
        this.emit,
        this.clock,
      );
      this.lanes.set(laneId, e);
      this.laneEntities.add(e);
    }
    return e;
  }

  /**
   * The repository's roles over time (role-timeline.ts), rebuilt when refs/zz/config moved.
   * A config that cannot be read keeps the last good timeline: Lanes stay readable.
   */
  async roles(): Promise<RoleSource> {
    return (await this.rolesWithRevision()).source;
  }

  /**
   * roles(), with the refs/zz/config revision they were built from (what a search shard is
   * keyed on, search-sync.ts): one object, so the two cannot come from different reads.
   */
  async rolesWithRevision(): Promise<{
    readonly revision: string | null;
    readonly source: RoleSource;
  }> {
    const seq = ++this.configSeq;
    let read: Snapshot<ConfigState, ConfigOp> | Error;
    try {
      read = await this.config.read();
      if (read.revision !== this.roleCache.revision) {
        this.roleCache = { revision: read.revision, source: roleTimeline(read.log.slice()) };
      }
    } catch (e) {
      // entity_corrupt on refs/zz/config is reported by the reads that need the config.
      read = e instanceof Error ? e : new Error(String(e));
    }
    if (!this.configSeen || this.configSeen.seq < seq) this.configSeen = { seq, read };
    return this.roleCache;
  }

  /** Whether `entity` is one of this repository's Lanes, whose reads read refs/zz/config. */
  readsConfig(entity: object): boolean {
    return this.laneEntities.has(entity);
  }

  /**
   * The initialised config as the latest-started read of a Lane saw it, for a write deciding
   * inside that Lane's group commit: the group's own read of the Lane reads refs/zz/config
   * first (LaneEntity.read) and starts after every write in the group arrived, so the write
   * needs no config read of its own and decides against a config at least that fresh. Only
   * for a Lane (readsConfig), after a read of it.
   */
  configSeenByLanes(): NonNullable<ConfigState['config']> & { revision: string } {
    return this.initialised(this.configSnapSeenByLanes());
  }

  /** The whole config state configSeenByLanes() answers from (keys, signatures required). */
  configStateSeenByLanes(): ConfigState {
    return this.configSnapSeenByLanes().state;
  }

  private configSnapSeenByLanes(): Snapshot<ConfigState, ConfigOp> {
    const seen = this.configSeen;
    if (!seen) throw new ZzError('internal', 'configSeenByLanes() before any Lane was read');
    if (seen.read instanceof Error) throw seen.read;
    return seen.read;
  }

  /** A generic entity on another ref (the Ladder), shared so that its mutex is shared. */
  entity<S, Op extends OpRecord>(ref: string, make: () => Entity<S, Op>): Entity<S, Op> {
    // One entity per ref, made by the same caller each time: its type is the one `make` gives.
    let e = this.entities.get(ref) as Entity<S, Op> | undefined;
    if (!e) {
      e = make();
      this.entities.set(ref, e);
    }
    return e;
  }

  /** The shared entity on `ref` when something has made it already (see entity()). */
  existingEntity(ref: string): Entity<unknown, OpRecord> | undefined {
    return this.entities.get(ref) as Entity<unknown, OpRecord> | undefined;
  }

  emitFor(ref: string, revision: string, ops: readonly LoggedOp[]): void {
    this.emit(ref, revision, ops);
  }

  /**
   * Every ref name under refs/zz/lanes/, sorted (a name that is no lane id included: readers
   * report it). Names only: the refs' values are read by the Lanes' own reads.
   */
  async laneIds(): Promise<string[]> {
    const refs = await this.store.refNames(LANES_PREFIX);
    return refs.map((r) => r.slice(LANES_PREFIX.length));
  }

  /** The initialised config, or a 412 telling the user to run `zz init`. */
  async requireConfig(): Promise<NonNullable<ConfigState['config']> & { revision: string }> {
    return this.initialised(await this.config.read());
  }

  private initialised(
    snap: Snapshot<ConfigState, ConfigOp>,
  ): NonNullable<ConfigState['config']> & { revision: string } {
    if (!snap.state.config || !snap.revision) {
      throw new ZzError(
        'precondition_failed',
        `repository ${this.key} is not initialised for zz; run \`zz init\` in it`,
      );
    }
    return { ...snap.state.config, revision: snap.revision };
  }

  /** The default branch: config, else the checkout's HEAD branch, else main. */
  async defaultBranch(): Promise<string> {
    const snap = await this.config.read();
    if (snap.state.config) return snap.state.config.default_branch;
    if (this.git) {
      const b = await headBranch(this.git.gitdir);
      if (b) return b;
    }
    return 'main';
  }

  close(): void {
    this.store.close();
  }
}

/**
 * A Lane's Entity: its fold also depends on refs/zz/config (roles as they stood at each op),
 * so a snapshot folded against an older config is folded again once the config moved.
 */
class LaneEntity extends Entity<LaneState, LaneOp> {
  constructor(
    private readonly currentRoles: () => Promise<RoleSource>,
    ...rest: ConstructorParameters<typeof Entity<LaneState, LaneOp>>
  ) {
    super(...rest);
  }

  override async read(): Promise<Snapshot<LaneState, LaneOp>> {
    // The config and the Lane are read side by side (two git reads at once, not one after the
    // other: a cold load waited for both). The fold takes the roles known when the Lane's
    // history arrives; the config's short history is almost always in by then, and when it
    // is not, the check below folds again against the roles that count.
    const [roles, snap] = await Promise.all([this.currentRoles(), super.read()]);
    if (snap.state.roles === roles) return snap;
    this.invalidate();
    return super.read();
  }
}
