import { actor, idempotencyKey, revision } from '../schema/ids.js';

// Arguments every write tool takes, with descriptions models read.

export const writeArgs = {
  actor: actor.optional().describe("Who acts; must be the token's actor if given"),
  idempotency_key: idempotencyKey
    .optional()
    .describe(
      'Reuse the same key when you retry this call: a repeat returns the original result instead of acting twice',
    ),
  expected_revision: revision
    .optional()
    .describe('Conflict unless the entity is still at this revision (from a read)'),
};

export const createArgs = {
  actor: writeArgs.actor,
  idempotency_key: writeArgs.idempotency_key,
};
