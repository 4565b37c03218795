import { CONFIG_REF } from './roles-at.js';
import type { Invalid, ParsedCommit } from './validate.js';

// Checks on what a remote holds that need this machine's memory of it (the value last confirmed
// there) or its clock, beside validate.ts's checks of the commits alone. Anyone who can push to
// the remote can write any commit: these are what keep a push from rewriting what was published
// or from dating an op into the future to win a guard judged by time (a lapsed lease).

/**
 * How far past this machine's clock an arriving op may be dated. Past it the ref is
 * quarantined: an op dated in 2099 would otherwise lapse every lease before it (lane-guards.ts
 * judges a claim at its recorded time). An honest peer's clock that runs this far ahead is
 * refused only until ours catches up: quarantine is judged again every round.
 */
export const MAX_CLOCK_SKEW_MS = 10 * 60 * 1000;

/**
 * Whether the remote's tip still descends from the value last confirmed there (`confirmed`, the
 * one this machine synced with). A push that replaced it (a rival history, a ref deleted and
 * made again from an older copy) would reorder ops every replica already folded in publication
 * order — a rival lane_propose would take the Lane, a rival claim a live lease — were ours
 * replayed after it. The engine merges such a tip with ours as the first parent when ours holds
 * `confirmed`, and refuses it with this reason when it does not. `fromTheirs` is every commit
 * the tip reaches. A tip our own ref reaches (a rewind) never comes here: ours is pushed back.
 */
export function rewrittenBehind(
  confirmed: string | null,
  theirs: string,
  fromTheirs: ReadonlySet<string>,
): Invalid | null {
  if (confirmed === null || fromTheirs.has(confirmed)) return null;
  return {
    commit: theirs,
    reason: `remote rewritten (not a descendant of what was synced at ${confirmed})`,
  };
}

/**
 * Ops whose recorded time a guard reads to grant something: a claim is judged at its time (a
 * later one lapses every lease before it, and dates its own lease's end), and the roles and a
 * Lane's coordinators over time come from refs/zz/config's ops and lane_propose/lane_grant
 * (role-timeline.ts, ladder-roles.ts). Any other op's time is only shown (posted_at, the order
 * of an events page), and the roles at a future time are the newest ones, which grant nothing
 * more: judging those too froze a Lane for everyone while one machine's clock ran ahead (its
 * every op quarantined on import), though dating them ahead wins nothing.
 */
export function timeJudged(ref: string, op: string): boolean {
  return ref === CONFIG_REF || op === 'ask_claim' || op === 'lane_propose' || op === 'lane_grant';
}

/**
 * The first op of `incoming` (a time-judged one, see timeJudged) dated past `nowMs` plus
 * MAX_CLOCK_SKEW_MS. Ops dated before their parents are let through: a commit's date is as
 * much the writer's word as an op's, and an op dated early only weakens itself (its claim
 * lapses sooner, a lease is judged lapsed only at or after its end).
 *
 * Judged on import (such a tip is quarantined) and on push (held back: every other machine
 * would quarantine it). No rule can tell this machine that its own clock runs ahead — its ops
 * are dated by it, and the ops of others may be old — so a clock ahead is caught on push only
 * once it has been set right (DESIGN §7).
 */
export function datedAhead(
  ref: string,
  history: readonly ParsedCommit[],
  incoming: ReadonlySet<string>,
  nowMs: number,
): Invalid | null {
  const limit = nowMs + MAX_CLOCK_SKEW_MS;
  for (const c of history) {
    if (!incoming.has(c.revision)) continue;
    for (const op of c.ops) {
      if (timeJudged(ref, op.op) && Date.parse(op.time) > limit) {
        return {
          commit: c.revision,
          reason: `op ${op.id} (${op.op}) is dated ${op.time.slice(0, 40)}, past this machine's clock by more than ${MAX_CLOCK_SKEW_MS / 60_000} min`,
        };
      }
    }
  }
  return null;
}
