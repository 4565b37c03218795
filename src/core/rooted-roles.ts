import type { AskDoc } from '../schema/lane.js';
import type { LaneOp } from '../schema/lane-ops.js';
import type { LaneState, RootedRoles } from './lane-state-types.js';

export type { RootedRoles } from './lane-state-types.js';

// Lane roles rooted in an owner. Any member may propose a Lane and so coordinate it (DESIGN §3),
// which is right inside that Lane (claim and answer its coordinator-scope Asks, grant in it) and
// wrong for what reaches the whole repository: landing code on the default branch and writing
// Ladder rungs every agent reads. Those need a role an owner stands behind. A coordinator or
// maintainer role is rooted when the op that conferred it was made by someone who, at that
// point of the Lane's fold, was an owner (refs/zz/config as of the op's recorded time, the
// guards' rule) or a rooted coordinator of the Lane:
// - lane_propose by an owner roots the coordinators and maintainers it names;
// - lane_grant (grant) by an owner or a rooted coordinator roots the grantee's role;
// - lane_grant (revoke) unroots the grantee's role, whoever made it (the fold's guard already
//   decided who may revoke).
// Decided once, when the role is conferred: a grant by a coordinator who is rooted later is not
// rooted by that (an owner grants again), and an owner who is later demoted leaves the roles
// they conferred rooted (revoke them). An owner's own roles are rooted while they are an owner:
// access.ts asks the config for that. Where the fold cannot see refs/zz/config (s.roles null),
// owner-derived rights are trusted, as everywhere in the guards.

export const NOT_ROOTED: RootedRoles = Object.freeze({
  coordinators: Object.freeze([]) as readonly string[],
  maintainers: Object.freeze([]) as readonly string[],
});

/** Whether `actor` was an owner at `time`, by the fold's roles (unknown roles: trusted). */
export function ownerAt(s: LaneState, actor: string, time: string): boolean {
  return s.roles === null || (s.roles.at(time)?.owners.includes(actor) ?? false);
}

/**
 * What an honoured lane_propose or lane_grant does to the rooted roles (called by the fold after
 * the op's guards, before it changes the Lane). A propose or grant that roots nobody is noted in
 * s.unrooted: the Ladder's fold reads Lane timelines by op (ladder-roles.ts).
 */
export function applyRooted(s: LaneState, op: LaneOp): void {
  if (op.op === 'lane_propose') {
    if (ownerAt(s, op.actor, op.time)) {
      s.rooted = {
        coordinators: op.args.coordinators ?? [op.actor],
        maintainers: op.args.maintainers ?? [],
      };
    } else {
      s.rooted = NOT_ROOTED;
      s.unrooted.set(op.id, true);
    }
    return;
  }
  if (op.op !== 'lane_grant') return;
  const field = op.args.role === 'maintainer' ? 'maintainers' : 'coordinators';
  const who = op.args.grantee;
  const had = s.rooted[field];
  if (op.args.revoke) {
    if (had.includes(who)) s.rooted = { ...s.rooted, [field]: had.filter((x) => x !== who) };
    return;
  }
  if (!ownerAt(s, op.actor, op.time) && !s.rooted.coordinators.includes(op.actor)) {
    s.unrooted.set(op.id, true);
    return;
  }
  if (!had.includes(who)) s.rooted = { ...s.rooted, [field]: [...had, who] };
}

/**
 * Notes an honoured grant of a changeset_review by a maintainer whose role is rooted (or an
 * owner) at that point: only such a review lets a changeset land by id (changesets.ts).
 */
export function noteRootedReview(
  s: LaneState,
  ask: AskDoc,
  op: Extract<LaneOp, { op: 'ask_answer' }>,
): void {
  if (ask.kind !== 'changeset_review' || op.args.outcome !== 'grant') return;
  if (ownerAt(s, op.actor, op.time) || s.rooted.maintainers.includes(op.actor)) {
    s.rootedReviews.set(ask.ask_id, true);
  }
}

/** Whether `actor` holds a rooted coordinatorship of the Lane at this point of its fold. */
export function rootedCoordinatorAt(s: LaneState, actor: string, time: string): boolean {
  const lane = s.lane;
  if (!lane) return false;
  const coordinates =
    lane.coordinators.includes(actor) || (lane.lane_id === '_repo' && ownerAt(s, actor, time));
  return coordinates && (ownerAt(s, actor, time) || s.rooted.coordinators.includes(actor));
}
