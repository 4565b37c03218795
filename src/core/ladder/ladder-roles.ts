import { parseLaneOp } from '../../schema/lane-op-parse.js';
import type { OpRecord } from '../../store/index.js';
import type { RoleSource } from '../lane-state.js';
import type { LadderRoles } from './ladder-guards.js';

// The roles the Ladder's fold judges ops by (ladder-guards.ts): the repository's owners over
// time (role-timeline.ts) and, for each Lane a write cites (and _repo, whose coordinators may
// build), its coordinators over time. The rule is role-timeline.ts's: an op is judged against
// the coordinator changes of the Lane that its fold honoured (a refused lane_grant counts for
// nothing) and whose recorded time is at or before the op's, applied in the Lane's
// publication order; an op recorded before the Lane's first such change is judged against the
// Lane as proposed. Same Lane and config histories, same answers, on every replica.

/** One coordinator change a Lane's fold honoured. */
interface CoordinatorChange {
  time: number;
  /** lane_propose: the Lane's first coordinators. */
  set?: readonly string[];
  grant?: string;
  revoke?: string;
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

export function coordinatorTimeline(
  log: Iterable<OpRecord>,
  rejected: Iterable<{ op_id: string }>,
): CoordinatorTimeline {
  const refused = new Set(Array.from(rejected, (r) => r.op_id));
  const out: CoordinatorChange[] = [];
  for (const raw of log) {
    if ((raw.op !== 'lane_propose' && raw.op !== 'lane_grant') || refused.has(raw.id)) continue;
    const p = parseLaneOp(raw);
    if (!p.ok) continue;
    const op = p.op;
    const time = Date.parse(op.time);
    if (op.op === 'lane_propose') out.push({ time, set: op.args.coordinators ?? [op.actor] });
    else if (op.op === 'lane_grant' && op.args.role === 'coordinator') {
      out.push(
        op.args.revoke ? { time, revoke: op.args.grantee } : { time, grant: op.args.grantee },
      );
    }
  }
  return out;
}

function coordinatorsAt(changes: CoordinatorTimeline, time: string): readonly string[] | null {
  const t = Date.parse(time);
  let list: string[] | null = null;
  let first: readonly string[] | null = null;
  for (const c of changes) {
    if (c.set && first === null) first = c.set;
    if (!(c.time <= t)) continue;
    if (c.set) list ??= [...c.set];
    else if (list && c.grant !== undefined && !list.includes(c.grant)) list.push(c.grant);
    else if (list && c.revoke !== undefined) list = list.filter((a) => a !== c.revoke);
  }
  return list ?? first;
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
    coordinatorsAt(laneId, time) {
      const changes = lanes.get(laneId);
      if (changes === undefined) return undefined;
      return changes === null ? null : coordinatorsAt(changes, time);
    },
  };
}
