import { LIMITS } from '../schema/limits.js';

// The Asks a long-running worker gave back, each waiting before this worker claims it again
// (ask_claim_next passes over them: `exclude`). A worker runs for days against Lanes of
// thousands of Asks, so the list is pruned and bounded:
// - an Ask answered by this worker, or seen answered or cancelled in the Lane's events, is
//   dropped at once: it will not come back;
// - an entry is dropped REMEMBER_MS after its wait ended. Until then it is only remembered, not
//   passed over: an Ask given back again soon after its wait waits twice as long (the doubling
//   needs the count), while one not seen again for that long (taken by someone else, closed
//   while this worker was busy, or simply done) starts again from the first wait;
// - at most MAX_WAITING entries, the bound on `exclude`: past it, the entry due soonest (other
//   than the one just recorded) goes, the one whose wait would have ended first anyway.

export const MAX_BACKOFF_MS = 5 * 60_000;
/** How long after its wait an entry is kept to remember how often its Ask was given back. */
export const REMEMBER_MS = MAX_BACKOFF_MS;
/** The most Asks waiting at once: what one ask_claim_next may pass over. */
export const MAX_WAITING = LIMITS.claimExclude;

export class Waiting {
  private readonly asks = new Map<string, { until: number; failures: number }>();

  constructor(
    private readonly baseMs: number,
    private readonly clock: () => number = Date.now,
    private readonly max: number = MAX_WAITING,
  ) {}

  /** Entries held (waiting or remembered); never more than the bound. */
  get size(): number {
    return this.asks.size;
  }

  /** Records one more give-back of the Ask: its wait doubles with each, up to MAX_BACKOFF_MS. */
  gaveBack(askId: string): { ms: number; failures: number } {
    this.prune();
    const failures = (this.asks.get(askId)?.failures ?? 0) + 1;
    const ms = Math.min(MAX_BACKOFF_MS, this.baseMs * 2 ** failures);
    this.asks.delete(askId); // re-inserted last: the map's order is the order of give-backs
    this.asks.set(askId, { until: this.clock() + ms, failures });
    while (this.asks.size > this.max) {
      let soonest: string | null = null;
      let at = Infinity;
      for (const [id, w] of this.asks) {
        if (id !== askId && w.until < at) [soonest, at] = [id, w.until];
      }
      this.asks.delete(soonest!);
    }
    return { ms, failures };
  }

  /** The Ask will not come back (answered here, or answered or cancelled by anyone). */
  forget(askIds: Iterable<string>): void {
    for (const id of askIds) this.asks.delete(id);
  }

  /** The Asks still waiting now: the ones to pass over. */
  now(): Set<string> {
    this.prune();
    const t = this.clock();
    return new Set([...this.asks].filter(([, w]) => w.until > t).map(([id]) => id));
  }

  /** How long an idle wait may last: `max`, or less when a waiting Ask comes due sooner. */
  until(max: number): number {
    const t = this.clock();
    let ms = max;
    for (const w of this.asks.values()) if (w.until > t) ms = Math.min(ms, w.until - t);
    return Math.max(1, ms);
  }

  private prune(): void {
    const t = this.clock();
    for (const [id, w] of this.asks) if (w.until + REMEMBER_MS <= t) this.asks.delete(id);
  }
}
