import { ZzError } from '../errors.js';
import { isOwner, requireCaller, type Caller } from './access.js';
import type { TokenInfo, TokenStore } from './token-store.js';
import type { ZzRepo } from './zz-repo.js';

// Who holds tokens on this machine, and revoking them, as tools (the dashboard's Agents view
// and any client). Owners see and revoke every token; anyone else sees only their own and their
// agents' (`you[name]`). Token secrets never leave the store: only actor, name and times.

const ACTIVE_MS = 15 * 60 * 1000;

export type TokenListEntry = TokenInfo & { active: boolean };

const mineOrMyAgents = (me: string, actor: string) =>
  actor === me || (actor.startsWith(`${me}[`) && actor.endsWith(']'));

async function callerIsOwner(repo: ZzRepo, actor: string): Promise<boolean> {
  const config = (await repo.config.read()).state.config;
  return !!config && isOwner(config, actor);
}

export async function tokenList(
  repo: ZzRepo,
  callerIn: Caller | null,
  tokens: TokenStore,
): Promise<{ tokens: TokenListEntry[]; all: boolean }> {
  const caller = requireCaller(callerIn);
  const all = await callerIsOwner(repo, caller.actor);
  const now = repo.clock().getTime();
  const list = (await tokens.list())
    .filter((t) => all || mineOrMyAgents(caller.actor, t.actor))
    .map((t) => ({
      ...t,
      active: t.last_used_at !== null && now - Date.parse(t.last_used_at) < ACTIVE_MS,
    }))
    .sort((a, b) => (b.last_used_at ?? '').localeCompare(a.last_used_at ?? ''));
  return { tokens: list, all };
}

export async function tokenRevoke(
  repo: ZzRepo,
  callerIn: Caller | null,
  tokens: TokenStore,
  args: { actor: string; name?: string | undefined },
): Promise<{ revoked: number }> {
  const caller = requireCaller(callerIn);
  if (!(await callerIsOwner(repo, caller.actor)))
    throw new ZzError('forbidden', 'only an owner may revoke tokens');
  const revoked = await tokens.revoke(
    args.name === undefined ? args.actor : { actor: args.actor, name: args.name },
  );
  if (revoked === 0)
    throw new ZzError(
      'not_found',
      `no token of ${args.actor}${args.name === undefined ? '' : ` named ${args.name}`}`,
    );
  return { revoked };
}
