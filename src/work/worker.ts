import { isZzError, ZzError, type ErrorCode } from '../errors.js';
import { Claims, LaneWatcher } from './claims.js';
import { LandingCheck } from './landing.js';
import {
  answer,
  resolveFlow,
  reviewFlow,
  submitFlow,
  workFlow,
  type FlowContext,
  type FlowResult,
} from './flows.js';
import {
  DEFAULT_MAX_POSTS_PER_RUN,
  DEFAULT_TOKENS_PER_ASK,
  generationOf,
  MAX_GENERATION,
  ORIGIN_FIELD,
  type PostBudget,
} from './limits.js';
import { openLoop } from './open-loop.js';
import { budgeted, isOverBudget } from './token-budget.js';
import { Waiting } from './waiting.js';
import type { AskView, LaneClosure, WorkEvent, WorkOptions } from './types.js';

// The agent loop: claim the next Ask (ask_claim_next), work it with the flow its kind calls
// for, answer, repeat; when nothing is claimable, wait on the Lane's events. Whatever goes
// wrong while an Ask is held — a model failure, invalid output after the repair round, a tool
// error, Ctrl-C — the claim is released with the reason before the worker moves on or exits;
// a release the daemon cannot take is reported with the lease's end, never as released. On
// every exit a claim sent whose answer was lost is settled (Claims.settle).
// A closed Lane hands out no new work but lets a holder finish (lane-closed.ts): the worker
// learns it from ask_claim_next, whose empty answer then says who closed it, and stops — at
// once when it starts on a closed Lane, after the Ask in hand when the Lane closes meanwhile
// (its answer still lands), and when the Lane's events wake an idle wait.

const FLOWS: Record<string, (ctx: FlowContext) => Promise<FlowResult>> = {
  work: workFlow,
  changeset_review: reviewFlow,
  submit_changeset: submitFlow,
  resolve_conflict: resolveFlow,
};

export interface WorkSummary {
  asks: number;
  answered: number;
  released: number;
  /** True when it stopped because of the signal (Ctrl-C), not because it ran out of work. */
  interrupted: boolean;
  /** Set when it stopped because the Lane is closed: who closed it, when, why. */
  closed: LaneClosure | null;
  /**
   * Why the last Ask given back was given back (`zz work --once` exits with it); `held` when
   * it could not be released (why), so it stays claimed until `lease_expires_at`; `taken`
   * when it was no longer this worker's to give back, saying why (the daemon's refusal:
   * cancelled, claimed by another, a closed Lane's lapsed lease, scope revoked).
   */
  failure: {
    ask_id: string;
    code: ErrorCode;
    reason: string;
    held: string | null;
    taken: string | null;
    lease_expires_at: string | null;
  } | null;
}

/** The longest idleWaitMs: lane_events waits at most 60 s (its wait_ms bound). */
const MAX_IDLE_WAIT_MS = 60_000;

export async function runWorker(opts: WorkOptions): Promise<WorkSummary> {
  // Checked before anything runs: past lane_events' bound, the first idle wait failed with the
  // daemon's invalid_argument after a claim had already been tried.
  const idleWait = opts.idleWaitMs;
  if (
    idleWait !== undefined &&
    (!Number.isInteger(idleWait) || idleWait < 1 || idleWait > MAX_IDLE_WAIT_MS)
  ) {
    throw new ZzError(
      'invalid_argument',
      `idleWaitMs must be a whole number of milliseconds from 1 to ${MAX_IDLE_WAIT_MS} (lane_events waits at most 60 s), not ${String(idleWait)}`,
    );
  }
  const emit = (e: WorkEvent) => opts.onEvent?.(e);
  const leaseSeconds = opts.leaseSeconds ?? 300;
  const claims = new Claims(opts.call, opts.laneId, opts.kinds, leaseSeconds);
  const maxTokens = opts.maxTokensPerAsk;
  if (maxTokens !== undefined && !(Number.isInteger(maxTokens) && maxTokens >= 1)) {
    throw new ZzError(
      'invalid_argument',
      `maxTokensPerAsk must be a whole number ≥ 1, not ${maxTokens}`,
    );
  }
  const maxPosts = opts.maxPosts ?? DEFAULT_MAX_POSTS_PER_RUN;
  if (!Number.isInteger(maxPosts) || maxPosts < 0) {
    throw new ZzError('invalid_argument', `maxPosts must be a whole number ≥ 0, not ${maxPosts}`);
  }
  const watcher = new LaneWatcher(opts.call, opts.laneId);
  const summary: WorkSummary = {
    asks: 0,
    answered: 0,
    released: 0,
    interrupted: false,
    closed: null,
    failure: null,
  };
  emit({
    type: 'start',
    lane_id: opts.laneId,
    actor: opts.actor,
    model: opts.model.spec,
    kinds: opts.kinds?.length ? opts.kinds : null,
  });
  try {
    await loop(opts, claims, watcher, summary, emit, { used: 0, max: maxPosts });
  } finally {
    // Every way out — --once, Ctrl-C, an error thrown out of the loop — first settles a claim
    // sent whose answer never came, so no Ask stays held by a worker that is gone.
    const settled = await claims
      .settle('zz work stopped before it could work this Ask')
      .catch((e: unknown) => ({ unknown: (e as Error).message, lease_seconds: leaseSeconds }));
    if (settled && 'released' in settled) {
      emit({
        type: 'released',
        ask_id: settled.released.ask_id,
        reason: 'claimed by a claim whose answer was lost; given back as zz work stops',
      });
    } else if (settled) {
      emit({
        type: 'error',
        ask_id: null,
        message: `a claim sent to the daemon got no answer and could not be checked (${settled.unknown}); if it landed, an Ask in lane ${opts.laneId} stays claimed by ${opts.actor ?? 'this worker'} until its lease runs out (at most ${settled.lease_seconds} s): \`zz ask list --mine\` shows it, \`zz ask release\` gives it back`,
      });
    }
  }
  summary.interrupted = !!opts.signal?.aborted;
  emit({
    type: 'done',
    asks: summary.asks,
    answered: summary.answered,
    released: summary.released,
    usage: opts.model.usage(),
  });
  return summary;
}

async function loop(
  opts: WorkOptions,
  claims: Claims,
  watcher: LaneWatcher,
  summary: WorkSummary,
  emit: (e: WorkEvent) => void,
  posts: PostBudget,
): Promise<void> {
  if (!opts.once) await watcher.init();
  let idle = false;
  let outage = 0;
  let failedInARow = 0;
  const waiting = new Waiting(opts.failureBackoffMs ?? 2000);
  const landing = new LandingCheck(opts.call, opts.laneId, opts.actor, opts.kinds);
  while (!opts.signal?.aborted) {
    let ask: AskView | null;
    try {
      const skip = await landing.skipKinds((kinds, reason) =>
        emit({ type: 'passing_over', lane_id: opts.laneId, kinds, reason }),
      );
      ask = await claims.next(waiting.now(), skip);
      outage = 0;
    } catch (e) {
      // A daemon that restarts or is briefly unreachable is waited out (with backoff) by a
      // long-running worker; --once reports it and stops. Anything else is not ours to hide.
      if (opts.once || !(isZzError(e) && e.code === 'unavailable')) throw e;
      emit({ type: 'error', ask_id: null, message: e.message });
      await pause(Math.min(30_000, 1000 * 2 ** outage++), opts.signal);
      continue;
    }
    if (!ask && claims.closed) {
      summary.closed = claims.closed;
      emit({ type: 'closed', lane_id: opts.laneId, ...claims.closed });
      break;
    }
    if (!ask) {
      if (opts.once) {
        emit({ type: 'idle', lane_id: opts.laneId });
        break;
      }
      if (!idle) emit({ type: 'idle', lane_id: opts.laneId });
      idle = true;
      try {
        // An Ask given back is claimable again when its wait ends, which no event announces.
        // Asks the events show answered or cancelled will not come back: no longer waited on.
        waiting.forget(await watcher.wait(waiting.until(opts.idleWaitMs ?? 30_000), opts.signal));
        landing.forget();
      } catch (e) {
        if (!(isZzError(e) && e.code === 'unavailable')) throw e;
        emit({ type: 'error', ask_id: null, message: e.message });
        await pause(Math.min(30_000, 1000 * 2 ** outage++), opts.signal);
      }
      continue;
    }
    idle = false;
    summary.asks++;
    const failure = await workOne(ask, opts, claims, emit, posts);
    if (!failure) {
      summary.answered++;
      failedInARow = 0;
      waiting.forget([ask.ask_id]);
    } else {
      if (failure.held === null && !failure.taken) summary.released++;
      summary.failure = { ask_id: ask.ask_id, ...failure };
    }
    if (opts.once) break;
    if (failure && !opts.signal?.aborted) {
      // The Ask given back is the next one claimable (same priority, oldest): without a wait
      // a model that always fails, or an Ask it cannot do, is claimed and released back to
      // back, a model call and two Lane commits each, for as long as the worker runs. So that
      // Ask waits (twice the pause, doubling per give-back, up to 5 min) while other work is
      // taken; the worker itself pauses only briefly (doubling per failure in a row, up to
      // 30 s, for a model that fails every Ask): one pause of minutes for the whole worker
      // left fresh work idle behind an Ask it could not do.
      // Given back MAX_GIVE_BACKS times, it is parked: not claimed again by this worker.
      // One over its token budget is parked at once: each claim would spend a fresh budget.
      const { ms, failures, parked } = waiting.gaveBack(ask.ask_id, failure.over_budget === true);
      emit({ type: 'backoff', ask_id: ask.ask_id, ms, failures, parked });
      const base = opts.failureBackoffMs ?? 2000;
      await pause(Math.min(MAX_PAUSE_MS, base * 2 ** failedInARow++), opts.signal);
    }
  }
}

const MAX_PAUSE_MS = 30_000;

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

async function workOne(
  ask: AskView,
  opts: WorkOptions,
  claims: Claims,
  emit: (e: WorkEvent) => void,
  posts: PostBudget,
): Promise<{
  code: ErrorCode;
  reason: string;
  held: string | null;
  taken: string | null;
  lease_expires_at: string | null;
  /** Stopped by the Ask's token budget: parked at once (token-budget.ts isOverBudget). */
  over_budget?: boolean;
} | null> {
  const started = Date.now();
  emit({
    type: 'claimed',
    ask_id: ask.ask_id,
    kind: ask.kind,
    title: ask.title,
    lease_expires_at: ask.lease_expires_at,
  });
  const abort = new AbortController();
  const onStop = () => abort.abort(new Error('interrupted'));
  opts.signal?.addEventListener('abort', onStop, { once: true });
  // Ctrl-C while the claim was in flight: the event has fired already; give it straight back.
  if (opts.signal?.aborted) onStop();
  let lost = false;
  let leaseEnds = ask.lease_expires_at;
  const lease = claims.keep(
    ask,
    (why) => {
      lost = true;
      abort.abort(why);
    },
    (renewed) => (leaseEnds = renewed.lease_expires_at),
  );
  const giveBack = async (reason: string) => {
    const back = await claims.giveBack(ask, reason, lost);
    const { released, held } = back;
    // The renewal giveBack sent first moved the lease's end on: the end known here is too early.
    const ends = back.lease_expires_at ?? leaseEnds;
    if (released) emit({ type: 'released', ask_id: ask.ask_id, reason });
    else if (held !== null) {
      // The claim stays until its lease runs out (DESIGN §9 wants it released: say why not).
      emit({
        type: 'error',
        ask_id: ask.ask_id,
        message: `could not release: ${held}; it stays claimed until its lease runs out at ${ends ?? 'its end'}`,
      });
    }
    // Lost during the step: the lease keeper's refusal (in the abort reason) says why.
    const lostWhy = lost ? String((abort.signal.reason as Error | undefined)?.message ?? '') : '';
    return {
      held,
      taken: released || held !== null ? null : back.gone || lostWhy || 'its claim ended',
      lease_expires_at: held === null ? null : ends,
    };
  };
  const ctx: FlowContext = {
    ask,
    // Async: a stopped step's call rejects rather than throws, so a flow that starts calls side
    // by side (Promise.all of headCommit(call), call(…)) leaves no promise rejected unhandled.
    call: async (tool, args) => {
      abort.signal.throwIfAborted();
      return opts.call(tool, args);
    },
    model: budgeted(opts.model, opts.maxTokensPerAsk ?? DEFAULT_TOKENS_PER_ASK),
    ...(opts.repo ? { repo: opts.repo } : {}),
    signal: abort.signal,
    ...(opts.sandbox ? { sandbox: opts.sandbox } : {}),
    testRounds: opts.testRounds ?? 3,
    posts,
    ...(opts.secrets ? { secrets: opts.secrets } : {}),
    step: (step, detail) =>
      emit({ type: 'step', ask_id: ask.ask_id, step, ...(detail ? { detail } : {}) }),
  };
  try {
    const flow = FLOWS[ask.kind];
    const generation = generationOf(ask.payload);
    // Past the generation limit (limits.ts): answered without the model, so no worker takes it.
    const result =
      generation > MAX_GENERATION
        ? await answer(ctx, 'deny', {
            result: `Not worked: this Ask was posted ${generation} generations down from a person's Ask by zz work (the limit is ${MAX_GENERATION}), or its ${ORIGIN_FIELD} payload is not zz work's.`,
          })
        : flow
          ? await flow(ctx)
          : await openLoop(ctx, opts.maxTurns ?? 20, (tool, ok, detail) =>
              emit({ type: 'tool', ask_id: ask.ask_id, tool, ok, ...(detail ? { detail } : {}) }),
            );
    if (!result) {
      const reason = `no answer after ${opts.maxTurns ?? 20} turns`;
      return { code: 'unavailable', reason, ...(await giveBack(reason)) };
    }
    emit({
      type: 'answered',
      ask_id: ask.ask_id,
      outcome: result.outcome,
      changeset_id: result.changeset_id,
      follow_ups: result.follow_ups,
      ms: Date.now() - started,
    });
    return null;
  } catch (e) {
    const reason = abort.signal.aborted
      ? String((abort.signal.reason as Error | undefined)?.message ?? 'interrupted')
      : isZzError(e)
        ? e.message
        : `internal error: ${(e as Error)?.message ?? String(e)}`;
    emit({ type: 'error', ask_id: ask.ask_id, message: reason });
    const back = await giveBack(reason);
    // A lost lease aborts with a ZzError of its own; what aborted the step is the cause.
    const cause: unknown = abort.signal.aborted ? abort.signal.reason : e;
    return {
      code: isZzError(cause) ? cause.code : 'internal',
      reason,
      ...back,
      ...(isOverBudget(cause) ? { over_budget: true } : {}),
    };
  } finally {
    lease.stop();
    opts.signal?.removeEventListener('abort', onStop);
  }
}
