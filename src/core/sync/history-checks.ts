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
 * The first arriving op dated past `nowMs` plus MAX_CLOCK_SKEW_MS. Ops dated before their
 * parents are let through: a commit's date is as much the writer's word as an op's, and an op
 * dated early only weakens itself (its claim lapses sooner, a lease is judged lapsed only at or
 * after its end).
 */
export function datedAhead(
  history: readonly ParsedCommit[],
  incoming: ReadonlySet<string>,
  nowMs: number,
): Invalid | null {
  const limit = nowMs + MAX_CLOCK_SKEW_MS;
  for (const c of history) {
    if (!incoming.has(c.revision)) continue;
    for (const op of c.ops) {
      if (Date.parse(op.time) > limit) {
        return {
          commit: c.revision,
          reason: `op ${op.id} is dated ${op.time.slice(0, 40)}, past this machine's clock by more than ${MAX_CLOCK_SKEW_MS / 60_000} min`,
        };
      }
    }
  }
  return null;
}
