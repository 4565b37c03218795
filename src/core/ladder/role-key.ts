import { createHash } from 'node:crypto';
import type { LaneOp } from '../../schema/lane-ops.js';
import type { Snapshot } from '../../store/index.js';
import type { LaneState, RoleSource } from '../lane-state.js';
import { CONFIG_REF, LANES_PREFIX, laneRef, type ZzRepo } from '../zz-repo.js';
import { coordinatorTimeline, type CoordinatorTimeline } from './ladder-roles.js';

// What the Ladder's guarded fold reads besides its own log (ladder-entity.ts): refs/zz/config
// (owners over time, and now) and the coordinator timelines of the Lanes its writes cite. The
// rungs it holds change when any of them does, with the ladder ref where it was (a demotion, a
// Lane's grant or revoke arriving by sync), so whatever keeps the rungs (the search shards,
// search-sync.ts) is keyed on them too: a role key.
//
// A role key holds the config's revision and, per cited Lane, its head and a digest of its
// coordinator timeline as the fold used it (never its claims or answers). Checking one is cheap
// while the refs stand: one ref read each, no fold. When a cited Lane moved, that Lane alone is
// read (a Lane fold, not the Ladder's) and its timeline compared by the digest: a claim or an
// answer in a cited Lane leaves the key good, with its new head.
// Hazard: any move of refs/zz/config counts (its revision is in the digest), so an op there
// that changes no owner (a key added) costs a re-index too.

/** Cited Lanes looked up one by one; past this many, the existing Lanes are listed first. */
export const CITED_LOOKUPS = 32;
/**
 * Past this many cited Lanes (a hostile log citing thousands) a key names no Lanes: it follows
 * refs/zz/config alone and a Lane's history arriving by sync is not noticed until the Ladder
 * or the config moves.
 */
export const MAX_KEYED_LANES = 1024;

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

/** The role inputs of a fold citing `ids`, as read now. */
export interface RoleInputs {
  roles: RoleSource;
  /** The refs/zz/config revision `roles` were built from. */
  config: string | null;
  ids: readonly string[];
  /** Per id: the Lane's head as read (null: absent or unreadable) and its timeline. */
  lanes: ReadonlyArray<{
    head: string | null;
    timeline: CoordinatorTimeline | null;
    json: string | null;
  }>;
}

/**
 * Reads the config's roles and each cited Lane. Hazard: cited ids come from other machines,
 * refused ops included; a log citing thousands of Lanes that do not exist made every read look
 * each one up and keep an entity for each (found in review). Past a few, the Lanes that exist
 * are listed once and only those read; an absent Lane has no coordinators, as a failed read
 * already meant.
 */
export async function readRoleInputs(repo: ZzRepo, ids: readonly string[]): Promise<RoleInputs> {
  const existing = ids.length > CITED_LOOKUPS ? new Set(await repo.laneIds()) : null;
  const [roles, ...snaps] = await Promise.all([
    repo.rolesWithRevision(),
    ...ids.map((id) =>
      existing && !existing.has(id)
        ? null
        : repo
            .lane(id)
            .read()
            .catch(() => null),
    ),
  ]);
  return {
    roles: roles.source,
    config: roles.revision,
    ids,
    lanes: snaps.map((s) => {
      const t = timeline(s);
      return { head: s?.revision ?? null, timeline: t?.timeline ?? null, json: t?.json ?? null };
    }),
  };
}

interface RoleKey {
  config: string | null;
  /**
   * Per cited Lane: its id, its head, and a digest of its coordinator timeline (null: none).
   * Null past MAX_KEYED_LANES (not followed).
   */
  lanes: Array<[string, string | null, string | null]> | null;
}

const digest = (json: string | null): string | null =>
  json === null ? null : createHash('sha256').update(json).digest('hex').slice(0, 32);

/** The role key of a fold that read `inputs`: JSON, opaque to the search index. */
export function roleKeyOf(inputs: RoleInputs): string {
  const key: RoleKey = {
    config: inputs.config,
    lanes:
      inputs.ids.length > MAX_KEYED_LANES
        ? null
        : inputs.ids.map((id, i) => {
            const lane = inputs.lanes[i]!;
            return [id, lane.head, digest(lane.json)];
          }),
  };
  return JSON.stringify(key);
}

function parseKey(text: string): RoleKey | null {
  try {
    const k = JSON.parse(text) as RoleKey;
    const str = (v: unknown) => v === null || typeof v === 'string';
    if (k === null || typeof k !== 'object' || !str(k.config)) return null;
    if (k.lanes === null) return k;
    if (!Array.isArray(k.lanes) || k.lanes.length > MAX_KEYED_LANES) return null;
    const ok = k.lanes.every(
      (p) =>
        Array.isArray(p) && p.length === 3 && typeof p[0] === 'string' && str(p[1]) && str(p[2]),
    );
    return ok ? k : null;
  } catch {
    return null;
  }
}

/** Whether two role keys say the fold used the same roles (their Lanes' heads may differ). */
export function sameRoles(a: string | null, b: string | null): boolean {
  const x = a === null ? null : parseKey(a);
  const y = b === null ? null : parseKey(b);
  if (x === null || y === null || x.config !== y.config) return false;
  if (x.lanes === null || y.lanes === null) return x.lanes === y.lanes;
  return (
    x.lanes.length === y.lanes.length &&
    x.lanes.every((p, i) => p[0] === y.lanes![i]![0] && p[2] === y.lanes![i]![2])
  );
}

/** The heads of refs/zz/config and of `ids`' Lanes: a ref read each, or one listing. */
async function headsOf(repo: ZzRepo, ids: readonly string[]) {
  const config = await repo.store.head(CONFIG_REF);
  if (ids.length > CITED_LOOKUPS) {
    const refs = await repo.store.listRefs(LANES_PREFIX);
    return { config, lanes: ids.map((id) => refs.get(laneRef(id)) ?? null) };
  }
  // An id that names no ref (cited by another machine's op: refused, or not a lane id) reads
  // as absent, as the fold reads it; a throw would fail every check of the key.
  const lanes = await Promise.all(ids.map((id) => repo.store.head(laneRef(id)).catch(() => null)));
  return { config, lanes };
}

/**
 * Whether a fold now would use the roles `held` was made from: the key to hold from now on
 * (`held` itself while no ref moved; with new heads when only non-role ops moved its Lanes),
 * or null when the fold's answer may have changed (or `held` is no key: fold to know). Only
 * the Lanes that moved are read.
 */
export async function checkRoleKey(repo: ZzRepo, held: string | null): Promise<string | null> {
  const key = held === null ? null : parseKey(held);
  if (key === null) return null;
  const ids = key.lanes?.map((p) => p[0]) ?? [];
  // Read before the Lanes are: a Lane moving meanwhile leaves an older head in the key,
  // checked again next time, never a newer head beside an older timeline.
  const heads = await headsOf(repo, ids);
  if (heads.config !== key.config) return null;
  if (key.lanes === null) return held;
  const moved = ids.filter((_, i) => key.lanes![i]![1] !== heads.lanes[i]);
  if (moved.length === 0) return held;
  // The config stood, so a Lane that did not move folds as before: only the moved are read.
  const inputs = await readRoleInputs(repo, moved);
  const timelines = new Map(moved.map((id, i) => [id, digest(inputs.lanes[i]!.json)]));
  if (inputs.config !== key.config) return null;
  const lanes = key.lanes.map(([id, , t], i): [string, string | null, string | null] => [
    id,
    heads.lanes[i]!,
    t,
  ]);
  for (const [id, , t] of lanes) if (timelines.has(id) && timelines.get(id) !== t) return null;
  return JSON.stringify({ config: key.config, lanes } satisfies RoleKey);
}
