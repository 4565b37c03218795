import { isZzError, type ErrorCode } from '../errors.js';
import { Claims, LaneWatcher } from './claims.js';
import {
  resolveFlow,
  reviewFlow,
  submitFlow,
  workFlow,
  type FlowContext,
  type FlowResult,
} from './flows.js';
import { openLoop } from './open-loop.js';
import { Waiting } from './waiting.js';
import type { AskView, WorkEvent, WorkOptions } from './types.js';

// The agent loop: claim the next Ask (ask_claim_next), work it with the flow its kind calls
// for, answer, repeat; when nothing is claimable, wait on the Lane's events. Whatever goes
// wrong while an Ask is held — a model failure, invalid output after the repair round, a tool
// error, Ctrl-C — the claim is released with the reason before the worker moves on or exits.

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
  /** Why the last Ask given back was given back (`zz work --once` exits with it). */
  failure: { ask_id: string; code: ErrorCode; reason: string } | null;
}

export async function runWorker(opts: WorkOptions): Promise<WorkSummary> {
  const emit = (e: WorkEvent) => opts.onEvent?.(e);
  const leaseSeconds = opts.leaseSeconds ?? 300;
  const claims = new Claims(opts.call, opts.laneId, opts.kinds, leaseSeconds);
  const watcher = new LaneWatcher(opts.call, opts.laneId);
  const summary: WorkSummary = {
    asks: 0,
    answered: 0,
    released: 0,
    interrupted: false,
    failure: null,
  };
  emit({
    type: 'start',
    lane_id: opts.laneId,
    actor: opts.actor,
    model: opts.model.spec,
    kinds: opts.kinds?.length ? opts.kinds : null,
  });
  if (!opts.once) await watcher.init();
  let idle = false;
  let outage = 0;
  let failedInARow = 0;
  const waiting = new Waiting(opts.failureBackoffMs ?? 2000);
  while (!opts.signal?.aborted) {
    let ask: AskView | null;
    try {
      ask = await claims.next(waiting.now());
      outage = 0;
    } catch (e) {
      // A daemon that restarts or is briefly unreachable is waited out (with backoff) by a
      // long-running worker; --once reports it and stops. Anything else is not ours to hide.
      if (opts.once || !(isZzError(e) && e.code === 'unavailable')) throw e;
      emit({ type: 'error', ask_id: null, message: e.message });
      await pause(Math.min(30_000, 1000 * 2 ** outage++), opts.signal);
      continue;
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
      } catch (e) {
        if (!(isZzError(e) && e.code === 'unavailable')) throw e;
        emit({ type: 'error', ask_id: null, message: e.message });
        await pause(Math.min(30_000, 1000 * 2 ** outage++), opts.signal);
      }
      continue;
    }
    idle = false;
    summary.asks++;
    const failure = await workOne(ask, opts, claims, emit);
    if (!failure) {
      summary.answered++;
      failedInARow = 0;
      waiting.forget([ask.ask_id]);
    } else {
      summary.released++;
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
      const { ms, failures } = waiting.gaveBack(ask.ask_id);
      emit({ type: 'backoff', ask_id: ask.ask_id, ms, failures });
      const base = opts.failureBackoffMs ?? 2000;
      await pause(Math.min(MAX_PAUSE_MS, base * 2 ** failedInARow++), opts.signal);
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
): Promise<{ code: ErrorCode; reason: string } | null> {
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
  const lease = claims.keep(ask, (why) => abort.abort(why));
  const ctx: FlowContext = {
    ask,
    call: (tool, args) => {
      abort.signal.throwIfAborted();
      return opts.call(tool, args);
    },
    model: opts.model,
    signal: abort.signal,
    ...(opts.sandbox ? { sandbox: opts.sandbox } : {}),
    testRounds: opts.testRounds ?? 3,
    step: (step, detail) =>
      emit({ type: 'step', ask_id: ask.ask_id, step, ...(detail ? { detail } : {}) }),
  };
  try {
    const flow = FLOWS[ask.kind];
    const result = flow
      ? await flow(ctx)
      : await openLoop(ctx, opts.maxTurns ?? 20, (tool, ok, detail) =>
          emit({ type: 'tool', ask_id: ask.ask_id, tool, ok, ...(detail ? { detail } : {}) }),
        );
    if (!result) {
      const reason = `no answer after ${opts.maxTurns ?? 20} turns`;
      await giveBack(ask, reason, claims, emit);
      return { code: 'unavailable', reason };
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
    await giveBack(ask, reason, claims, emit);
    // A lost lease aborts with a ZzError of its own; what aborted the step is the cause.
    const cause: unknown = abort.signal.aborted ? abort.signal.reason : e;
    return { code: isZzError(cause) ? cause.code : 'internal', reason };
  } finally {
    lease.stop();
    opts.signal?.removeEventListener('abort', onStop);
  }
}

async function giveBack(
  ask: AskView,
  reason: string,
  claims: Claims,
  emit: (e: WorkEvent) => void,
): Promise<void> {
  try {
    await claims.release(ask, reason);
    emit({ type: 'released', ask_id: ask.ask_id, reason });
  } catch (e) {
    // The Ask may have been answered after all, or the lease lapsed to someone else.
    emit({
      type: 'error',
      ask_id: ask.ask_id,
      message: `could not release: ${(e as Error).message}; the lease will expire`,
    });
  }
}
