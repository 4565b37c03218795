import type { LadderOp } from '../../schema/ladder-ops.js';
import { Entity, type LoggedOp, type OpLog, type Snapshot } from '../../store/index.js';
import { LADDER_REF, type ZzRepo } from '../zz-repo.js';
import type { LadderRoles } from './ladder-guards.js';
import { citedLanes, ladderRoles } from './ladder-roles.js';
import { ladderCodec, LadderState } from './ladder-state.js';
import { readRoleInputs, roleKeyOf, type RoleInputs } from './role-key.js';

// refs/zz/ladder's Entity. Its guarded fold (ladder-guards.ts) also depends on refs/zz/config
// (owners over time) and on the Lanes its writes cite (their coordinators over time), so a
// snapshot folded against older roles is folded again once one of those moved, as a Lane's
// is when the config moved (zz-repo.ts LaneEntity). The first read of a process folds twice:
// which Lanes count is known only from the log.
//
// Hazards: every read checks the config and each cited Lane for a move (one ref read each); a
// Lane that cannot be read counts as absent here (its writes are refused) and may not be on a
// replica that reads it, until it is repaired.

interface Inputs {
  /** The roles the state was folded with, and what they were built from. */
  roles: LadderRoles;
  /** The config's roles (by identity) and each cited Lane's coordinator timeline (as JSON). */
  from: readonly unknown[];
}

const citedOf = new WeakMap<OpLog<LoggedOp>, string[]>();
/** What each snapshot read() returned was folded from (see roleKeyOfFold). */
const inputsOfSnap = new WeakMap<object, RoleInputs>();

/**
 * The role key (role-key.ts) of a snapshot LadderEntity.read() returned: the config revision,
 * and the cited Lanes' heads and coordinator timelines, its fold used. Null for a snapshot not
 * folded against current roles (three folds that never settled: a key read for it could be
 * newer than its rungs, so none is given and whoever keeps its rungs folds again).
 */
export function roleKeyOfFold(snap: Snapshot<LadderState, LadderOp>): string | null {
  const inputs = inputsOfSnap.get(snap);
  return inputs ? roleKeyOf(inputs) : null;
}

export class LadderEntity extends Entity<LadderState, LadderOp> {
  private inputs: Inputs | null = null;

  constructor(private readonly repo: ZzRepo) {
    const holder: { roles: LadderRoles | null } = { roles: null };
    super(
      repo.store,
      LADDER_REF,
      { ...ladderCodec, empty: () => new LadderState(holder.roles) },
      (ref, revision, ops) => repo.emitFor(ref, revision, ops),
      repo.clock,
    );
    this.holder = holder;
  }

  private readonly holder: { roles: LadderRoles | null };

  override async read(): Promise<Snapshot<LadderState, LadderOp>> {
    // Three folds at most: one against the roles of its own log's Lanes matches on the second.
    for (let i = 0; ; i++) {
      const snap = await super.read();
      const { roles, inputs } = await this.rolesFor(snap.log);
      if (snap.state.roles === roles) {
        // The inputs just read are those the state was folded with: the same config roles and
        // timelines (by rolesFor), with heads at least as new as the fold's.
        inputsOfSnap.set(snap, inputs);
        return snap;
      }
      if (i === 2) {
        inputsOfSnap.delete(snap);
        return snap;
      }
      this.invalidate();
    }
  }

  /**
   * The roles for a log citing these Lanes: the same object while the config and the cited
   * Lanes' coordinators stand (other Lane activity, a claim or an answer, folds nothing again).
   */
  private async rolesFor(
    log: OpLog<LoggedOp>,
  ): Promise<{ roles: LadderRoles; inputs: RoleInputs }> {
    let ids = citedOf.get(log);
    if (!ids) citedOf.set(log, (ids = citedLanes(log)));
    const inputs = await readRoleInputs(this.repo, ids);
    const from = [inputs.roles, ...ids, ...inputs.lanes.map((l) => l.json)];
    const prev = this.inputs;
    if (prev && prev.from.length === from.length && prev.from.every((x, i) => x === from[i])) {
      return { roles: prev.roles, inputs };
    }
    const byLane = new Map(ids.map((id, i) => [id, inputs.lanes[i]!.timeline]));
    this.inputs = { roles: ladderRoles(inputs.roles, byLane), from };
    this.holder.roles = this.inputs.roles;
    return { roles: this.inputs.roles, inputs };
  }
}
