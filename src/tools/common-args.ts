import { actor, idempotencyKey, revision } from '../schema/ids.js';

// Arguments every write tool takes, with descriptions models read. They repeat in every write
// tool of the MCP tool list (test/mcp/mcp.test.ts keeps it under 48 KiB): every word counts.

export const writeArgs = {
  actor: actor.optional().describe("Must be your token's actor if given"),
  idempotency_key: idempotencyKey
    .optional()
    .describe('The same key on a retry returns the first result instead of acting twice'),
  expected_revision: revision
    .optional()
    .describe('409 unless still at this revision (from a read)'),
};

export const createArgs = {
  actor: writeArgs.actor,
  idempotency_key: writeArgs.idempotency_key,
};
