import type { Outcome, Scope } from '../schema/lane.js';

// The built-in Ask kinds (DESIGN §1): who may claim and answer them, and which answers fit.
// A Lane (or the repo config) may add kinds with a scope; unknown kinds default to member.

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

const DEFAULT_RULE: KindRule = { scope: 'member', outcomes: ['complete', 'deny'] };

/** Built-in kinds keep their scope; custom ones take the Lane's, then the repo's, then member. */
export function kindRule(
  kind: string,
  laneKinds: Readonly<Record<string, Scope>>,
  repoKinds: Readonly<Record<string, Scope>> = {},
): KindRule {
  const builtin = BUILTIN_KINDS[kind];
  if (builtin) return builtin;
  const s = laneKinds[kind] ?? repoKinds[kind];
  return s ? { scope: s, outcomes: DEFAULT_RULE.outcomes } : DEFAULT_RULE;
}
