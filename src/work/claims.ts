import { isZzError, ZzError } from '../errors.js';
import { LIMITS } from '../schema/limits.js';
import { redactSecrets } from '../schema/redact.js';
import { newIdempotencyKey } from '../schema/new-key.js';
import type { AskView, CallTool, LaneClosure } from './types.js';

// Taking, keeping and giving back Asks. ask_claim_next picks and claims in one commit, so
// concurrent workers never race, and passes over the Asks this worker gave back and waits to
// retry (`exclude`). Every claim carries an idempotency key that is kept until an answer
// arrives: a claim whose answer was lost (a daemon restart, a socket cut after the commit) is
// asked again with the same key and the same arguments, and gets the same Ask back instead of
// leaving it held by this worker, who does not know it, until its lease runs out.
// Daemons that predate ask_claim_next (or its `exclude`) get query-then-claim, which has no
// key: there a claim answer lost in transit still leaves the Ask held until its lease ends.

const LOST_RACE = new Set(['already_claimed', 'conflict', 'dependency_unresolved', 'forbidden']);

/** What giving an Ask back did (Claims.giveBack). */
export interface GivenBack {
  released: boolean;
  held: string | null;
  /**
   * When `held`: the lease's end as the renewal before the release set it. The renewal moved
   * it on, so the end the worker knew before is too early (found in review).
   */
  lease_expires_at: string | null;
  /**
   * Why the Ask is no longer this worker's, from the daemon's refusal of the renewal (it was
   * cancelled, another holds it, a closed Lane refuses the lapsed lease, scope revoked): the
   * lost-race codes cover all of these, so "someone else took it" would often be untrue.
   */
  gone: string | null;
}

export class Claims {
  private claimNextMissing = false;
  private excludeMissing = false;
  private excludeKindsMissing = false;
  /** The claim sent whose answer has not arrived: sent again, as it is, by the next claim. */
  private pending: Record<string, unknown> | null = null;
  /**
   * Set when ask_claim_next finds nothing because the Lane is closed (lane_closed), and never
   * cleared: nothing reopens a Lane. Daemons that predate the field, and query-then-claim,
   * leave it null: the worker then waits as on an open Lane with nothing to do.
   */
  closed: LaneClosure | null = null;

  constructor(
    private readonly call: CallTool,
    private readonly laneId: string,
    private readonly kinds: string[] | undefined,
    private readonly leaseSeconds: number,
  ) {}

  /**
   * Claims the next Ask, passing over those in `avoid` (at most LIMITS.claimExclude) and those
   * of the kinds in `skipKinds`. A daemon without ask_claim_next's exclude_kinds gets
   * query-then-claim, which passes over them here: never a claim of an Ask to be passed over.
   */
  async next(
    avoid: ReadonlySet<string> = new Set(),
    skipKinds: ReadonlySet<string> = new Set(),
  ): Promise<AskView | null> {
    const kinds = this.kinds?.length ? { kinds: this.kinds } : {};
    if (
      !this.claimNextMissing &&
      !(this.excludeMissing && avoid.size > 0) &&
      !(this.excludeKindsMissing && skipKinds.size > 0)
    ) {
      try {
        return await this.claimNext(avoid, kinds, skipKinds);
      } catch (e) {
        if (!isZzError(e)) throw e;
        if (e.code === 'not_found' && /unknown tool/.test(e.message)) this.claimNextMissing = true;
        else if (e.code === 'invalid_argument' && /unknown field "exclude"/.test(e.message))
          this.excludeMissing = true;
        else if (e.code === 'invalid_argument' && /unknown field "exclude_kinds"/.test(e.message))
          this.excludeKindsMissing = true;
        else throw e;
      }
    }
    return this.queryThenClaim(avoid, kinds, skipKinds);
  }

  private async claimNext(
    avoid: ReadonlySet<string>,
    kinds: { kinds?: string[] },
    skipKinds: ReadonlySet<string>,
  ): Promise<AskView | null> {
    // A lost answer is asked again with the same key, once at once and then by every later
    // claim until one is answered (the worker waits an outage out between them). The same
    // arguments too: the key is bound to them, and the Asks waiting then are still waiting.
    for (let fresh = 0; fresh < 2; fresh++) {
      this.pending ??= {
        lane_id: this.laneId,
        lease_seconds: this.leaseSeconds,
        idempotency_key: newIdempotencyKey('claim'),
        ...kinds,
        ...(avoid.size > 0 ? { exclude: [...avoid].slice(0, LIMITS.claimExclude) } : {}),
        ...(skipKinds.size > 0 ? { exclude_kinds: [...skipKinds] } : {}),
      };
      const args = this.pending;
      let r: Record<string, unknown>;
      try {
        r = await this.call('ask_claim_next', args).catch((e: unknown) => {
          if (isZzError(e) && e.code === 'unavailable') return this.call('ask_claim_next', args);
          throw e;
        });
      } catch (e) {
        // Only a lost answer keeps the key; any answer, an error too, ends the request.
        if (!(isZzError(e) && e.code === 'unavailable')) this.pending = null;
        throw e;
      }
      const ask = (r.ask as AskView | null) ?? null;
      if (!ask) this.closed = closure(r.lane_closed);
      if (!ask || r.replayed !== true) {
        this.pending = null;
        return ask;
      }
      // A replay answers with the Ask as it is now, and the claim may be minutes old: its
      // lease may have run out and someone else taken (or answered) the Ask. Claiming it
      // again renews the lease if it is still this worker's, and fails if it is not.
      try {
        const renewed = await this.renew(ask);
        this.pending = null;
        return renewed;
      } catch (e) {
        // Unreachable again: the next claim replays and renews once more.
        if (isZzError(e) && e.code === 'unavailable') throw e;
        this.pending = null;
        if (!(isZzError(e) && LOST_RACE.has(e.code))) throw e;
        // Gone to someone else: claim afresh, with a new key.
      }
    }
    return null;
  }

  /**
   * Daemons without ask_claim_next: a few rounds of query-then-claim; a lost race tries the next.
   * The first page is enough and no cursor is sent: the page holds 20 more Asks than this
   * worker passes over (at most LIMITS.claimExclude), so when any is claimable one not in
   * `avoid` is on it; the daemons this serves predate ask_query_claimable's cursor (and its
   * 4 MiB page cut, which could end a page of large Asks before that).
   */
  private async queryThenClaim(
    avoid: ReadonlySet<string>,
    kinds: { kinds?: string[] },
    skipKinds: ReadonlySet<string>,
  ): Promise<AskView | null> {
    for (let round = 0; round < 5; round++) {
      const q = await this.call('ask_query_claimable', {
        lane_id: this.laneId,
        // Asks of a kind passed over may fill a page of 20: then the page is as long as it goes.
        limit: skipKinds.size > 0 ? 500 : Math.min(500, 20 + avoid.size),
        ...kinds,
      });
      const listed = (q.asks as AskView[] | undefined) ?? [];
      const asks = spread(listed.filter((a) => !avoid.has(a.ask_id) && !skipKinds.has(a.kind)));
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

  /**
   * Claiming again as the holder renews the lease. `key`: the idempotency key of a renewal
   * that is tried again after a lost answer (one key across the attempts).
   */
  async renew(ask: AskView, key?: string): Promise<AskView> {
    const r = await this.call('ask_claim', {
      lane_id: ask.lane_id,
      ask_id: ask.ask_id,
      lease_seconds: this.leaseSeconds,
      ...(key === undefined ? {} : { idempotency_key: key }),
    });
    return r.ask as AskView;
  }

  /**
   * Gives the Ask back. The reason goes with the release when the daemon's ask_release takes
   * one (it is then in the Lane's history); otherwise it is only in this worker's output.
   */
  async release(ask: AskView, reason: string, key?: string): Promise<void> {
    const base = {
      lane_id: ask.lane_id,
      ask_id: ask.ask_id,
      ...(key === undefined ? {} : { idempotency_key: key }),
    };
    try {
      // In the Lane's history, synced to every remote: token shapes out (schema/redact.ts).
      const why = redactSecrets(reason).slice(0, 2000);
      await this.call('ask_release', { ...base, reason: why });
    } catch (e) {
      if (!(isZzError(e) && e.code === 'invalid_argument' && /reason/.test(e.message))) throw e;
      await this.call('ask_release', base);
    }
  }

  /**
   * Gives the Ask back as the worker stops work on it: `released` when this call released it;
   * `held`, why it may still be held by this worker until its lease runs out; neither when it
   * was no longer this worker's (answered meanwhile, its lease lapsed to another).
   * `lost`: the step already learnt the claim went to someone else; then nothing is sent.
   * Hazard: a coordinator's token may release any claim, so a release sent for an Ask that
   * is no longer this worker's ends someone else's claim. A lease can lapse unseen (a laptop
   * asleep past it, renewals failing as `unavailable`) and the Ask go to another worker; so
   * the claim is renewed first, which only its holder can do (found in review).
   */
  async giveBack(ask: AskView, reason: string, lost = false): Promise<GivenBack> {
    if (lost) return { released: false, held: null, lease_expires_at: null, gone: null };
    const renewal = newIdempotencyKey('renew');
    let leaseEnds = ask.lease_expires_at;
    let gone: string | null = null;
    const ours = await retried(
      async () => (leaseEnds = (await this.renew(ask, renewal)).lease_expires_at),
      (e) => LOST_RACE.has(e.code) && ((gone = e.message), true),
    );
    if (ours === 'gone') return { released: false, held: null, lease_expires_at: null, gone };
    if (ours !== 'done') return { released: false, held: ours, lease_expires_at: leaseEnds, gone };
    const held = await this.releaseHeld(ask, reason);
    return {
      released: held === null,
      held,
      lease_expires_at: held === null ? null : leaseEnds,
      gone: null,
    };
  }

  /**
   * Releases an Ask this worker has just proved it holds. A lost answer (`unavailable`) is
   * tried again twice, with one idempotency key: a release that did land is then answered
   * with its own result. Hazard: without the key, a release that landed, after which another
   * worker claimed the Ask, was sent again and, from a coordinator's token, ended that
   * worker's claim.
   */
  private async releaseHeld(ask: AskView, reason: string): Promise<string | null> {
    const key = newIdempotencyKey('release');
    const r = await retried(
      () => this.release(ask, reason, key),
      (e) =>
        (e.code === 'conflict' && /is not claimed/.test(e.message)) ||
        (e.code === 'forbidden' && /is held by/.test(e.message)),
    );
    return r === 'done' || r === 'gone' ? null : r;
  }

  /**
   * Before the worker exits: a claim it sent whose answer never came (`pending`) may have
   * landed and left an Ask held by this worker, which knows nothing of it, until its lease
   * runs out. Asked once more with the same key and arguments, the daemon answers with the
   * Ask it claimed then (or, if the first never landed, claims one now): renewed to prove it
   * is still this worker's, then released. Answers what became of it; `unknown` when the daemon
   * still cannot be reached (the caller says so, with the lease). Daemons without
   * ask_claim_next (query-then-claim, no key) cannot be asked: nothing to settle there.
   */
  async settle(
    reason: string,
  ): Promise<{ released: AskView } | { unknown: string; lease_seconds: number } | null> {
    const args = this.pending;
    if (!args) return null;
    let ask: AskView | null;
    try {
      ask = ((await this.call('ask_claim_next', args)).ask as AskView | null) ?? null;
    } catch (e) {
      if (isZzError(e) && e.code === 'unavailable')
        return { unknown: e.message, lease_seconds: this.leaseSeconds };
      this.pending = null;
      if (isZzError(e)) return null; // refused: the key's request claimed nothing
      throw e;
    }
    this.pending = null;
    if (!ask) return null;
    try {
      await this.renew(ask);
    } catch (e) {
      // Answered, cancelled or held by someone else by now: not this worker's to give back.
      if (isZzError(e) && LOST_RACE.has(e.code)) return null;
      if (isZzError(e) && e.code === 'unavailable')
        return { unknown: e.message, lease_seconds: this.leaseSeconds };
      throw e;
    }
    const why = await this.releaseHeld(ask, reason);
    return why === null ? { released: ask } : { unknown: why, lease_seconds: this.leaseSeconds };
  }

  /**
   * Renews the lease every third of its length while a step runs. A renewal that fails
   * because someone else now holds the Ask (our lease lapsed) aborts the step; a transient
   * failure is tried again at the next tick.
   */
  keep(
    ask: AskView,
    onLost: (why: Error) => void,
    onRenewed?: (renewed: AskView) => void,
  ): { stop(): void } {
    let timer: NodeJS.Timeout | null = null;
    let stopped = false;
    const tick = async () => {
      try {
        onRenewed?.(await this.renew(ask));
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

/** The daemon's `lane_closed`, checked: it is the daemon's answer, but shown to a person. */
function closure(v: unknown): LaneClosure | null {
  if (!v || typeof v !== 'object') return null;
  const { by, at, reason } = v as Record<string, unknown>;
  if (typeof by !== 'string' || typeof at !== 'string') return null;
  return { by, at, reason: typeof reason === 'string' ? reason : '' };
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

  /**
   * Resolves when the Lane has new events, after waitMs, or when the signal aborts, with the
   * Asks the new events answered or cancelled (none when aborted).
   */
  async wait(waitMs: number, signal?: AbortSignal): Promise<string[]> {
    if (signal?.aborted) return [];
    const poll = this.call('lane_events', {
      lane_id: this.laneId,
      wait_ms: waitMs,
      limit: 5000,
      ...(this.cursor ? { cursor: this.cursor } : {}),
    }).then((r) => {
      this.cursor = r.next_cursor as string;
      return closedAsks((r.events as LaneEvent[] | undefined) ?? []);
    });
    if (!signal) return poll;
    let onAbort = () => {};
    // Resolves with nothing (a listener given `resolve` itself would resolve with the Event).
    const aborted = new Promise<null>((resolve) => {
      onAbort = () => resolve(null);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    // An aborted wait leaves its request to finish on its own; the worker is stopping anyway.
    poll.catch(() => {});
    try {
      return (await Promise.race([poll, aborted])) ?? [];
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }
}

interface LaneEvent {
  op: string;
  ask_id: string | null;
  rejected?: unknown;
}

/** Asks answered or cancelled by these events (an op a sync merge refused did neither). */
function closedAsks(events: LaneEvent[]): string[] {
  return events
    .filter((e) => (e.op === 'ask_answer' || e.op === 'ask_cancel') && e.ask_id && !e.rejected)
    .map((e) => e.ask_id!);
}

/**
 * Runs `call`, trying again twice, half a second then a second later, while the daemon
 * answers `unavailable`. 'done' when it succeeded, 'gone' when it failed as `gone` says (the
 * Ask is no longer this worker's), else the last error's message.
 */
async function retried(
  call: () => Promise<unknown>,
  gone: (e: ZzError) => boolean,
): Promise<'done' | 'gone' | string> {
  for (let attempt = 0; ; attempt++) {
    try {
      await call();
      return 'done';
    } catch (e) {
      if (!isZzError(e)) throw e;
      if (gone(e)) return 'gone';
      if (e.code !== 'unavailable' || attempt >= 2) return e.message;
      await new Promise((r) => setTimeout(r, 500 * 2 ** attempt));
    }
  }
}
