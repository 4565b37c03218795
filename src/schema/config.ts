import { z } from 'zod';
import { actor } from './ids.js';
import { askKind, scope } from './lane.js';

// refs/zz/config → config.json: who owns the repo and how it is shared.
export const FORMAT_VERSION = 1;

export const configDoc = z.strictObject({
  format: z.literal(FORMAT_VERSION),
  owners: z.array(actor),
  visibility: z.enum(['private', 'public']),
  default_branch: z.string(),
  ask_kinds: z.record(askKind, scope),
  created_by: actor,
  created_at: z.string(),
});
export type ConfigDoc = z.infer<typeof configDoc>;
