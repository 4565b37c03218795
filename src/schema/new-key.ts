import { randomBytes } from 'node:crypto';

// A fresh idempotency_key (ids.ts: IDEMPOTENCY_KEY_RE) for a write that may have to be sent
// again because its answer was lost: made once, before the first attempt, and reused by every
// later one, so a write that did land is answered with its original result (`replayed: true`)
// instead of being applied twice. No zod here: the CLI's fast path loads it.

/** `<prefix>-<24 hex>`; the prefix says who made it (cli, claim, release, …). */
export function newIdempotencyKey(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('hex')}`;
}
