import { createHash, randomBytes } from 'node:crypto';
import { ZzError } from '../errors.js';
import { RefCasError } from '../git/index.js';
import {
  commitLamports,
  hasMerges,
  publicationOrder,
  type OrderedOp,
} from './publication-order.js';
import type { CommitRecord, FileChanges, OpRecord, Store } from './store.js';

// One entity = one ref whose tree is the entity's whole state and whose history is its op log.
// Entity<S> keeps the derived state and the op log in memory keyed by the ref's revision,
// serialises writers (an in-process queue per ref; the lockfile CAS guards other processes)
// and group-commits: operations queued while a commit is in flight go into the next commit
// together, each recorded in full. State is always a fold of the op log through codec.apply.

export interface EntityCodec<S> {
  empty(): S;
  /** A copy that apply() may change without touching the original (readers hold originals). */
  clone(state: S): S;
  /** Pure: applies a recorded op to a draft; returns the paths whose files changed. */
  apply(draft: S, op: OpRecord): string[];
  /** The file at `path` for this state, or null when it no longer exists. */
  file(state: S, path: string): string | null;
}

export interface OpSpec {
  op: string;
  args: Record<string, unknown>;
  out?: Record<string, unknown>;
  /** Commit summary for this op. */
  summary: string;
}

export interface MutationMeta {
  actor: string;
  now: Date;
  revision: string | null;
}

export interface Mutation<S, R> {
  actor: string;
  idempotencyKey?: string;
  /** What the caller asked for (tool and arguments); a key reused with another request is refused. */
  request?: { tool: string; args: unknown };
  expectedRevision?: string;
  /** Validates against the current state and decides the op; throws ZzError to refuse. */
  decide(state: S, meta: MutationMeta): OpSpec | OpSpec[];
  /** The caller's result, computed from the state after the op (also used on replay). */
  result(state: S, op: OpRecord): R;
}

export interface MutationResult<R> {
  result: R;
  revision: string;
  replayed: boolean;
  op: OpRecord;
}

export interface Snapshot<S> {
  revision: string | null;
  state: S;
  /** Every op, oldest first, each with the revision of the commit that holds it. */
  log: ReadonlyArray<LoggedOp>;
}

export interface LoggedOp extends OpRecord {
  revision: string;
}

export type CommitListener = (ref: string, revision: string, ops: readonly LoggedOp[]) => void;

interface Pending<S> {
  m: Mutation<S, unknown>;
  resolve: (r: MutationResult<unknown>) => void;
  reject: (e: unknown) => void;
}

const MAX_GROUP = 256;
const MAX_CAS_RETRIES = 50;

export class Entity<S> {
  private snap: Snapshot<S> | null = null;
  private keys = new Map<string, LoggedOp>();
  private lamport = 0;
  private queue: Array<Pending<S>> = [];
  private draining = false;
  private loading: Promise<Snapshot<S>> | null = null;
  private headRead: { p: Promise<string | null>; commits: number } | null = null;
  /** Commits this Entity made; tells a shared ref read from before one of them. */
  private commits = 0;

  constructor(
    readonly store: Store,
    readonly ref: string,
    private readonly codec: EntityCodec<S>,
    private readonly onCommit?: CommitListener,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The current snapshot; refreshed when the ref moved outside this process. */
  async read(): Promise<Snapshot<S>> {
    // Concurrent readers share one read of the ref (32 agents polling a Lane would otherwise
    // spend most of the daemon's system time re-reading one small file). A shared read that
    // began before one of our own commits is older than the snapshot that commit made.
    let pending = this.headRead;
    if (!pending) {
      const p = this.store.head(this.ref);
      pending = this.headRead = { p, commits: this.commits };
      const clear = () => {
        if (this.headRead === pending) this.headRead = null;
      };
      p.then(clear, clear);
    }
    const head = await pending.p;
    if (this.snap && (this.snap.revision === head || this.commits !== pending.commits)) {
      return this.snap;
    }
    return this.refresh(head);
  }

  private refresh(head: string | null): Promise<Snapshot<S>> {
    if (this.loading) return this.loading;
    this.loading = this.load(head).finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(head: string | null): Promise<Snapshot<S>> {
    const prev = this.snap;
    if (head === null) {
      this.reset();
      return this.snap!;
    }
    // Extend the cached fold when the new head descends linearly from what we hold.
    if (prev?.revision) {
      const tail = await this.store.history(this.ref, prev.revision);
      if (
        tail.length > 0 &&
        tail[0]!.parents.includes(prev.revision) &&
        tail.every((c) => c.parents.length <= 1)
      ) {
        const draft = this.codec.clone(prev.state);
        const log = prev.log.slice();
        this.foldInto(draft, log, linear(tail));
        this.snap = { revision: tail[tail.length - 1]!.revision, state: draft, log };
        return this.snap;
      }
    }
    const all = await this.store.history(this.ref);
    this.reset();
    const draft = this.codec.clone(this.snap!.state);
    const log: LoggedOp[] = [];
    const tip = all.length ? all[all.length - 1]!.revision : null;
    if (tip !== null && hasMerges(all)) {
      // Merged by sync: fold in publication order; a merge commit's clock counts too.
      this.foldInto(draft, log, publicationOrder(all, tip));
      this.lamport = Math.max(this.lamport, commitLamports(all).get(tip) ?? 0);
    } else this.foldInto(draft, log, linear(all));
    this.snap = { revision: tip, state: draft, log };
    return this.snap;
  }

  private reset(): void {
    this.snap = { revision: null, state: this.codec.empty(), log: [] };
    this.keys = new Map();
    this.lamport = 0;
  }

  private foldInto(draft: S, log: LoggedOp[], ops: readonly OrderedOp[]): void {
    for (const { op, revision } of ops) {
      this.codec.apply(draft, op);
      const logged = { ...op, revision };
      log.push(logged);
      this.lamport = Math.max(this.lamport, op.lamport);
      // The first use of a key in publication order is the one that counts.
      const k = op.key === undefined ? null : keyOf(op.actor, op.key);
      if (k !== null && !this.keys.has(k)) this.keys.set(k, logged);
    }
  }

  /**
   * The op an actor's idempotency key already recorded here, if any. Use cases that do work
   * before mutate() (writing a changeset's objects) skip that work for a retry.
   */
  async priorOp(actor: string, key: string): Promise<LoggedOp | undefined> {
    await this.read();
    return this.keys.get(keyOf(actor, key));
  }

  mutate<R>(m: Mutation<S, R>): Promise<MutationResult<R>> {
    return new Promise((resolve, reject) => {
      this.queue.push({
        m: m as Mutation<S, unknown>,
        resolve: resolve as Pending<S>['resolve'],
        reject,
      });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.queue.length > 0) {
        const group = this.queue.splice(0, MAX_GROUP);
        await this.commitGroup(group);
      }
    } finally {
      this.draining = false;
    }
  }

  private async commitGroup(group: Array<Pending<S>>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      let snap: Snapshot<S>;
      try {
        snap = await this.read();
      } catch (e) {
        for (const p of group) p.reject(e);
        return;
      }
      const draft = this.codec.clone(snap.state);
      const changed = new Set<string>();
      const ops: OpRecord[] = [];
      const done: Array<{ p: Pending<S>; op: OpRecord; replay?: LoggedOp }> = [];
      const failed: Array<{ p: Pending<S>; e: unknown }> = [];
      const deferred: Array<Pending<S>> = [];
      const keysInGroup = new Map<string, OpRecord>();
      const summaries = new Map<OpRecord, string>();
      let lamport = this.lamport;
      const now = this.clock();
      for (const p of group) {
        const { m } = p;
        if (m.expectedRevision !== undefined && ops.length > 0) {
          // Its revision check must see the state after the ops ahead of it: next commit.
          deferred.push(p);
          continue;
        }
        try {
          if (m.idempotencyKey !== undefined) {
            const k = keyOf(m.actor, m.idempotencyKey);
            const prior = keysInGroup.get(k) ?? this.keys.get(k);
            if (prior) {
              if (prior.request_hash !== requestHash(m)) {
                throw new ZzError(
                  'idempotency_conflict',
                  `idempotency_key "${m.idempotencyKey}" was already used for a different request (${prior.op}); use a new key for a new request`,
                );
              }
              done.push({ p, op: prior, replay: prior as LoggedOp });
              continue;
            }
          }
          if (m.expectedRevision !== undefined && m.expectedRevision !== snap.revision) {
            throw new ZzError(
              'revision_mismatch',
              `expected_revision ${m.expectedRevision} is stale; the current revision is ${snap.revision ?? '(none)'}`,
              { current_revision: snap.revision },
            );
          }
          const decided = m.decide(draft, { actor: m.actor, now, revision: snap.revision });
          // The first op is the caller's; any further ones are follow-ups decided with it
          // (e.g. the review Ask a completed work Ask triggers) and land in the same commit.
          const specs = Array.isArray(decided) ? decided : [decided];
          let primary: OpRecord | null = null;
          for (const spec of specs) {
            const op: OpRecord = {
              id: randomBytes(16).toString('hex'),
              op: spec.op,
              actor: m.actor,
              lamport: ++lamport,
              time: now.toISOString(),
              ...(primary === null && m.idempotencyKey !== undefined
                ? { key: m.idempotencyKey, request_hash: requestHash(m) }
                : {}),
              args: spec.args,
              ...(spec.out === undefined ? {} : { out: spec.out }),
            };
            for (const path of this.codec.apply(draft, op)) changed.add(path);
            ops.push(op);
            summaries.set(op, spec.summary);
            if (primary === null) {
              primary = op;
              if (op.key !== undefined) keysInGroup.set(keyOf(op.actor, op.key), op);
              done.push({ p, op });
            }
          }
          if (primary === null) {
            // decide() found nothing to do (e.g. a racing init already did it): a no-op that
            // still answers, at the revision it was decided against.
            done.push({
              p,
              op: {
                id: '',
                op: 'noop',
                actor: m.actor,
                lamport: 0,
                time: now.toISOString(),
                args: {},
              },
            });
          }
        } catch (e) {
          failed.push({ p, e });
        }
      }
      let revision = snap.revision;
      if (ops.length > 0) {
        const changes: FileChanges = new Map();
        for (const path of changed) changes.set(path, this.codec.file(draft, path));
        const lines = ops.map((o) => summaries.get(o) ?? o.op);
        const summary = ops.length === 1 ? lines[0]! : `${ops.length} operations: ${lines[0]} …`;
        try {
          revision = await this.store.commit(this.ref, {
            parent: snap.revision,
            changes,
            ops,
            summary,
          });
        } catch (e) {
          if (e instanceof RefCasError && attempt < MAX_CAS_RETRIES) {
            // Another process moved the ref: re-decide everything against its state.
            await new Promise((r) => setTimeout(r, Math.random() * 2 * (attempt + 1)));
            continue;
          }
          for (const p of group) p.reject(e);
          return;
        }
        const logged = ops.map((o) => ({ ...o, revision: revision! }));
        this.lamport = lamport;
        for (const o of logged) if (o.key !== undefined) this.keys.set(keyOf(o.actor, o.key), o);
        this.snap = { revision, state: draft, log: [...snap.log, ...logged] };
        this.commits++;
        this.onCommit?.(this.ref, revision, logged);
      }
      for (const { p, e } of failed) p.reject(e);
      for (const { p, op, replay } of done) {
        try {
          if (replay) {
            p.resolve({
              result: p.m.result(this.snap!.state, replay),
              revision: revision!,
              replayed: true,
              op: replay,
            });
          } else {
            p.resolve({
              result: p.m.result(this.snap!.state, op),
              revision: revision!,
              replayed: false,
              op,
            });
          }
        } catch (e) {
          p.reject(e);
        }
      }
      if (deferred.length > 0) this.queue.unshift(...deferred);
      return;
    }
  }
}

function linear(commits: readonly CommitRecord[]): OrderedOp[] {
  return commits.flatMap((c) => c.ops.map((op) => ({ op, revision: c.revision })));
}

function keyOf(actor: string, key: string): string {
  return `${actor}\0${key}`;
}

function requestHash<S>(m: Mutation<S, unknown>): string {
  return hashArgs(m.request ?? null).slice(0, 16);
}

export function hashArgs(args: unknown): string {
  return createHash('sha256').update(stableJson(args)).digest('hex');
}

export function stableJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v) ?? 'null';
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
    .join(',')}}`;
}
