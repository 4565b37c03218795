import { parseLaneOp } from '../../schema/lane-op-parse.js';
import type { OpRecord } from '../../store/index.js';
import type { RoleSource } from '../lane-state.js';
import { proposedRoles, type RootedRole } from '../rooted-roles.js';
import type { CoordinatorsAt, LadderRoles } from './ladder-guards.js';

// The roles the Ladder's fold judges ops by (ladder-guards.ts): the repository's owners over
// time (role-timeline.ts) and, for each Lane a write cites (and _repo, whose coordinators may
// build), its coordinators over time. The rule is role-timeline.ts's: an op is judged against
// the coordinator changes of the Lane that its fold honoured (a refused lane_grant counts for
// nothing) and whose recorded time is at or before the op's, applied in the Lane's
// publication order; an op recorded before the Lane's first such change is judged against the
// Lane as proposed. Same Lane and config histories, same answers, on every replica. Each change
// carries whether it was rooted in an owner (rooted-roles.ts), as the Lane's fold decided it.

/** One coordinator change a Lane's fold honoured. */
interface CoordinatorChange {
  time: number;
  /** lane_propose: the Lane's first coordinators, and their roots (empty: not rooted). */
  set?: readonly RootedRole[];
  grant?: string;
  revoke?: string;
  /**
   * The owners the grant rooted its grantee in (rooted-roles.ts); empty when it rooted nobody
   * (made by someone neither an owner nor a rooted coordinator then).
   */
  roots: readonly string[];
}

/** A Lane's honoured coordinator changes, from its log in fold order and its fold's refusals. */
export type CoordinatorTimeline = readonly CoordinatorChange[];

/** The Lanes a Ladder's ops cite (and _repo, whose coordinators may build): sorted. */
export function citedLanes(ops: Iterable<OpRecord>): string[] {
  const ids = new Set<string>(['_repo']);
  for (const op of ops) {
    const id = op.op === 'ladder_write_rung' ? op.args.lane_id : undefined;
    if (typeof id === 'string') ids.add(id);
  }
  return [...ids].sort();
}

/**
 * `rejected`: the ops the Lane's fold refused; `roots`: the roots of the honoured proposes and
 * grants that rooted someone (LaneState.roots).
 */
export function coordinatorTimeline(
  log: Iterable<OpRecord>,
  rejected: Iterable<{ op_id: string }>,
  roots: { get(opId: string): readonly string[] | undefined },
): CoordinatorTimeline {
  const refused = new Set(Array.from(rejected, (r) => r.op_id));
  const out: CoordinatorChange[] = [];
  for (const raw of log) {
    if ((raw.op !== 'lane_propose' && raw.op !== 'lane_grant') || refused.has(raw.id)) continue;
    const p = parseLaneOp(raw);
    if (!p.ok) continue;
    const op = p.op;
    const time = Date.parse(op.time);
    const rooted = roots.get(op.id) ?? [];
    if (op.op === 'lane_propose') {
      const names = op.args.coordinators ?? [op.actor];
      const set = proposedRoles(op.args.lane_id, names, rooted);
      out.push({
        time,
        set: rooted.length > 0 ? set : names.map((actor) => ({ actor, roots: [] })),
        roots: rooted,
      });
    } else if (op.op === 'lane_grant' && op.args.role === 'coordinator') {
      out.push(
        op.args.revoke
          ? { time, revoke: op.args.grantee, roots: [] }
          : { time, grant: op.args.grantee, roots: rooted },
      );
    }
  }
  return out;
}

function coordinatorsAt(changes: CoordinatorTimeline, time: string): CoordinatorsAt | null {
  const t = Date.parse(time);
  let now: { coordinators: string[]; rooted: RootedRole[] } | null = null;
  let first: CoordinatorsAt | null = null;
  const asSet = (set: readonly RootedRole[]) => ({
    coordinators: set.map((r) => r.actor),
    rooted: set.filter((r) => r.roots.length > 0),
  });
  for (const c of changes) {
    if (c.set && first === null) first = asSet(c.set);
    if (!(c.time <= t)) continue;
    if (c.set) now ??= asSet(c.set);
    else if (now && c.grant !== undefined) {
      const grant = c.grant;
      if (!now.coordinators.includes(grant)) now.coordinators.push(grant);
      if (c.roots.length > 0) {
        // A re-grant adds roots (rooted-roles.ts applyRooted).
        const prior = now.rooted.find((r) => r.actor === grant)?.roots ?? [];
        const roots = [...prior, ...c.roots.filter((x) => !prior.includes(x))];
        now.rooted = [...now.rooted.filter((r) => r.actor !== grant), { actor: grant, roots }];
      }
    } else if (now && c.revoke !== undefined) {
      now.coordinators = now.coordinators.filter((a) => a !== c.revoke);
      now.rooted = now.rooted.filter((r) => r.actor !== c.revoke);
    }
  }
  return now ?? first;
}

/**
 * `lanes`: the timeline of every Lane the fold may ask about, null for one that does not
 * exist. A Lane not in `lanes` is answered undefined (not read: trusted).
 */
export function ladderRoles(
  roles: RoleSource,
  lanes: ReadonlyMap<string, CoordinatorTimeline | null>,
): LadderRoles {
  return {
    at: (time) => roles.at(time),
    now: () => roles.now(),
    coordinatorsAt(laneId, time) {
      const changes = lanes.get(laneId);
      if (changes === undefined) return undefined;
      return changes === null ? null : coordinatorsAt(changes, time);
    },
  };
}
