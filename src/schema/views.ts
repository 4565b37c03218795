import { z } from 'zod';

// Output shapes (DESIGN §3). Loose objects: fields may be added, never renamed.

export const laneOut = z.looseObject({
  lane_id: z.string(),
  title: z.string(),
  description: z.string(),
  coordinators: z.array(z.string()),
  maintainers: z.array(z.string()),
  related_lanes: z.array(z.string()),
  ask_kinds: z.record(z.string(), z.string()),
  created_by: z.string(),
  created_at: z.string(),
  closed: z.looseObject({ by: z.string(), at: z.string(), reason: z.string() }).optional(),
  revision: z.string().nullable(),
  // Whom an owner stands behind (core/rooted-roles.ts; the tools' descriptions say what for).
  rooted_coordinators: z.array(z.string()),
  rooted_maintainers: z.array(z.string()),
});

export const answerOut = z.looseObject({
  outcome: z.enum(['complete', 'deny', 'grant']),
  result: z.string().nullable(),
  changeset_id: z.string().nullable(),
  answered_by: z.string(),
  answered_at: z.string(),
});

export const askOut = z.looseObject({
  ask_id: z.string(),
  lane_id: z.string(),
  kind: z.string(),
  title: z.string(),
  body: z.string(),
  priority: z.number().int(),
  depends_on: z.array(z.string()),
  state: z.enum(['open', 'claimed', 'answered', 'cancelled']),
  blocked: z.boolean(),
  blocked_by: z.array(
    z.looseObject({ ask_id: z.string(), state: z.string(), outcome: z.string().nullable() }),
  ),
  holder: z.string().nullable(),
  lease_expires_at: z.string().nullable(),
  lease_expired: z.boolean(),
  answer: answerOut.nullable(),
  posted_by: z.string(),
  posted_at: z.string(),
  payload: z.record(z.string(), z.unknown()),
  origin: z.looseObject({ ask_id: z.string(), reason: z.string() }).nullable(),
  cancelled: z.looseObject({ by: z.string(), at: z.string(), reason: z.string() }).optional(),
});

export const historyOut = z.looseObject({
  revision: z.string().nullable(),
  op: z.string(),
  actor: z.string(),
  time: z.string(),
  lamport: z.number(),
  ask_id: z.string().nullable(),
  args: z.record(z.string(), z.unknown()),
  out: z.record(z.string(), z.unknown()).nullable(),
  rejected: z
    .looseObject({
      reason: z.string(),
      ask_id: z.string().optional(),
      winner: z.string().nullable().optional(),
    })
    .optional()
    .describe('set when a sync merge refused this op (claim_lost names the winner)'),
  unsigned: z
    .literal(true)
    .optional()
    .describe(
      'set when the op came from another replica and its commit is not signed by a key of its actor',
    ),
});

export const countsOut = z.looseObject({
  open: z.number(),
  claimed: z.number(),
  answered: z.number(),
  cancelled: z.number(),
  total: z.number(),
});

export const writeMetaOut = {
  revision: z.string().describe('The entity revision (ref commit) after the write'),
  replayed: z.boolean().describe('true when an idempotency_key retry returned the original result'),
};

/** An entity that cannot be read, by ref (malformed op, ref at a blob, copied ref, bad name). */
export const corruptOut = z.looseObject({ ref: z.string(), error: z.string() });
