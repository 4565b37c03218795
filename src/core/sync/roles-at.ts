import { publicationOrder } from '../../store/index.js';
import type { LadderRoles } from '../ladder/ladder-guards.js';
import { citedLanes, ladderRoles, type CoordinatorTimeline } from '../ladder/ladder-roles.js';
import type { RoleSource } from '../lane-state.js';
import type { SyncLocal } from './ports.js';
import { coordinatorsUnder, ownersOf, rolesOf } from './refusals.js';
import { parseZzCommit, type ParsedCommit } from './validate.js';

// What a sync round judges ops by, read from the refs as the round leaves them: the config's
// roles and owners at a tip, and the Ladder's view of the Lanes its ops cite.

export const CONFIG_REF = 'refs/zz/config';
export const LANES_REF_PREFIX = 'refs/zz/lanes/';

/**
 * The roles the Ladder's merge judges its ops by: `roles`, and the coordinators over time of
 * every Lane the ops of `history` cite, at the tips this round leaves (`tips`).
 */
export async function ladderRolesAt(
  local: SyncLocal,
  history: readonly ParsedCommit[],
  tips: ReadonlyMap<string, string>,
  roles: RoleSource,
): Promise<LadderRoles> {
  const lanes = new Map<string, CoordinatorTimeline | null>();
  for (const id of citedLanes(history.flatMap((c) => c.ops))) {
    const ref = LANES_REF_PREFIX + id;
    const tip = tips.get(ref);
    if (tip === undefined) {
      lanes.set(id, null);
      continue;
    }
    const lane = (await local.commits([tip], [])).map((c) => parseZzCommit(c, ref));
    lanes.set(
      id,
      coordinatorsUnder(
        publicationOrder(lane, tip).map((o) => o.op),
        roles,
      ),
    );
  }
  return ladderRoles(roles, lanes);
}

/** The roles timeline of refs/zz/config at `tip` (already validated, so every op parses). */
export async function rolesAt(local: SyncLocal, tip: string | null): Promise<RoleSource> {
  if (tip === null) return rolesOf([], null);
  return rolesOf(
    (await local.commits([tip], [])).map((c) => parseZzCommit(c, CONFIG_REF)),
    tip,
  );
}

export async function ownersAt(local: SyncLocal, tip: string | null): Promise<string[]> {
  if (tip === null) return [];
  return ownersOf(
    (await local.commits([tip], [])).map((c) => parseZzCommit(c, CONFIG_REF)),
    tip,
  );
}
