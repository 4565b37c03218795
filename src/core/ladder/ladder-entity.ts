import type { LadderOp } from '../../schema/ladder-ops.js';
import { Entity, type LoggedOp, type OpLog, type Snapshot } from '../../store/index.js';
import { LADDER_REF, type ZzRepo } from '../zz-repo.js';
import type { LadderRoles } from './ladder-guards.js';
import type { LaneOp } from '../../schema/lane-ops.js';
import type { LaneState } from '../lane-state.js';
import {
  citedLanes,
  coordinatorTimeline,
  ladderRoles,
  type CoordinatorTimeline,
} from './ladder-roles.js';
import { ladderCodec, LadderState } from './ladder-state.js';

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
/** A Lane snapshot's coordinator timeline, and its JSON to compare by. */
const timelineOf = new WeakMap<object, { timeline: CoordinatorTimeline; json: string }>();

function timeline(lane: Snapshot<LaneState, LaneOp> | null) {
  if (!lane?.state.lane) return null;
  let t = timelineOf.get(lane);
  if (!t) {
    const timeline = coordinatorTimeline(lane.log, lane.state.rejected, lane.state.roots);
    t = { timeline, json: JSON.stringify(timeline) };
    timelineOf.set(lane, t);
  }
  return t;
}

/** Cited Lanes looked up one by one; past this many, the existing Lanes are listed first. */
const CITED_LOOKUPS = 32;

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
      const roles = await this.rolesFor(snap.log);
      if (snap.state.roles === roles || i === 2) return snap;
      this.invalidate();
    }
  }

  /**
   * The roles for a log citing these Lanes: the same object while the config and the cited
   * Lanes' coordinators stand (other Lane activity, a claim or an answer, folds nothing again).
   */
  private async rolesFor(log: OpLog<LoggedOp>): Promise<LadderRoles> {
    let ids = citedOf.get(log);
    if (!ids) citedOf.set(log, (ids = citedLanes(log)));
    // Hazard: cited ids come from other machines, refused ops included; a log citing thousands
    // of Lanes that do not exist made every read look each one up and keep an entity for each
    // (found in review). Past a few, the Lanes that exist are listed once and only those read;
    // an absent Lane has no coordinators, as a failed read already meant.
    const existing = ids.length > CITED_LOOKUPS ? new Set(await this.repo.laneIds()) : null;
    const [roles, ...lanes] = await Promise.all([
      this.repo.roles(),
      ...ids.map((id) =>
        existing && !existing.has(id)
          ? null
          : this.repo
              .lane(id)
              .read()
              .catch(() => null),
      ),
    ]);
    const timelines = lanes.map(timeline);
    const from = [roles, ...ids, ...timelines.map((t) => t?.json ?? null)];
    const prev = this.inputs;
    if (prev && prev.from.length === from.length && prev.from.every((x, i) => x === from[i])) {
      return prev.roles;
    }
    const byLane = new Map(ids.map((id, i) => [id, timelines[i]?.timeline ?? null]));
    this.inputs = { roles: ladderRoles(roles, byLane), from };
    this.holder.roles = this.inputs.roles;
    return this.inputs.roles;
  }
}
