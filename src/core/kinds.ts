import { ZzError } from '../errors.js';
import type { Outcome, Scope } from '../schema/lane.js';

// The built-in Ask kinds (DESIGN §1): who may claim and answer them, and which answers fit.
// A Lane (or the repo config) may add kinds with a scope; no other kind may be posted.

export interface KindRule {
  scope: Scope;
  outcomes: readonly Outcome[];
}

export const BUILTIN_KINDS: Readonly<Record<string, KindRule>> = {
  work: { scope: 'member', outcomes: ['complete', 'deny'] },
  changeset_review: { scope: 'maintainer', outcomes: ['grant', 'deny'] },
  submit_changeset: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
  resolve_conflict: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
  ladder_update: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
};

/** Kinds the server posts as follow-ups (workflow.ts); by hand only coordinators post one. */
export const WORKFLOW_KINDS: ReadonlySet<string> = new Set([
  'changeset_review',
  'submit_changeset',
  'resolve_conflict',
]);

/**
 * Kinds whose Ask commit_changeset answers when it lands the changeset (changesets.ts): the
 * only answers that cite a changeset_id (lane-guards.ts refuses any other).
 */
export const LANDING_KINDS: ReadonlySet<string> = new Set(['submit_changeset', 'resolve_conflict']);

/**
 * A kind's entry in a kind table (built-ins, a Lane's or the repo's ask_kinds), own entries
 * only. Hazard: kind names are any `[a-z][a-z0-9_]*`, so a plain lookup of "constructor" or
 * "tostring"-like names finds Object.prototype's members: a hostile replica's Ask of kind
 * "constructor" then looked built in, and reading its `.outcomes` threw in every replica's fold.
 */
export function kindEntry<T>(table: Readonly<Record<string, T>>, kind: string): T | undefined {
  return Object.hasOwn(table, kind) ? table[kind] : undefined;
}

const DEFAULT_RULE: KindRule = { scope: 'member', outcomes: ['complete', 'deny'] };

/** Built-in kinds keep their scope; custom ones take the Lane's, then the repo's, then member. */
export function kindRule(
  kind: string,
  laneKinds: Readonly<Record<string, Scope>>,
  repoKinds: Readonly<Record<string, Scope>> = {},
): KindRule {
  const builtin = kindEntry(BUILTIN_KINDS, kind);
  if (builtin) return builtin;
  const s = kindEntry(laneKinds, kind) ?? kindEntry(repoKinds, kind);
  return s ? { scope: s, outcomes: DEFAULT_RULE.outcomes } : DEFAULT_RULE;
}

/** Every kind an Ask in this Lane may have: built-ins, the repo's, the Lane's. */
export function validKinds(
  laneKinds: Readonly<Record<string, Scope>>,
  repoKinds: Readonly<Record<string, Scope>> = {},
): string[] {
  return [
    ...new Set([
      ...Object.keys(BUILTIN_KINDS),
      ...Object.keys(repoKinds),
      ...Object.keys(laneKinds),
    ]),
  ];
}

/** Refuses a kind the repo and Lane do not define (a misspelled `wrok`), naming the valid ones. */
export function assertKnownKind(
  kind: string,
  laneId: string,
  laneKinds: Readonly<Record<string, Scope>>,
  repoKinds: Readonly<Record<string, Scope>> = {},
): void {
  if (kindEntry(BUILTIN_KINDS, kind) || kindEntry(laneKinds, kind) || kindEntry(repoKinds, kind))
    return;
  const valid = validKinds(laneKinds, repoKinds);
  throw new ZzError(
    'invalid_argument',
    `kind: "${kind}" is not an Ask kind of lane ${laneId}; valid kinds: ${valid.join(', ')} (a Lane adds kinds with ask_kinds)`,
    { field: 'kind', valid_kinds: valid },
  );
}

/**
 * A kind filter (ask_query_claimable, ask_claim_next) names only kinds the Lane can hold: a
 * misspelled `wrok` would otherwise answer "nothing to claim" for ever.
 */
export function assertKnownKinds(
  kinds: readonly string[] | undefined,
  laneId: string,
  laneKinds: Readonly<Record<string, Scope>>,
  repoKinds: Readonly<Record<string, Scope>> = {},
): void {
  for (const kind of kinds ?? []) {
    if (kindEntry(BUILTIN_KINDS, kind) || kindEntry(laneKinds, kind) || kindEntry(repoKinds, kind))
      continue;
    const valid = validKinds(laneKinds, repoKinds);
    throw new ZzError(
      'invalid_argument',
      `kinds: "${kind}" is not an Ask kind of lane ${laneId}; valid kinds: ${valid.join(', ')}`,
      { field: 'kinds', valid_kinds: valid },
    );
  }
}
