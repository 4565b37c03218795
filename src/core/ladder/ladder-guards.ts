import { ZzError } from '../../errors.js';
import type { ConfigDoc } from '../../schema/config.js';
import type { LadderOp } from '../../schema/ladder-ops.js';
import { LIMITS } from '../../schema/limits.js';
import type { Rung } from '../../schema/rung.js';
import { rootedNow, type RootedRole } from '../rooted-roles.js';

// The guarded apply of refs/zz/ladder (DESIGN §7): ops from anywhere (this process, a merge of
// another replica's work, a fast-forward to it) are re-checked before they change a rung, with
// what the local tools refuse up front (ladder.ts ladderWriteRung, build.ts ladderBuild), so
// locally written ops always pass:
// - a ladder_write_rung needs a coordinator of the cited Lane (an owner, for Lane _repo) whose
//   role is rooted in an owner (rooted-roles.ts): a member who proposed a Lane writes no rung;
// - a ladder_build, once the repository has a config, an owner or a coordinator of _repo;
// - at most LIMITS.rungsPerWrite rungs per write, LIMITS.ladderRungs per build;
// - the Ladder holds at most LIMITS.ladderRungs rungs.
// Roles are judged as they stood at the op's recorded time (LadderRoles, ladder-roles.ts): the
// Ladder shares no log with refs/zz/config or the Lanes, so time is the common order, with the
// hazards role-timeline.ts names. A refused op changes no rung and stays in the log, listed in
// `rejected` alike on every replica that folds the same Ladder, Lanes and config. Not checked:
// that the writer held a live claim on the cited Ask (the local tool demands it; the Ask's
// lease lives in the Lane's log) and anything a build decided (its rungs are only bounded).

/** A Lane's coordinators at a time, and those of them whose role is rooted in an owner. */
export interface CoordinatorsAt {
  coordinators: readonly string[];
  /** The coordinators by a rooted role, with its roots (rooted-roles.ts). */
  rooted: readonly RootedRole[];
}

/**
 * Who held which role when, for the Ladder's fold. Pure: the same refs give the same answers
 * on every replica.
 */
export interface LadderRoles {
  /** refs/zz/config as of `time` (the RoleSource rule), null before any config. */
  at(time: string): ConfigDoc | null;
  /** refs/zz/config now (RoleSource.now): a rooted role counts while a root is an owner now. */
  now(): ConfigDoc | null;
  /**
   * A Lane's coordinators as of `time`; null when that Lane did not exist (or is not held
   * here); undefined when this source never read the Lane (a fold in progress before the
   * Entity re-reads its inputs: trusted, as a fold without roles trusts every op).
   */
  coordinatorsAt(laneId: string, time: string): CoordinatorsAt | null | undefined;
}

/** A Ladder op the guarded fold refused (or, for rung_invalid, the rungs of it it skipped). */
export interface LadderRejection {
  op_id: string;
  op: LadderOp['op'];
  actor: string;
  reason: 'scope_denied' | 'rungs_per_op' | 'ladder_full' | 'rung_invalid';
  /** For scope_denied: the role the op needed and its actor did not hold at its time. */
  needed?: 'coordinator' | 'owner_or_repo_coordinator';
  /** For scope_denied of a write: the Lane it cited. */
  lane_id?: string;
  /** For rung_invalid: the first rung skipped, and how many of the op's rungs were. */
  path?: string;
  count?: number;
}

export type LadderRefusal = Omit<LadderRejection, 'op_id' | 'op' | 'actor'>;

/**
 * Whether `actor` coordinated `laneId` at `time` by a role rooted in an owner (access.ts
 * isRootedCoordinator, as it stood): an owner then and now who coordinated it, or a coordinator
 * by a chain of grants from an owner who is an owner now (op times are claims: a grant dated
 * back by a demoted owner must not count, rooted-roles.ts). A Lane a member proposed lets its
 * proposer write no rung.
 */
export function coordinatedAt(
  roles: LadderRoles,
  laneId: string,
  actor: string,
  time: string,
): boolean {
  const at = roles.coordinatorsAt(laneId, time);
  if (at === undefined) return true;
  const owners = roles.now()?.owners ?? [];
  const owner = (roles.at(time)?.owners.includes(actor) ?? false) && owners.includes(actor);
  if (laneId === '_repo' && owner) return true;
  if (!at?.coordinators.includes(actor)) return false;
  return owner || rootedNow(at.rooted, actor, (x) => owners.includes(x));
}

/** Why `op` may not apply to a Ladder of `rungs`, judged by `roles` (null: unknown, trusted). */
export function ladderRefusal(
  rungs: ReadonlyMap<string, Rung>,
  roles: LadderRoles | null,
  op: LadderOp,
): LadderRefusal | null {
  switch (op.op) {
    case 'ladder_write_rung': {
      const lane = op.args.lane_id;
      if (roles && !coordinatedAt(roles, lane, op.actor, op.time)) {
        return { reason: 'scope_denied', needed: 'coordinator', lane_id: lane };
      }
      if (op.args.rungs.length > LIMITS.rungsPerWrite) return { reason: 'rungs_per_op' };
      return sizeAfter(rungs, [], op.args.rungs) > LIMITS.ladderRungs
        ? { reason: 'ladder_full' }
        : null;
    }
    case 'ladder_build': {
      // A build made before `zz init` (no config at its time) needed no role.
      if (roles && roles.at(op.time) !== null) {
        // An owner then and now: a build dated back by a demoted owner does not count.
        const owner =
          roles.at(op.time)!.owners.includes(op.actor) &&
          (roles.now()?.owners.includes(op.actor) ?? false);
        if (!owner && !coordinatedAt(roles, '_repo', op.actor, op.time)) {
          return { reason: 'scope_denied', needed: 'owner_or_repo_coordinator' };
        }
      }
      const { upsert, remove } = op.args;
      if (upsert.length > LIMITS.ladderRungs || remove.length > LIMITS.ladderRungs) {
        return { reason: 'rungs_per_op' };
      }
      return sizeAfter(rungs, remove, upsert) > LIMITS.ladderRungs
        ? { reason: 'ladder_full' }
        : null;
    }
  }
}

/**
 * How many rungs the Ladder would hold after removing `remove` and writing `upsert` (a rung
 * the fold then skips as invalid still counts: the bound needs no per-rung check).
 */
export function sizeAfter(
  rungs: ReadonlyMap<string, unknown>,
  remove: readonly string[],
  upsert: ReadonlyArray<{ path: string }>,
): number {
  const gone = new Set<string>();
  for (const p of remove) if (rungs.has(p)) gone.add(p);
  const added = new Set<string>();
  for (const { path } of upsert) if (!rungs.has(path) || gone.has(path)) added.add(path);
  return rungs.size - gone.size + added.size;
}

/**
 * What the local tools say when the fold would refuse their op: the same rule, checked up
 * front against the state the op applies to, so a locally written op always folds.
 */
export function refusalError(r: LadderRefusal, what: string): ZzError {
  switch (r.reason) {
    case 'scope_denied':
      return new ZzError(
        'forbidden',
        r.needed === 'coordinator'
          ? `only the coordinators of lane ${r.lane_id} may ${what}`
          : `only an owner or a coordinator of lane _repo may ${what}`,
        { scope: r.needed },
      );
    case 'rungs_per_op':
      return new ZzError(
        'payload_too_large',
        `${what}: more rungs in one op than the Ladder takes (${LIMITS.rungsPerWrite} per write, ${LIMITS.ladderRungs} per build)`,
        { limit: 'rungs_per_op' },
      );
    case 'ladder_full':
      return new ZzError(
        'payload_too_large',
        `${what}: the Ladder would hold more than ${LIMITS.ladderRungs} rungs`,
        { limit: 'ladder_rungs', max: LIMITS.ladderRungs },
      );
    case 'rung_invalid':
      return new ZzError('invalid_argument', `${what}: rung ${r.path ?? '?'} is not valid`, {
        field: 'rungs',
      });
  }
}
