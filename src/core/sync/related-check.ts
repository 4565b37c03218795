import { publicationOrder, type CommitRecord } from '../../store/index.js';
import { laneCodec, type LaneState, type RoleSource } from '../lane-state.js';

// lane_add_related on import (DESIGN §7: a write needs the scope it would need through the
// daemon). The daemon lets a coordinator of the Lane written, or an owner, add to its
// related_lanes: not the related Lane's coordinators, since any member can propose a Lane and
// so coordinate it, and the list (capped, with no removal) could be filled for good. Checked
// here, where the roles of the round are at hand: an arriving lane_add_related whose actor was
// neither a coordinator of this Lane at that point of its log nor an owner at the op's time
// quarantines the ref like any other op that fails its import checks. (The Lane fold itself
// does not refuse it: histories written under the older either-side rule would lose links on
// upgrade.)

/** The first arriving lane_add_related its actor had no right to, or null. */
export async function relatedLaneProblem(
  ref: string,
  history: readonly CommitRecord[],
  incoming: ReadonlySet<string>,
  rolesOf: () => Promise<RoleSource>,
): Promise<{ commit: string; reason: string } | null> {
  const arriving = history.some(
    (c) => incoming.has(c.revision) && c.ops.some((o) => o.op === 'lane_add_related'),
  );
  const tip = history[history.length - 1]?.revision;
  if (!arriving || !tip) return null;
  const roles = await rolesOf();
  const state: LaneState = { ...laneCodec.empty(), roles };
  for (const { op, revision } of publicationOrder(history, tip)) {
    const p = laneCodec.parse(op);
    if (!p.ok) continue; // validation quarantined what does not parse
    const o = p.op;
    if (o.op === 'lane_add_related' && incoming.has(revision) && state.lane) {
      const a = o.actor;
      const rel = o.args.related_lane_id;
      const allowed =
        state.lane.coordinators.includes(a) || (roles.at(o.time)?.owners.includes(a) ?? false);
      if (!allowed) {
        return {
          commit: revision,
          reason: `lane_add_related by ${a} on ${ref} (→ ${rel}): not a coordinator of it, nor an owner`,
        };
      }
    }
    laneCodec.apply(state, o);
  }
  return null;
}
