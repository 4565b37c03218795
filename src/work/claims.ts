import { randomBytes } from 'node:crypto';
import { isZzError, ZzError } from '../errors.js';
import type { AskView, CallTool } from './types.js';

// Taking, keeping and giving back Asks. ask_claim_next picks and claims in one commit, so
// concurrent workers never race; against a daemon that predates it, the worker falls back to
// ask_query_claimable + ask_claim and simply moves on when another worker wins a claim (409).

const LOST_RACE = new Set(['already_claimed', 'conflict', 'dependency_unresolved', 'forbidden']);

export class Claims {
  private claimNextMissing = false;

  constructor(
    private readonly call: CallTool,
    private readonly laneId: string,
    private readonly kinds: string[] | undefined,
    private readonly leaseSeconds: number,
  ) {}

  /**
   * Claims the next Ask, passing over those in `avoid` (Asks this worker gave back and waits
   * to retry): ask_claim_next cannot pass over any, so while some wait the claim goes through
   * the query, which lists them too, and the first other one is taken.
   */
  async next(avoid: ReadonlySet<string> = new Set()): Promise<AskView | null> {
    const kinds = this.kinds?.length ? { kinds: this.kinds } : {};
    if (!this.claimNextMissing && avoid.size === 0) {
      // A claim whose answer is lost in transit is taken again with the same key, which gives
      // back the same Ask instead of leaving it held by nobody until its lease runs out.
      const args = {
        lane_id: this.laneId,
        lease_seconds: this.leaseSeconds,
        idempotency_key: `claim-${randomBytes(12).toString('hex')}`,
        ...kinds,
      };
      try {
        const r = await this.call('ask_claim_next', args).catch((e: unknown) => {
          if (isZzError(e) && e.code === 'unavailable') return this.call('ask_claim_next', args);
          throw e;
        });
        return (r.ask as AskView | null) ?? null;
      } catch (e) {
        if (!(isZzError(e) && e.code === 'not_found' && /unknown tool/.test(e.message))) throw e;
        this.claimNextMissing = true;
      }
    }
    // Fallback: a few rounds of query-then-claim; each lost race just tries the next Ask.
    for (let round = 0; round < 5; round++) {
      const q = await this.call('ask_query_claimable', {
        lane_id: this.laneId,
        limit: Math.min(500, 20 + avoid.size),
        ...kinds,
      });
      const listed = (q.asks as AskView[] | undefined) ?? [];
      const asks = spread(listed.filter((a) => !avoid.has(a.ask_id)));
      if (asks.length === 0) return null;
      for (const a of asks) {
        try {
          const r = await this.call('ask_claim', {
            lane_id: this.laneId,
            ask_id: a.ask_id,
            lease_seconds: this.leaseSeconds,
          });
          return r.ask as AskView;
        } catch (e) {
          if (!(isZzError(e) && LOST_RACE.has(e.code))) throw e;
        }
      }
    }
    return null;
  }

  /** Claiming again as the holder renews the lease. */
  async renew(ask: AskView): Promise<AskView> {
    const r = await this.call('ask_claim', {
      lane_id: ask.lane_id,
      ask_id: ask.ask_id,
      lease_seconds: this.leaseSeconds,
    });
    return r.ask as AskView;
  }

  /**
   * Gives the Ask back. The reason goes with the release when the daemon's ask_release takes
   * one (it is then in the Lane's history); otherwise it is only in this worker's output.
   */
  async release(ask: AskView, reason: string): Promise<void> {
    const base = { lane_id: ask.lane_id, ask_id: ask.ask_id };
    try {
      await this.call('ask_release', { ...base, reason: reason.slice(0, 2000) });
    } catch (e) {
      if (!(isZzError(e) && e.code === 'invalid_argument' && /reason/.test(e.message))) throw e;
      await this.call('ask_release', base);
    }
  }

  /**
   * Renews the lease every third of its length while a step runs. A renewal that fails
   * because someone else now holds the Ask (our lease lapsed) aborts the step; a transient
   * failure is tried again at the next tick.
   */
  keep(ask: AskView, onLost: (why: Error) => void): { stop(): void } {
    let timer: NodeJS.Timeout | null = null;
    let stopped = false;
    const tick = async () => {
      try {
        await this.renew(ask);
      } catch (e) {
        if (isZzError(e) && LOST_RACE.has(e.code)) {
          onLost(new ZzError('conflict', `lost the claim on ${ask.ask_id}: ${e.message}`));
          return;
        }
      }
      if (!stopped) timer = setTimeout(() => void tick(), (this.leaseSeconds * 1000) / 3);
    };
    timer = setTimeout(() => void tick(), (this.leaseSeconds * 1000) / 3);
    return {
      stop() {
        stopped = true;
        if (timer) clearTimeout(timer);
      },
    };
  }
}

/**
 * Workers that query at the same moment see the same list; if all went for its head, all but
 * one would lose the race on every Ask. Rotating among the Asks that share the top priority
 * spreads them out without taking a lower-priority Ask before a higher one.
 */
function spread(asks: AskView[]): AskView[] {
  const top = asks.filter((a) => a.priority === asks[0]?.priority).length;
  const k = Math.floor(Math.random() * Math.min(top, 8));
  return [...asks.slice(k, top), ...asks.slice(0, k), ...asks.slice(top)];
}

/**
 * Waits for the Lane to change, through lane_events' long-poll (no busy polling): the cursor
 * is taken before each claim attempt, so a post that lands between "nothing claimable" and the
 * wait wakes the wait at once.
 */
export class LaneWatcher {
  cursor: string | undefined;

  constructor(
    private readonly call: CallTool,
    private readonly laneId: string,
  ) {}

  /** Moves the cursor to the end of the Lane's history (paging through it once). */
  async init(): Promise<void> {
    for (;;) {
      const r = await this.call('lane_events', {
        lane_id: this.laneId,
        limit: 5000,
        ...(this.cursor ? { cursor: this.cursor } : {}),
      });
      this.cursor = r.next_cursor as string;
      if (((r.events as unknown[]) ?? []).length < 5000) return;
    }
  }

  /** Resolves when the Lane has new events, after waitMs, or when the signal aborts. */
  async wait(waitMs: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    const poll = this.call('lane_events', {
      lane_id: this.laneId,
      wait_ms: waitMs,
      limit: 5000,
      ...(this.cursor ? { cursor: this.cursor } : {}),
    }).then((r) => {
      this.cursor = r.next_cursor as string;
    });
    if (!signal) return poll;
    let onAbort = () => {};
    const aborted = new Promise<void>((resolve) => {
      onAbort = resolve;
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // An aborted wait leaves its request to finish on its own; the worker is stopping anyway.
    poll.catch(() => {});
    try {
      await Promise.race([poll, aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}
