import { ZzError } from '../errors.js';

// Helpers every write use case shares.

/** A mutation's result() got an op it did not decide: a bug, said plainly. */
export function unexpectedOp(op: { op: string } | null, expected: string): ZzError {
  return new ZzError('internal', `expected a ${expected} op, got ${op === null ? 'no op' : op.op}`);
}
