import type { AskDoc } from '../schema/lane.js';
import type { LaneOp } from '../schema/lane-ops.js';
import type { LaneState, RootedRole, RootedRoles } from './lane-state-types.js';

export type { RootedRole, RootedRoles } from './lane-state-types.js';

// Lane roles rooted in an owner. Any member may propose a Lane and so coordinate it (DESIGN §3),
// which is right inside that Lane (claim and answer its coordinator-scope Asks, grant in it) and
// wrong for what reaches the whole repository: landing code on the default branch and writing
// Ladder rungs every agent reads. Those need a role an owner stands behind, now.
//
// Each rooted role records its roots: the owners it rests on, decided when it is conferred.
// - lane_propose by someone who was an owner at the op's time (refs/zz/config as of its
//   recorded time, the guards' rule) roots the roles it names in that owner; in _repo, whose
//   coordinators and maintainers are the owners at `zz init`, each is rooted in themselves
//   (they hold it by being owners, and lose it with that);
// - lane_grant (grant) roots the grantee's role in its maker if they were an owner then, and in
//   the roots of its maker's rooted coordinatorship (inherited); a re-grant adds roots;
// - lane_grant (revoke) unroots the grantee's role, whoever made it (the fold's guard already
//   decided who may revoke).
// A role counts as rooted only while one of its roots is an owner NOW: in the current config of
// the clone judging (the daemon's check and every fold, RoleSource.now). Why now and not at the
// grant's time: op times are claims a hostile replica chooses, so a demoted owner could date a
// grant to themselves back to when they were an owner; judged now, demoting an owner unroots
// every role resting on them (retroactively, on every clone holding the demotion: rungs those
// roles wrote fold as refused) and re-promoting re-roots. Clones holding the same config fold
// alike. An owner's own coordinatorship needs them an owner at the op's time and now. Where the
// fold cannot see refs/zz/config (s.roles null), owner-derived rights are trusted, as everywhere
// in the guards.

export const NOT_ROOTED: RootedRoles = Object.freeze({
  coordinators: Object.freeze([]) as readonly RootedRole[],
  maintainers: Object.freeze([]) as readonly RootedRole[],
});

/** Whether `actor` was an owner at `time`, by the fold's roles (unknown roles: trusted). */
export function ownerAt(s: LaneState, actor: string, time: string): boolean {
  return s.roles === null || (s.roles.at(time)?.owners.includes(actor) ?? false);
}

/** Whether `actor` is an owner now, by the fold's roles (unknown roles: trusted). */
export function ownerNow(s: LaneState, actor: string): boolean {
  return s.roles === null || (s.roles.now()?.owners.includes(actor) ?? false);
}

/** Whether `actor` holds one of `roles` by a root that `isOwner` says is an owner now. */
export function rootedNow(
  roles: readonly RootedRole[],
  actor: string,
  isOwner: (root: string) => boolean,
): boolean {
  return roles.some((r) => r.actor === actor && r.roots.some(isOwner));
}

/** What rootedNowOf reads of a Lane's state. */
export type RootedState = Pick<LaneState, 'rooted' | 'roles'>;

/** The actors holding a role of `field` rooted in an owner now (what lane views list). */
export function rootedNowOf(s: RootedState, field: keyof RootedRoles): string[] {
  const owners = s.roles === null ? null : (s.roles.now()?.owners ?? []);
  return s.rooted[field]
    .filter((r) => owners === null || r.roots.some((x) => owners.includes(x)))
    .map((r) => r.actor);
}

/** The rooted roles a rooted lane_propose of `laneId` with roots `roots` confers on `names`. */
export function proposedRoles(
  laneId: string,
  names: readonly string[],
  roots: readonly string[],
): RootedRole[] {
  return names.map((actor) => ({ actor, roots: laneId === '_repo' ? [actor] : roots }));
}

/**
 * The roots of a propose or grant by `actor` at `time`: themselves if an owner then, and the
 * roots of their rooted coordinatorship at this point of the fold (a propose has none yet).
 */
function rootsOf(s: LaneState, actor: string, time: string): string[] {
  const roots = ownerAt(s, actor, time) ? [actor] : [];
  for (const r of s.rooted.coordinators) {
    if (r.actor !== actor) continue;
    for (const root of r.roots) if (!roots.includes(root)) roots.push(root);
  }
  return roots;
}

/**
 * What an honoured lane_propose or lane_grant does to the rooted roles (called by the fold after
 * the op's guards, before it changes the Lane). The roots of one that roots someone are noted in
 * s.roots: the Ladder's fold reads Lane timelines by op (ladder-roles.ts).
 */
export function applyRooted(s: LaneState, op: LaneOp): void {
  if (op.op === 'lane_propose') {
    const roots = ownerAt(s, op.actor, op.time) ? [op.actor] : [];
    if (roots.length === 0) {
      s.rooted = NOT_ROOTED;
      return;
    }
    s.roots.set(op.id, roots);
    const id = op.args.lane_id;
    s.rooted = {
      coordinators: proposedRoles(id, op.args.coordinators ?? [op.actor], roots),
      maintainers: proposedRoles(id, op.args.maintainers ?? [], roots),
    };
    return;
  }
  if (op.op !== 'lane_grant') return;
  const field = op.args.role === 'maintainer' ? 'maintainers' : 'coordinators';
  const who = op.args.grantee;
  const had = s.rooted[field];
  if (op.args.revoke) {
    if (had.some((r) => r.actor === who)) {
      s.rooted = { ...s.rooted, [field]: had.filter((r) => r.actor !== who) };
    }
    return;
  }
  const roots = rootsOf(s, op.actor, op.time);
  if (roots.length === 0) return;
  s.roots.set(op.id, roots);
  const prior = had.find((r) => r.actor === who)?.roots ?? [];
  const merged = [...prior, ...roots.filter((x) => !prior.includes(x))];
  s.rooted = {
    ...s.rooted,
    [field]: [...had.filter((r) => r.actor !== who), { actor: who, roots: merged }],
  };
}

/**
 * Notes an honoured grant of a changeset_review by a maintainer whose role is rooted (or an
 * owner, then and now) at that point: only such a review lets a changeset land by id
 * (changesets.ts).
 */
export function noteRootedReview(
  s: LaneState,
  ask: AskDoc,
  op: Extract<LaneOp, { op: 'ask_answer' }>,
): void {
  if (ask.kind !== 'changeset_review' || op.args.outcome !== 'grant') return;
  const owner = ownerAt(s, op.actor, op.time) && ownerNow(s, op.actor);
  if (owner || rootedNow(s.rooted.maintainers, op.actor, (x) => ownerNow(s, x))) {
    s.rootedReviews.set(ask.ask_id, true);
  }
}

/** Whether `actor` holds a rooted coordinatorship of the Lane at this point of its fold. */
export function rootedCoordinatorAt(s: LaneState, actor: string, time: string): boolean {
  const lane = s.lane;
  if (!lane) return false;
  const then = ownerAt(s, actor, time);
  const coordinates = lane.coordinators.includes(actor) || (lane.lane_id === '_repo' && then);
  if (!coordinates) return false;
  if (then && ownerNow(s, actor)) return true;
  return rootedNow(s.rooted.coordinators, actor, (x) => ownerNow(s, x));
}
