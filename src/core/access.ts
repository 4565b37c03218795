import { ZzError } from '../errors.js';
import type { ConfigDoc } from '../schema/config.js';
import type { LaneDoc, Scope } from '../schema/lane.js';

// Who may do what (DESIGN §3, scope rules). Roles match actors exactly: an agent
// `you@x[claude]` does not inherit `you@x`'s roles until someone grants them to it.

export interface Caller {
  actor: string;
}

export function requireCaller(caller: Caller | null): Caller {
  if (!caller) throw new ZzError('unauthorized', 'this call needs a bearer token (run `zz login`)');
  return caller;
}

/** `actor`/`from` arguments are claims about who is calling; they must match the token. */
export function assertSelf(caller: Caller, value: string | undefined, field: string): void {
  if (value !== undefined && value !== caller.actor) {
    throw new ZzError(
      'forbidden',
      `${field} "${value}" does not match the token's actor "${caller.actor}"`,
    );
  }
}

export function isOwner(config: ConfigDoc, actor: string): boolean {
  return config.owners.includes(actor);
}

export function isCoordinator(lane: LaneDoc, config: ConfigDoc, actor: string): boolean {
  return lane.coordinators.includes(actor) || (lane.lane_id === '_repo' && isOwner(config, actor));
}

export function isMaintainer(lane: LaneDoc, actor: string): boolean {
  return lane.maintainers.includes(actor);
}

export function inScope(scope: Scope, lane: LaneDoc, config: ConfigDoc, actor: string): boolean {
  if (scope === 'member') return true;
  if (scope === 'maintainer') return isMaintainer(lane, actor);
  return isCoordinator(lane, config, actor);
}

export function scopeDenied(scope: Scope, lane: LaneDoc, what: string): ZzError {
  const who = scope === 'maintainer' ? 'maintainers' : 'coordinators';
  return new ZzError('forbidden', `only the ${who} of lane ${lane.lane_id} may ${what}`, { scope });
}
