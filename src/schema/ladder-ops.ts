import { z } from 'zod';
import { askId, laneId } from './ids.js';
import { noOut, opParser, opSchema } from './ops.js';
import { rungAnchor, rungGenerator, rungKind } from './rung.js';

// The ops of refs/zz/ladder. A rung as an op records it: author and written_at come from the
// op, generator may too. Rung placement (path, kind) is re-checked by the fold, which skips a
// misplaced rung rather than refusing the whole op.

export const rungRecord = z.looseObject({
  path: z.string().min(1).max(4096),
  kind: rungKind,
  title: z.string().max(4096),
  summary: z.string().max(64 * 1024),
  detail: z
    .string()
    .max(1024 * 1024)
    .optional(),
  symbols: z.array(z.string().max(1024)).max(10_000).optional(),
  anchor: rungAnchor.optional(),
  inputs_hash: z.string().max(256),
  generator: rungGenerator.optional(),
});
export type RungRecord = z.infer<typeof rungRecord>;

export const ladderWriteArgs = {
  lane_id: laneId,
  ask_id: askId,
  rungs: z.array(rungRecord),
};

export const ladderBuildArgs = {
  branch: z.string().max(1024),
  head: z.string().max(64),
  /** The generator of every upserted rung that does not name its own. */
  generator: rungGenerator,
  upsert: z.array(rungRecord),
  remove: z.array(z.string().max(4096)),
};

export const ladderWriteRungOp = opSchema('ladder_write_rung', ladderWriteArgs, noOut);
export const ladderBuildOp = opSchema('ladder_build', ladderBuildArgs, noOut);

export type LadderWriteArgs = z.infer<typeof ladderWriteRungOp>['args'];
export type LadderBuildArgs = z.infer<typeof ladderBuildOp>['args'];

export const ladderOp = z.discriminatedUnion('op', [ladderWriteRungOp, ladderBuildOp]);
export type LadderOp = z.infer<typeof ladderOp>;

export const LADDER_OP_NAMES = [
  'ladder_write_rung',
  'ladder_build',
] as const satisfies ReadonlyArray<LadderOp['op']>;

export const parseLadderOp = opParser<LadderOp>('ladder', ladderOp, LADDER_OP_NAMES);
