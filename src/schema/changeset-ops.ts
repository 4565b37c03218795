import { z } from 'zod';
import { askId, changesetId, laneId } from './ids.js';
import { STORED_LIMITS } from './limits.js';
import { opSchema } from './ops.js';

// Changeset ops. A changeset's own ref (refs/zz/changesets/<id>) is a plain code commit with no
// ops; what happens to a changeset is recorded on its Lane, so these ops belong to the Lane's
// union (lane-ops.ts) and its fold.

const oid = z.string().regex(/^[0-9a-f]{40,64}$/, 'must be a full hex object id');

export const commitChangesetOp = opSchema(
  'commit_changeset',
  {
    lane_id: laneId,
    ask_id: askId,
    changeset_id: changesetId.nullable().optional(),
    message: z.string().max(STORED_LIMITS.commitMessage).optional(),
    expected_head: oid.optional(),
    paths: z.array(z.string().max(STORED_LIMITS.path)).max(STORED_LIMITS.changesetFiles).optional(),
  },
  z.looseObject({
    commit: oid,
    branch: z.string().max(1024),
    previous_head: oid.nullable().optional(),
    merged: z.boolean().optional(),
    fast_forward: z.boolean().optional(),
    worktree_updated: z.boolean().optional(),
    answered: askId.nullable().optional(),
  }),
);

export const CHANGESET_OP_NAMES = ['commit_changeset'] as const;
export const changesetOp = commitChangesetOp;
export type ChangesetOp = z.infer<typeof changesetOp>;
