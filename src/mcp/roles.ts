import { repoState, type Caller, type ZzRepo } from '../core/index.js';
import type { ToolDef } from '../tools/index.js';

// Which tools a caller sees. Listing is a courtesy (a model should not be offered calls that can
// only fail with 403); enforcement stays in core, which checks every call whatever was listed.

export type RequiredRole = 'owner' | 'coordinator';

/** Tools only some roles can use. Owners coordinate lane _repo, so 'coordinator' includes them. */
export const ROLE_REQUIREMENTS: Readonly<Record<string, RequiredRole>> = {
  role_grant: 'owner',
  lane_grant: 'coordinator',
  commit_changeset: 'coordinator',
  ladder_write_rung: 'coordinator',
};

export interface CallerRoles {
  owner: boolean;
  coordinator_of: readonly string[];
}

export function requiredRole(tool: ToolDef): RequiredRole | null {
  return ROLE_REQUIREMENTS[tool.name] ?? null;
}

/** A filter for createMcpServer's `allow` from a caller's roles (null caller: public reads only). */
export function toolFilterFor(roles: CallerRoles | null): (tool: ToolDef) => boolean {
  return (tool) => {
    if (!roles) return tool.publicRead === true;
    const need = requiredRole(tool);
    if (need === 'owner') return roles.owner;
    if (need === 'coordinator') return roles.owner || roles.coordinator_of.length > 0;
    return true;
  };
}

/** The `allow` filter for this caller on this repository, from core's repoState. */
export async function allowForCaller(
  repo: ZzRepo,
  caller: Caller | null,
): Promise<(tool: ToolDef) => boolean> {
  if (!caller) return toolFilterFor(null);
  const { roles } = await repoState(repo, caller);
  return toolFilterFor(roles);
}
