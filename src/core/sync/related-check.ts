import { publicationOrder, type CommitRecord } from '../../store/index.js';
import { laneCodec, type LaneState, type RoleSource } from '../lane-state.js';

// lane_add_related on import (DESIGN §7: a write needs the scope it would need through the
// daemon). The daemon lets a coordinator of either Lane, or an owner, relate two Lanes: the
// one who created a Lane records, in the Lane it came from, where it went. The Lane fold cannot
// check that (it sees one Lane, and the related Lane's coordinators live in another log), so it
// is checked here, where every ref of the round is at hand: an arriving lane_add_related whose
// actor was neither a coordinator of this Lane at that point of its log, nor an owner at the
// op's time, nor a coordinator of the related Lane, quarantines the ref like any other op that
// fails its import checks.

export interface RelatedCheckSources {
  /** The roles refs/zz/config gives over time (the config this round leaves). */
  roles: RoleSource;
  /** The coordinators of a Lane as this round sees it (empty when it does not exist). */
  coordinatorsOf(laneId: string): Promise<ReadonlySet<string>>;
}

/** The first arriving lane_add_related its actor had no right to, or null. */
export async function relatedLaneProblem(
  ref: string,
  history: readonly CommitRecord[],
  incoming: ReadonlySet<string>,
  sources: () => Promise<RelatedCheckSources>,
): Promise<{ commit: string; reason: string } | null> {
  const arriving = history.some(
    (c) => incoming.has(c.revision) && c.ops.some((o) => o.op === 'lane_add_related'),
  );
  const tip = history[history.length - 1]?.revision;
  if (!arriving || !tip) return null;
  const { roles, coordinatorsOf } = await sources();
  const state: LaneState = { ...laneCodec.empty(), roles };
  for (const { op, revision } of publicationOrder(history, tip)) {
    const p = laneCodec.parse(op);
    if (!p.ok) continue; // validation quarantined what does not parse
    const o = p.op;
    if (o.op === 'lane_add_related' && incoming.has(revision) && state.lane) {
      const a = o.actor;
      const rel = o.args.related_lane_id;
      const allowed =
        state.lane.coordinators.includes(a) ||
        (roles.at(o.time)?.owners.includes(a) ?? false) ||
        (await coordinatorsOf(rel)).has(a);
      if (!allowed) {
        return {
          commit: revision,
          reason: `lane_add_related by ${a} on ${ref}: not a coordinator of it or of ${rel}, nor an owner`,
        };
      }
    }
    laneCodec.apply(state, o);
  }
  return null;
}
