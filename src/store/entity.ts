import { createHash } from 'node:crypto';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { ZzError } from '../errors.js';
import { RefCasError } from '../git/index.js';
import { OP_FORMAT, type OpParse } from '../schema/ops.js';
import { OpLog } from './op-log.js';
import {
  commitLamports,
  hasMerges,
  publicationOrder,
  type OrderedOp,
} from './publication-order.js';
import { newOpId } from './op-ids.js';
import type { CommitRecord, FileChanges, OpRecord, Store } from './store.js';
import { treeDriftOf } from './tree-drift.js';

// One entity = one ref whose tree is the entity's whole state and whose history is its op log.
// Entity<S> keeps the derived state and the op log in memory keyed by the ref's revision,
// serialises writers (an in-process queue per ref; the lockfile CAS guards other processes)
// and group-commits: operations queued while a commit is in flight go into the next commit
// together, each recorded in full. State is always a fold of the op log through codec.apply.

export interface EntityCodec<S, Op extends OpRecord = OpRecord> {
  empty(): S;
  /** A copy that apply() may change without touching the original (readers hold originals). */
  clone(state: S): S;
  /**
   * An op as read from the log, checked against the entity's op union. A malformed op makes
   * the whole entity unreadable (entity_corrupt, by ref) instead of a TypeError in apply().
   */
  parse(op: OpRecord): OpParse<Op>;
  /** Pure: applies a recorded op to a draft; returns the paths whose files changed. */
  apply(draft: S, op: Op): string[];
  /** The file at `path` for this state, or null when it no longer exists. */
  file(state: S, path: string): string | null;
  /**
   * Every file this state materialises. Given, a commit on a tip whose tree this process did
   * not write first compares that tree with the fold and rewrites each file that differs
   * (removing those the fold has none of): a fast-forward or a merge keeps another machine's
   * files as it wrote them, and a file its refused op put there (or an extra one) would
   * otherwise be carried forward in our own commit (DESIGN §7; found in review, the Ladder).
   */
  files?(state: S): Iterable<string>;
  /** After a fold from the log: why this state cannot be the entity on `ref`, or null. */
  verify?(state: S, ref: string): string | null;
  /**
   * The ops a guarded fold has refused so far, oldest first (a refused op stays in the log and
   * changes nothing but this list, DESIGN §7). A local write whose op the fold refuses fails
   * instead of being committed (Entity.commitGroup).
   */
  refusals?(state: S): OpLog<{ reason: string }>;
}

/** What a use case decides: one op of the entity's union, without its envelope. */
export type OpSpec<Op extends OpRecord = OpRecord> = Op extends OpRecord
  ? Pick<Op, 'op' | 'args'> &
      (undefined extends Op['out'] ? { out?: Op['out'] } : { out: Op['out'] }) & {
        summary: string;
      }
  : never;

/** The fields Entity fills in when it records an op. */
type Envelope = Pick<
  OpRecord,
  'v' | 'id' | 'actor' | 'lamport' | 'time' | 'key' | 'request_hash' | 'replica'
>;

export interface MutationMeta {
  actor: string;
  now: Date;
  revision: string | null;
}

export interface Mutation<S, R, Op extends OpRecord = OpRecord> {
  actor: string;
  idempotencyKey?: string;
  /** What the caller asked for (tool and arguments); a key reused with another request is refused. */
  request?: { tool: string; args: unknown };
  expectedRevision?: string;
  /**
   * Tests only (nothing in src/ sets it): commit the op even where the fold refuses it, as
   * another machine's zz (an older build, a hostile one) may have written it, so the fold and
   * sync can be tested on such logs. Without it such a write fails and writes nothing.
   */
  recordRefused?: true;
  /** Validates against the current state and decides the op; throws ZzError to refuse. */
  decide(state: S, meta: MutationMeta): OpSpec<Op> | Array<OpSpec<Op>>;
  /**
   * The caller's result, computed from the state after the op (also used on replay). `op` is
   * null when decide() found nothing to do (a no-op that still answers).
   */
  result(state: S, op: Op | null): R;
}

export interface MutationResult<R, Op extends OpRecord = OpRecord> {
  result: R;
  revision: string;
  replayed: boolean;
  /** The caller's op (the recorded one on a replay); null for a no-op. */
  op: Op | null;
}

export interface Snapshot<S, Op extends OpRecord = OpRecord> {
  revision: string | null;
  state: S;
  /**
   * Every op, oldest first, each with the revision of the commit that holds it. Shared with
   * the next snapshot's log (op-log.ts), never changed.
   */
  log: OpLog<LoggedOp<Op>>;
}

export type LoggedOp<Op extends OpRecord = OpRecord> = Op & { revision: string };

export type CommitListener<Op extends OpRecord = OpRecord> = (
  ref: string,
  revision: string,
  ops: ReadonlyArray<LoggedOp<Op>>,
) => void;

interface Pending<S, Op extends OpRecord> {
  m: Mutation<S, unknown, Op>;
  resolve: (r: MutationResult<unknown, Op>) => void;
  reject: (e: unknown) => void;
}

const MAX_GROUP = 256;
/**
 * The gathering wait before a group that follows a group of at least GATHER_MIN_OPS ops while
 * more writes are queued (drain). A single writer, or a few, never waits: their queue is empty
 * when a commit ends. Measured on the 2-vCPU VM, quiet, 64-client load alternating 2 ms with
 * none in one directory (15 runs each, 2 Dec 04:37-04:50 UTC): requests/s 1,587-1,836 against
 * 1,537-1,773 (1,699 and 1,652 at the median), daemon CPU a request 4% lower (groups of 31-34 ops
 * against 27-32), p50 36-43 against 39-50 ms; the p99 was not told apart (median 103 against
 * 102 ms). 3 ms: much the same. The 32-writer storm's reads (ratios 1.66-2.48x against
 * 1.97-2.68x) and the store bench's single and 32 writers were no worse.
 */
const GATHER_MS = 2;
const GATHER_MIN_OPS = 4;
const MAX_CAS_RETRIES = 50;

export class Entity<S, Op extends OpRecord = OpRecord> {
  private snap: Snapshot<S, Op> | null = null;
  private keys = new Map<string, LoggedOp<Op>>();
  private lamport = 0;
  private queue: Array<Pending<S, Op>> = [];
  private draining = false;
  private loading: Promise<Snapshot<S, Op>> | null = null;
  private headRead: { p: Promise<string | null>; commits: number } | null = null;
  /** Commits this Entity made; tells a shared ref read from before one of them. */
  private commits = 0;
  /** The revision whose tree this process wrote from the fold (codec.files): no drift to undo. */
  private foldedTree: string | null = null;

  constructor(
    readonly store: Store,
    readonly ref: string,
    private readonly codec: EntityCodec<S, Op>,
    private readonly onCommit?: CommitListener<Op>,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** The current snapshot; refreshed when the ref moved outside this process. */
  async read(): Promise<Snapshot<S, Op>> {
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

  private refresh(head: string | null): Promise<Snapshot<S, Op>> {
    if (this.loading) return this.loading;
    this.loading = this.load(head).finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  /** The ref's history (from `since`), or this entity reported unreadable. */
  private async history(head: string, since?: string): Promise<CommitRecord[]> {
    try {
      return await this.store.history(this.ref, since);
    } catch (e) {
      // git cannot walk the ref's history (it points at a blob or a tree, or at an object
      // that is missing, on the whole walk or on the tail above a cached revision): this
      // entity is unreadable, the others are not.
      if (e instanceof ZzError && e.code === 'git_failed' && exitedNonZero(e)) {
        this.snap = null;
        throw this.corrupt(`its history cannot be read (${firstLine(e.message)})`, head);
      }
      throw e;
    }
  }

  private async load(head: string | null): Promise<Snapshot<S, Op>> {
    const prev = this.snap;
    if (head === null) {
      this.reset();
      return this.snap!;
    }
    // Extend the cached fold when the new head descends linearly from what we hold.
    if (prev?.revision) {
      const tail = await this.history(head, prev.revision);
      if (
        tail.length > 0 &&
        tail[0]!.parents.includes(prev.revision) &&
        tail.every((c) => c.parents.length <= 1)
      ) {
        const draft = this.codec.clone(prev.state);
        const more: Array<LoggedOp<Op>> = [];
        this.checkReadable(tail);
        this.foldInto(draft, more, linear(tail));
        const bad = this.codec.verify?.(draft, this.ref) ?? null;
        if (bad !== null) throw this.corrupt(bad, head);
        this.snap = {
          revision: tail[tail.length - 1]!.revision,
          state: draft,
          log: prev.log.concat(more),
        };
        return this.snap;
      }
    }
    const all = await this.history(head);
    this.reset();
    const draft = this.codec.clone(this.snap!.state);
    const log: Array<LoggedOp<Op>> = [];
    const tip = all.length ? all[all.length - 1]!.revision : null;
    try {
      this.checkReadable(all);
      if (tip !== null && hasMerges(all)) {
        // Merged by sync: fold in publication order; a merge commit's clock counts too.
        this.foldInto(draft, log, publicationOrder(all, tip));
        this.lamport = Math.max(this.lamport, commitLamports(all).get(tip) ?? 0);
      } else this.foldInto(draft, log, linear(all));
    } catch (e) {
      // Nothing of a corrupt entity is served: the next read folds it again from scratch.
      this.snap = null;
      throw e;
    }
    const bad = this.codec.verify?.(draft, this.ref) ?? null;
    if (bad !== null) {
      this.snap = null;
      throw this.corrupt(bad, head);
    }
    this.snap = { revision: tip, state: draft, log: new OpLog(log) };
    return this.snap;
  }

  private corrupt(why: string, revision: string | null): ZzError {
    return new ZzError('entity_corrupt', `${this.ref} cannot be read: ${why}`, {
      ref: this.ref,
      revision,
    });
  }

  /**
   * Drops the cached fold: the next read folds the log again. For a fold whose inputs go
   * beyond the log (a Lane's roles come from refs/zz/config, DESIGN §7).
   */
  invalidate(): void {
    this.snap = null;
  }

  private reset(): void {
    this.snap = { revision: null, state: this.codec.empty(), log: new OpLog() };
    this.keys = new Map();
    this.lamport = 0;
  }

  /** A commit whose ops line could not be read makes the whole entity unreadable. */
  private checkReadable(commits: readonly CommitRecord[]): void {
    for (const c of commits) {
      if (c.malformed !== undefined)
        throw this.corrupt(`commit ${c.revision}: ${c.malformed}`, c.revision);
    }
  }

  private foldInto(draft: S, log: Array<LoggedOp<Op>>, ops: readonly OrderedOp[]): void {
    for (const { op: raw, revision } of ops) {
      const parsed = this.codec.parse(raw);
      if (!parsed.ok) throw this.corrupt(`commit ${revision}: ${parsed.error}`, revision);
      const op = parsed.op;
      this.codec.apply(draft, op);
      const logged: LoggedOp<Op> = { ...op, revision };
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
  async priorOp(actor: string, key: string): Promise<LoggedOp<Op> | undefined> {
    await this.read();
    return this.keys.get(keyOf(actor, key));
  }

  mutate<R>(m: Mutation<S, R, Op>): Promise<MutationResult<R, Op>> {
    return new Promise((resolve, reject) => {
      this.queue.push({
        m,
        // The queue holds mutations of every result type; each resolve gets back what its own
        // m.result() produced.
        resolve: (r) => resolve({ ...r, result: r.result as R }),
        reject,
      });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      let last = 0;
      while (this.queue.length > 0) {
        // One turn of the event loop between commits (and before the first): the answers of
        // the last commit and requests that arrived meanwhile (reads; writes, which then join
        // this group) run before this group's synchronous work (decide, trees, objects).
        // After a large group, under a sustained load (writes already queued), a short
        // gathering wait instead: the writers that group just answered send their next write
        // at once, and without it they arrive as the next group has started and wait for two
        // commits (a convoy). See GATHER_MS for the figures.
        if (last >= GATHER_MIN_OPS) await new Promise((r) => setTimeout(r, GATHER_MS));
        else await nextTurn();
        const group = this.queue.splice(0, MAX_GROUP);
        last = group.length;
        await this.commitGroup(group);
      }
    } finally {
      this.draining = false;
    }
  }

  private async commitGroup(group: Array<Pending<S, Op>>): Promise<void> {
    for (let attempt = 0; ;) {
      let snap: Snapshot<S, Op>;
      try {
        snap = await this.read();
      } catch (e) {
        for (const p of group) p.reject(e);
        return;
      }
      const draft = this.codec.clone(snap.state);
      const changed = new Set<string>();
      const ops: Op[] = [];
      const done: Array<{ p: Pending<S, Op>; op: Op | null; replay?: Op }> = [];
      const failed: Array<{ p: Pending<S, Op>; e: unknown }> = [];
      const deferred: Array<Pending<S, Op>> = [];
      const keysInGroup = new Map<string, Op>();
      const summaries = new Map<Op, string>();
      let poisoned: { p: Pending<S, Op>; e: unknown } | null = null;
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
              done.push({ p, op: prior, replay: prior });
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
          // Every op of the mutation is enveloped and parsed before any is applied: a follow-up
          // refused after the caller's op was applied would leave that op in the draft and in
          // the commit while its caller was told it failed.
          const parsedOps: Op[] = [];
          for (const spec of specs) {
            const envelope: Envelope = {
              v: OP_FORMAT,
              id: newOpId(this.store.replica),
              ...(this.store.replica !== undefined ? { replica: this.store.replica } : {}),
              actor: m.actor,
              lamport: lamport + parsedOps.length + 1,
              time: now.toISOString(),
              ...(parsedOps.length === 0 && m.idempotencyKey !== undefined
                ? { key: m.idempotencyKey, request_hash: requestHash(m) }
                : {}),
            };
            // What is written is what a reader will parse: an op this entity would refuse to
            // read is refused here, naming the field, before it reaches the ref.
            const parsed = this.codec.parse({
              ...envelope,
              op: spec.op,
              args: spec.args,
              ...(spec.out === undefined ? {} : { out: spec.out }),
            });
            if (!parsed.ok) throw new ZzError('invalid_argument', parsed.error);
            parsedOps.push(parsed.op);
            summaries.set(parsed.op, spec.summary);
          }
          let primary: Op | null = null;
          for (const op of parsedOps) {
            const refusedBefore = this.codec.refusals?.(draft).length ?? 0;
            try {
              for (const path of this.codec.apply(draft, op)) changed.add(path);
            } catch (e) {
              // The draft may hold part of this mutation: refuse it, decide the group again.
              poisoned = { p, e };
              break;
            }
            const refused = this.codec.refusals?.(draft).at(refusedBefore);
            if (refused && m.recordRefused !== true) {
              // decide() let through an op the fold refuses (a local check that is missing or
              // differs from the guard): committed, it would stand in the log as refused while
              // its caller heard it succeeded. The draft holds the refusal (and maybe part of
              // the mutation): as above, this mutation fails and the group is decided again.
              poisoned = { p, e: foldRefused(this.ref, op.op, refused.reason) };
              break;
            }
            lamport = op.lamport;
            ops.push(op);
            if (primary === null) {
              primary = op;
              if (op.key !== undefined) keysInGroup.set(keyOf(op.actor, op.key), op);
              done.push({ p, op });
            }
          }
          if (poisoned) break;
          if (primary === null) {
            // decide() found nothing to do (e.g. a racing init already did it): a no-op that
            // still answers, at the revision it was decided against.
            done.push({ p, op: null });
          }
        } catch (e) {
          failed.push({ p, e });
        }
      }
      if (poisoned) {
        // codec.apply threw, or the fold refused what decide() allowed (bugs: decide() refuses):
        // the draft is not a fold of whole mutations. Only this mutation fails, with nothing
        // written; the rest are decided again on a clean draft.
        poisoned.p.reject(poisoned.e);
        group = group.filter((q) => q !== poisoned!.p);
        continue;
      }
      let revision = snap.revision;
      if (ops.length > 0) {
        // A turn of the event loop between deciding the group's ops and committing them (see
        // GitStore.commit's for the figures): reads waiting behind a storm's group are served.
        await nextTurn();
        if (snap.revision !== null && snap.revision !== this.foldedTree) {
          for (const path of await treeDriftOf(this.store, this.codec, snap.revision, snap.state))
            changed.add(path);
        }
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
            attempt++;
            await new Promise((r) => setTimeout(r, Math.random() * 2 * attempt));
            continue;
          }
          for (const p of group) p.reject(e);
          return;
        }
        if (this.codec.files) this.foldedTree = revision;
        const logged = ops.map((o) => ({ ...o, revision: revision! }));
        this.lamport = lamport;
        for (const o of logged) if (o.key !== undefined) this.keys.set(keyOf(o.actor, o.key), o);
        this.snap = { revision, state: draft, log: snap.log.concat(logged) };
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

/** A local write's op that the entity's guarded fold refused: the write fails, no ref moves. */
function foldRefused(ref: string, op: string, reason: string): ZzError {
  return new ZzError(
    'conflict',
    `${op} was not written: ${ref}'s fold refuses it (${reason}), though the local checks let it through`,
    { reason },
  );
}

const firstLine = (s: string): string => s.split('\n', 1)[0]!.slice(0, 300);

/** git ran and refused (not: git could not be started, or its output was cut short). */
const exitedNonZero = (e: ZzError): boolean =>
  typeof e.details === 'object' && e.details !== null && 'code' in e.details;

function linear(commits: readonly CommitRecord[]): OrderedOp[] {
  return commits.flatMap((c) => c.ops.map((op) => ({ op, revision: c.revision })));
}

function keyOf(actor: string, key: string): string {
  return `${actor}\0${key}`;
}

function requestHash(m: { request?: { tool: string; args: unknown } }): string {
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
