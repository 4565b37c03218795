import type { EntityCodec, OpLog } from '../../store/index.js';
import { configCodec, type ConfigState } from '../config-state.js';
import type { LadderRoles } from '../ladder/ladder-guards.js';
import { ladderCodec, LadderState } from '../ladder/ladder-state.js';
import { laneCodec, type LaneState, type RejectedOp, type RoleSource } from '../lane-state.js';

// Which refs are entities (a fold of ops, mergeable) and how to fold each. Other refs under
// refs/zz/ (changesets: code commits whose ids are random) only ever fast-forward; two
// different values of one are reported and left alone.

/** An op the guarded fold refused, as sync reports it (a Lane's, the config's, the Ladder's). */
export type Rejection = Omit<RejectedOp, 'reason' | 'needed'> & {
  reason: string;
  needed?: string;
  /** The Ladder's: the Lane a refused write cited; a skipped rung and how many were. */
  lane_id?: string;
  path?: string;
  count?: number;
};

export interface SyncCodec<S> {
  codec: EntityCodec<S>;
  /** Ops the fold refused so far (guarded apply), so sync can say whose claims were lost. */
  rejections?(state: S): OpLog<Rejection>;
}

const lanes: SyncCodec<LaneState> = {
  codec: laneCodec,
  rejections: (s) => s.rejected,
};

const ladder: SyncCodec<LadderState> = {
  codec: ladderCodec,
  rejections: (s) => s.rejected,
};

const config: SyncCodec<ConfigState> = {
  codec: configCodec,
  rejections: (s) => s.rejected,
};

/**
 * `roles`: the repository's roles over time as the merge will leave refs/zz/config, so a Lane
 * merge refuses what every replica's fold refuses (scopes as they stood, lane-state.ts).
 * `ladderRoles`: those and the cited Lanes' coordinators as the round leaves them, for the
 * Ladder's (ladder-guards.ts).
 */
export function syncCodecFor(
  ref: string,
  roles?: RoleSource,
  ladderRoles?: LadderRoles,
): SyncCodec<unknown> | null {
  if (ref === 'refs/zz/config') return config as SyncCodec<unknown>;
  if (ref === 'refs/zz/ladder') {
    if (!ladderRoles) return ladder as SyncCodec<unknown>;
    const codec = { ...ladderCodec, empty: () => new LadderState(ladderRoles) };
    return { ...ladder, codec } as SyncCodec<unknown>;
  }
  if (ref.startsWith('refs/zz/lanes/')) {
    if (!roles) return lanes as SyncCodec<unknown>;
    const codec = { ...laneCodec, empty: () => ({ ...laneCodec.empty(), roles }) };
    return { ...lanes, codec } as SyncCodec<unknown>;
  }
  return null;
}
