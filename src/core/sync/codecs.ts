import type { EntityCodec } from '../../store/index.js';
import { configCodec } from '../config-state.js';
import { ladderCodec } from '../ladder/ladder-state.js';
import { laneCodec, type LaneState, type RejectedOp } from '../lane-state.js';

// Which refs are entities (a fold of ops, mergeable) and how to fold each. Other refs under
// refs/zz/ (changesets: code commits whose ids are random) only ever fast-forward; two
// different values of one are reported and left alone.

/** An op the guarded fold refused, as sync reports it. */
export type Rejection = Omit<RejectedOp, 'reason'> & { reason: string };

export interface SyncCodec<S> {
  codec: EntityCodec<S>;
  /** Ops the fold refused so far (guarded apply), so sync can say whose claims were lost. */
  rejections?(state: S): readonly Rejection[];
}

const lanes: SyncCodec<LaneState> = {
  codec: laneCodec,
  rejections: (s) => s.rejected,
};

export function syncCodecFor(ref: string): SyncCodec<unknown> | null {
  if (ref === 'refs/zz/config') return { codec: configCodec } as SyncCodec<unknown>;
  if (ref === 'refs/zz/ladder') return { codec: ladderCodec } as SyncCodec<unknown>;
  if (ref.startsWith('refs/zz/lanes/')) return lanes as SyncCodec<unknown>;
  return null;
}
