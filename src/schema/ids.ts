import { z } from 'zod';

// Every id and name that can reach a ref name, a tree path or a commit message is validated
// here, once, by the schemas every tool uses.

export const LANE_ID_RE = /^(?:_repo|[a-z0-9][a-z0-9._-]{0,62})$/;
export const ASK_ID_RE = /^ask-[0-9a-f]{10}$/;
export const CHANGESET_ID_RE = /^cs-[0-9a-f]{10}$/;
// A person is an email; an agent acting for a person is `email[name]`.
export const ACTOR_RE =
  /^[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9.-]{1,190}(?:\[[A-Za-z0-9._-]{1,64}\])?$/;
export const IDEMPOTENCY_KEY_RE = /^[A-Za-z0-9._:-]{1,128}$/;
export const REVISION_RE = /^[0-9a-f]{40}$/;

export const noLockSuffix = (s: string) =>
  !s.endsWith('.lock') && !s.endsWith('.') && !s.includes('..');

export const laneId = z
  .string()
  .regex(LANE_ID_RE, 'lane_id must match [a-z0-9][a-z0-9._-]{0,62} (or be "_repo")')
  .refine(noLockSuffix, 'lane_id must not end in ".lock" or "." nor contain ".."');
export const newLaneId = laneId.refine((s) => s !== '_repo', 'lane_id "_repo" is reserved');
export const askId = z.string().regex(ASK_ID_RE, 'ask_id must look like ask-<10 hex>');
export const changesetId = z
  .string()
  .regex(CHANGESET_ID_RE, 'changeset_id must look like cs-<10 hex>');
export const actor = z.string().max(300).regex(ACTOR_RE, 'actor must be an email, or email[agent]');
export const idempotencyKey = z
  .string()
  .regex(IDEMPOTENCY_KEY_RE, 'idempotency_key must be 1-128 characters of [A-Za-z0-9._:-]');
export const revision = z
  .string()
  .regex(REVISION_RE, 'revision must be a 40-character hex commit id');
export const commitOid = z.string().regex(/^[0-9a-f]{4,40}$/, 'must be a hex commit id');

/** The person behind an actor: `a@b[claude]` → `a@b`. */
export function personOf(a: string): string {
  const i = a.indexOf('[');
  return i < 0 ? a : a.slice(0, i);
}
