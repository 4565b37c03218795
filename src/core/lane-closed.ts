import { ZzError } from '../errors.js';
import type { AskDoc, LaneDoc } from '../schema/lane.js';
import { SERVER_ACTOR } from './follow-ups.js';
import { holdsLiveClaim, leaseExpired } from './views.js';

// Closing a Lane stops new work, not work in hand (DESIGN is silent; decided here, README
// "Closing a Lane"). A person who closes a Lane while an agent is mid-task does not want that
// work thrown away behind the agent's back, and can stop it outright with ask_cancel or, as
// coordinator, ask_release. So on a closed Lane:
// - no Ask is posted, and no claim is handed out: ask_post and ask_claim of an Ask the caller
//   does not hold refuse (conflict, `lane_closed` in details); ask_claim_next finds nothing
//   and answers who closed the Lane (`lane_closed`: zz work stops on it rather than wait);
// - a claim whose lease still runs stays its holder's: re-claiming renews it (a long task keeps
//   going), ask_answer answers it and ask_release gives it back;
// - a lease that ran out is not taken again, not even by its last holder: the lease is the
//   claim, and a lapsed one is a new claim. Renewing and answering then refuse and say so;
// - the workflow's follow-ups of work in hand (what the server posts by itself with an origin:
//   the review of a finished changeset, its submission, the rework a denied review sends back,
//   the resolve_conflict of a landing) are claimed as on an open Lane, by ask_claim and
//   ask_claim_next, and listed by ask_query_claimable. Refused, they stranded finished work:
//   the answer was taken, its changeset could be neither reviewed nor landed, and nothing
//   reopens a Lane. To drop such work, cancel its Ask.
// The guarded fold (lane-guards.ts) holds ops from other replicas to the same rule, in fold
// order: a claim, a post or an answer that lands after the close and is not the live holder's
// (nor of a follow-up of work in hand) is refused (`lane_closed`, a lost claim's maker told as
// for claim_lost) on every replica. One published before the close stands: that was work in
// hand. Nothing reopens a Lane; were a reopen op added, the guard reads the Lane as it stands
// at each op, so it would just work. Not held to it: ladder_write_rung ops from other
// replicas (the Ladder's fold has no guards; ladder-state.ts).

/** The refusal of a closed Lane: who closed it and why, then `detail` (what to do instead). */
function laneClosed(lane: LaneDoc, detail: string): ZzError {
  const c = lane.closed!;
  const why = c.reason ? ` (${c.reason})` : '';
  return new ZzError(
    'conflict',
    `lane ${lane.lane_id} was closed by ${c.by} at ${c.at}${why}: ${detail}`,
    { closed: c, lane_closed: true },
  );
}

/**
 * An Ask the workflow posted to finish work already in hand (see above): claimable on a closed
 * Lane. Only the server posts with SERVER_ACTOR; the fold re-derives its follow-ups and refuses
 * one it did not derive (lane-guards.ts, follow_up_not_derived).
 */
export function finishesWorkInHand(ask: AskDoc): boolean {
  return ask.posted_by === SERVER_ACTOR && ask.origin !== null;
}

/** A closed Lane takes no new Asks. */
export function assertOpen(
  lane: LaneDoc,
  detail = 'it takes no new Asks; post in an open Lane (lane_list) or propose one (lane_propose)',
): void {
  if (lane.closed) throw laneClosed(lane, detail);
}

/**
 * A closed Lane hands out no claim but renews a live one (see above): refuses `actor` unless it
 * holds `ask` with its lease running at `now`. An answer to (or rungs citing) an Ask another
 * holds live is left to assertLiveClaim (it names the holder).
 */
export function assertClaimOnClosed(
  lane: LaneDoc,
  ask: AskDoc,
  actor: string,
  now: Date,
  what: 'claim' | 'answer' | 'write rungs for',
): void {
  if (!lane.closed || holdsLiveClaim(ask, actor, now) || finishesWorkInHand(ask)) return;
  if (ask.state === 'claimed' && ask.holder === actor) {
    throw laneClosed(
      lane,
      `your lease on ask ${ask.ask_id} ran out at ${ask.lease_expires_at} and a closed Lane hands out no new claims, so you can no longer ${what} it; stop work on it`,
    );
  }
  if (what !== 'claim' && ask.state === 'claimed' && !leaseExpired(ask, now)) return;
  const cannot = { claim: 'be claimed', answer: 'be answered', 'write rungs for': 'be cited' };
  throw laneClosed(
    lane,
    `it hands out no new claims, so ask ${ask.ask_id} cannot ${cannot[what]}; take work from an open Lane (lane_list, ask_list) instead`,
  );
}
