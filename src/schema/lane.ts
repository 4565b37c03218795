import { z } from 'zod';
import { actor, askId, changesetId, laneId } from './ids.js';

// The documents stored on refs/zz/lanes/<id>: lane.json and asks/<2 hex>/<ask_id>.json.

export const SCOPES = ['member', 'maintainer', 'coordinator'] as const;
export const scope = z.enum(SCOPES);
export type Scope = z.infer<typeof scope>;

export const ASK_KIND_RE = /^[a-z][a-z0-9_]{0,47}$/;
export const askKind = z.string().regex(ASK_KIND_RE, 'kind must be snake_case, 1-48 characters');

/** Custom Ask kinds with their scopes (a Lane's, the repo's), at most `max` of them. */
export const askKinds = (max: number) =>
  z
    .record(askKind, scope)
    .refine((r) => Object.keys(r).length <= max, `at most ${max} custom Ask kinds`);

export const OUTCOMES = ['complete', 'deny', 'grant'] as const;
export const outcome = z.enum(OUTCOMES);
export type Outcome = z.infer<typeof outcome>;

/** Who closed a Lane or cancelled an Ask, when, and why. */
export const closure = z.strictObject({ by: actor, at: z.string(), reason: z.string() });
export type Closure = z.infer<typeof closure>;

export const ASK_STATES = ['open', 'claimed', 'answered', 'cancelled'] as const;

export const laneDoc = z.strictObject({
  lane_id: laneId,
  title: z.string(),
  description: z.string(),
  coordinators: z.array(actor),
  maintainers: z.array(actor),
  related_lanes: z.array(laneId),
  ask_kinds: z.record(z.string(), scope),
  created_by: actor,
  created_at: z.string(),
  /** Set by lane_close: no new Asks, nothing more to claim. */
  closed: closure.optional(),
});
export type LaneDoc = z.infer<typeof laneDoc>;

export const answerDoc = z.strictObject({
  outcome,
  result: z.string().nullable(),
  changeset_id: changesetId.nullable(),
  answered_by: actor,
  answered_at: z.string(),
});
export type AnswerDoc = z.infer<typeof answerDoc>;

export const askDoc = z.strictObject({
  ask_id: askId,
  lane_id: laneId,
  kind: askKind,
  title: z.string(),
  body: z.string(),
  priority: z.number().int().min(0).max(4),
  depends_on: z.array(askId),
  state: z.enum(ASK_STATES),
  holder: actor.nullable(),
  lease_expires_at: z.string().nullable(),
  answer: answerDoc.nullable(),
  posted_by: actor,
  posted_at: z.string(),
  payload: z.record(z.string(), z.unknown()),
  origin: z.strictObject({ ask_id: askId, reason: z.string() }).nullable(),
  /** Set by ask_cancel (state cancelled). */
  cancelled: closure.optional(),
});
export type AskDoc = z.infer<typeof askDoc>;
