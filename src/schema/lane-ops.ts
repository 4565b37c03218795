import { z } from 'zod';
import { CHANGESET_OP_NAMES, commitChangesetOp } from './changeset-ops.js';
import { actor, askId, changesetId, laneId } from './ids.js';
import { askKind, askKinds, outcome } from './lane.js';
import { STORED_LIMITS } from './limits.js';
import { boundedJson, boundedText, noOut, opSchema } from './ops.js';

// The ops of refs/zz/lanes/<id>, one schema per kind (parsed by lane-op-parse.ts). Optional fields are those older zz
// versions did not always write; the fold supplies the same defaults they were written with.

const title = z.string().max(STORED_LIMITS.title);
const list = <T extends z.ZodType>(t: T) => z.array(t).max(STORED_LIMITS.list);

export const laneProposeOp = opSchema(
  'lane_propose',
  {
    lane_id: laneId,
    title,
    description: z.string().max(STORED_LIMITS.description).optional(),
    coordinators: list(actor).optional(),
    maintainers: list(actor).optional(),
    related_lanes: list(laneId).optional(),
    ask_kinds: askKinds(STORED_LIMITS.askKinds).optional(),
  },
  noOut,
);

export const laneAddRelatedOp = opSchema(
  'lane_add_related',
  { lane_id: laneId, related_lane_id: laneId },
  noOut,
);

export const laneGrantOp = opSchema(
  'lane_grant',
  {
    lane_id: laneId,
    grantee: actor,
    role: z.enum(['coordinator', 'maintainer']),
    revoke: z.boolean().optional(),
  },
  noOut,
);

export const laneCloseOp = opSchema(
  'lane_close',
  { lane_id: laneId, reason: z.string().max(STORED_LIMITS.reason).optional() },
  noOut,
);

export const askOrigin = z.looseObject({ ask_id: askId, reason: z.string().max(1000) });

export const askPostOp = opSchema(
  'ask_post',
  {
    lane_id: laneId,
    kind: askKind,
    title,
    body: boundedText(STORED_LIMITS.body, 'body').optional(),
    priority: z.number().int().min(0).max(4).optional(),
    depends_on: list(askId).optional(),
    payload: boundedJson(STORED_LIMITS.payload, 'payload').optional(),
    posted_by: actor.optional(),
    origin: askOrigin.nullable().optional(),
  },
  z.looseObject({ ask_id: askId }),
);

export const askClaimOp = opSchema(
  'ask_claim',
  { lane_id: laneId, ask_id: askId, lease_seconds: z.number().int().min(0).optional() },
  z.looseObject({
    lease_expires_at: z.string().max(64),
    renewed: z.boolean().optional(),
    expired_holder: actor.nullable().optional(),
    expired_at: z.string().max(64).nullable().optional(),
  }),
);

export const askReleaseOp = opSchema(
  'ask_release',
  { lane_id: laneId, ask_id: askId, reason: z.string().max(STORED_LIMITS.reason).optional() },
  z.looseObject({ previous_holder: actor.nullable().optional() }).optional(),
);

export const askAnswerOp = opSchema(
  'ask_answer',
  {
    lane_id: laneId,
    ask_id: askId,
    outcome,
    result: boundedText(STORED_LIMITS.result, 'result').nullable().optional(),
    changeset_id: changesetId.nullable().optional(),
    changeset: z
      .looseObject({
        base: z.string().max(64),
        message: z.string().max(STORED_LIMITS.commitMessage),
        paths: z.array(z.string().max(STORED_LIMITS.path)).max(STORED_LIMITS.changesetFiles),
      })
      .optional(),
  },
  z
    .looseObject({
      changeset_id: changesetId.optional(),
      changeset_commit: z.string().max(64).nullable().optional(),
      follow_ups: list(askId).optional(),
      commit: z.string().max(64).optional(),
    })
    .optional(),
);

export const askCancelOp = opSchema(
  'ask_cancel',
  { lane_id: laneId, ask_id: askId, reason: z.string().max(STORED_LIMITS.reason).optional() },
  noOut,
);

export const laneOp = z.discriminatedUnion('op', [
  laneProposeOp,
  laneAddRelatedOp,
  laneGrantOp,
  laneCloseOp,
  askPostOp,
  askClaimOp,
  askReleaseOp,
  askAnswerOp,
  askCancelOp,
  commitChangesetOp,
]);
export type LaneOp = z.infer<typeof laneOp>;

export const LANE_OP_NAMES = [
  'lane_propose',
  'lane_add_related',
  'lane_grant',
  'lane_close',
  'ask_post',
  'ask_claim',
  'ask_release',
  'ask_answer',
  'ask_cancel',
  ...CHANGESET_OP_NAMES,
] as const satisfies ReadonlyArray<LaneOp['op']>;
