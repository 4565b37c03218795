import {
  publicationOrder,
  type CommitRecord,
  type OpLog,
  type OpRecord,
} from '../../store/index.js';
import { configCodec } from '../config-state.js';
import { laneCodec, type LaneState, type RejectedOp, type RoleSource } from '../lane-state.js';
import { roleTimeline } from '../role-timeline.js';
import { coordinatorTimeline, type CoordinatorTimeline } from '../ladder/ladder-roles.js';
import type { ConfigOp } from '../../schema/index.js';
import type { Rejection } from './codecs.js';

// What a change of refs/zz/config does to a Lane's ops. Lane ops are judged against the roles
// as they stood when each was made (lane-state.ts), so a revocation or a scope change that
// arrives later (by sync, or written here) can newly refuse ops already folded and shown as
// accepted. Sync reports those of the ops it pushes; lane_events tells whoever saw them.

/** refs/zz/config's ops at `tip` in publication order, from a history holding its ancestors. */
function configOps(history: readonly CommitRecord[], tip: string | null): ConfigOp[] {
  if (tip === null) return [];
  const ops: ConfigOp[] = [];
  for (const { op } of publicationOrder(history, tip)) {
    const p = configCodec.parse(op);
    if (p.ok) ops.push(p.op);
  }
  return ops;
}

/** The roles timeline of refs/zz/config at `tip`, from a history holding its ancestors. */
export function rolesOf(history: readonly CommitRecord[], tip: string | null): RoleSource {
  return roleTimeline(configOps(history, tip));
}

/** The repository's owners at refs/zz/config `tip` (its guarded fold, as ZzRepo.config reads). */
export function ownersOf(history: readonly CommitRecord[], tip: string | null): string[] {
  const s = configCodec.empty();
  for (const op of configOps(history, tip)) configCodec.apply(s, op);
  return s.config?.owners ?? [];
}

/** A Lane's state from its log (in fold order), judged under `roles`. */
function laneFoldUnder(ops: Iterable<OpRecord>, roles: RoleSource): LaneState {
  const state: LaneState = { ...laneCodec.empty(), roles };
  for (const op of ops) {
    const p = laneCodec.parse(op);
    if (p.ok) laneCodec.apply(state, p.op);
  }
  return state;
}

/** The ops of a Lane's log (in fold order) that its fold refuses when judged under `roles`. */
export function laneRejectionsUnder(ops: Iterable<OpRecord>, roles: RoleSource): OpLog<RejectedOp> {
  return laneFoldUnder(ops, roles).rejected;
}

/** A Lane's coordinators over time (ladder-roles.ts), from its log in fold order. */
export function coordinatorsUnder(
  ops: readonly OpRecord[],
  roles: RoleSource,
): CoordinatorTimeline {
  const s = laneFoldUnder(ops, roles);
  return coordinatorTimeline(ops, s.rejected, s.roots);
}

/**
 * The ops of `after` (what a Lane's fold refuses at the value a sync leaves it) that this clone
 * wrote (`replica`) and its fold at `tip` (the local value before the round, whose `history`
 * holds its ancestors) under `rolesBefore` did not refuse, leaving out the op ids in `reported`
 * (listed already). `after` is asked only when the history holds an op of ours, the fold
 * before only when one of them is refused after. An op that merely carries our
 * replica id (anyone can forge one) is reported as ours: a report, nothing more.
 */
export async function ownNewlyRefused(
  replica: string | undefined,
  history: readonly CommitRecord[],
  tip: string,
  after: () => Promise<Iterable<Rejection>>,
  rolesBefore: () => Promise<RoleSource>,
  reported: ReadonlySet<string>,
): Promise<Rejection[]> {
  if (replica === undefined) return [];
  const own = new Set<string>();
  for (const c of history) for (const o of c.ops) if (o.replica === replica) own.add(o.id);
  if (own.size === 0) return [];
  const refused: Rejection[] = [];
  for (const r of await after()) if (own.has(r.op_id) && !reported.has(r.op_id)) refused.push(r);
  if (refused.length === 0) return [];
  const ops = publicationOrder(history, tip).map((o) => o.op);
  const before = new Set(laneRejectionsUnder(ops, await rolesBefore()).map((r) => r.op_id));
  return refused.filter((r) => !before.has(r.op_id));
}
