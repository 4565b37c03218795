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
/**
 * Give-backs of one Ask after which this worker stops claiming it (parked) for the rest of its
 * run: without a limit an Ask no model can answer cost a model call every 5 minutes for ever
 * (about 240 an hour at the cap with several such Asks). The waits before it add up to about
 * 13 minutes at the default pause (8 s doubling, 5 minutes at most), enough for a passing
 * endpoint fault. A parked entry counts in
 * MAX_WAITING like any other and is dropped when its Ask is answered or cancelled anywhere.
 */
export const MAX_GIVE_BACKS = 8;
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

  /**
   * Records one more give-back of the Ask: its wait doubles with each, up to MAX_BACKOFF_MS;
   * the MAX_GIVE_BACKS-th parks it (passed over until it is forgotten: `until` is Infinity),
   * as does any give-back with `park`.
   */
  gaveBack(askId: string, park = false): { ms: number; failures: number; parked: boolean } {
    this.prune();
    const failures = (this.asks.get(askId)?.failures ?? 0) + 1;
    const parked = park || failures >= MAX_GIVE_BACKS;
    const ms = Math.min(MAX_BACKOFF_MS, this.baseMs * 2 ** failures);
    this.asks.delete(askId); // re-inserted last: the map's order is the order of give-backs
    this.asks.set(askId, { until: parked ? Infinity : this.clock() + ms, failures });
    while (this.asks.size > this.max) {
      // The one due soonest goes; when all others are parked, the one parked first.
      let soonest: string | null = null;
      let at = Infinity;
      for (const [id, w] of this.asks) {
        if (id !== askId && (soonest === null || w.until < at)) [soonest, at] = [id, w.until];
      }
      this.asks.delete(soonest!);
    }
    return { ms: parked ? 0 : ms, failures, parked };
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
