import { ZzError } from '../errors.js';
import type { ConfigDoc } from '../schema/config.js';
import type { Entity, MutationMeta, MutationResult, OpRecord, OpSpec } from '../store/index.js';
import { assertSelf, requireCaller, type Caller } from './access.js';
import { signableCheck } from './signable.js';
import type { ZzRepo } from './zz-repo.js';

// The one path of a write use case: who is calling (a token, and `actor`/`from` that match
// it), the initialised config, the request an idempotency key is bound to, and one mutation
// of one entity whose decide() re-checks every rule against the state it will apply to.

/** Arguments every write use case takes. */
export type WriteOpts = {
  actor?: string;
  idempotency_key?: string;
  expected_revision?: string;
};

/** What every write answers besides its result. */
export type WriteMeta = {
  revision: string;
  replayed: boolean;
};

/** What decide() knows besides the state: the caller and the config of the moment. */
export interface WriteContext {
  caller: Caller;
  config: ConfigDoc;
  meta: MutationMeta;
}

export interface WriteOpSpec<S, R, Op extends OpRecord> {
  /** The tool name and the arguments that identify the request (for idempotency keys). */
  tool: string;
  request: unknown;
  /** Values the caller passed as claims about who they are (`from`), beside `actor`. */
  from?: string;
  /**
   * Reads of other entities the write depends on (e.g. that related Lanes exist), or work the
   * op will name (a changeset's objects, written before the answer that cites them), run after
   * the caller and config checks and before the mutation. Not atomic with it: decide() must
   * still hold every rule about the entity it writes.
   */
  check?(ctx: Omit<WriteContext, 'meta'>): Promise<void>;
  decide(state: S, ctx: WriteContext): OpSpec<Op> | Array<OpSpec<Op>>;
  result(state: S, op: Op | null): R;
}

/** The entity decides the op type; the spec only has to fit it. */
type SpecFor<S, R, Op extends OpRecord> = WriteOpSpec<NoInfer<S>, R, NoInfer<Op>>;

export async function writeOp<S, R, Op extends OpRecord>(
  repo: ZzRepo,
  callerIn: Caller | null,
  entity: Entity<S, Op>,
  opts: WriteOpts,
  spec: SpecFor<S, R, Op>,
): Promise<MutationResult<R, Op>> {
  const caller = requireCaller(callerIn);
  assertSelf(caller, opts.actor, 'actor');
  assertSelf(caller, spec.from, 'from');
  // A Lane's group commit reads refs/zz/config when it reads the Lane, after this request
  // arrived: a write without a check() decides against that config instead of reading it here
  // too (one config read per group, not one per write plus one per group).
  const early = spec.check !== undefined || !repo.readsConfig(entity);
  // Before anything is written: a commit this process cannot sign that every other clone
  // would refuse would hold back its ref, and everything after it, for good. Checked against
  // the config the write decides with: read here, or the group's (in decide(), below).
  const signable = await signableCheck(repo, caller, entity, spec.tool);
  if (early && signable) signable((await repo.config.read()).state);
  const config = early ? await repo.requireConfig() : null;
  if (config) await spec.check?.({ caller, config });
  const done = await entity.mutate({
    actor: caller.actor,
    ...(opts.idempotency_key === undefined ? {} : { idempotencyKey: opts.idempotency_key }),
    ...(opts.expected_revision === undefined ? {} : { expectedRevision: opts.expected_revision }),
    request: { tool: spec.tool, args: spec.request },
    decide: (s, meta) => {
      if (!config) signable?.(repo.configStateSeenByLanes());
      return spec.decide(s, { caller, config: config ?? repo.configSeenByLanes(), meta });
    },
    result: spec.result,
  });
  await answerTurn();
  return done;
}

/**
 * Writes whose answers are let through per turn of the event loop (see answerTurn). A group
 * commit settles up to 32 writes at once under a storm, and each answer costs its caller
 * ~0.2-0.5 ms of synchronous work (result view, JSON, HTTP response, socket write): all of them
 * in one turn held the loop 10-20 ms, and every read that arrived meanwhile waited for it.
 */
export const ANSWERS_PER_TURN = 8;

const answering: Array<() => void> = [];
let answerScheduled = false;

/**
 * Resolves on a later turn of the event loop, at most ANSWERS_PER_TURN callers per turn in
 * arrival order, so requests that arrived on sockets meanwhile (reads, more writes) run
 * between batches of answers. A write is durable before it waits here; only its answer waits.
 */
export function answerTurn(): Promise<void> {
  return new Promise((resolve) => {
    answering.push(resolve);
    if (!answerScheduled) {
      answerScheduled = true;
      setImmediate(releaseAnswers);
    }
  });
}

function releaseAnswers(): void {
  // An immediate scheduled from inside an immediate runs on the next turn, after the poll
  // phase has taken in what arrived on the sockets.
  for (const resolve of answering.splice(0, ANSWERS_PER_TURN)) resolve();
  if (answering.length > 0) setImmediate(releaseAnswers);
  else answerScheduled = false;
}

/** A mutation's result() got an op it did not decide: a bug, said plainly. */
export function unexpectedOp(op: { op: string } | null, expected: string): ZzError {
  return new ZzError('internal', `expected a ${expected} op, got ${op === null ? 'no op' : op.op}`);
}
