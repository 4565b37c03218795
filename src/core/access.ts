import { ZzError } from '../errors.js';
import type { ConfigDoc } from '../schema/config.js';
import type { LaneDoc, Scope } from '../schema/lane.js';
import type { LaneState } from './lane-state-types.js';
import { rootedNow } from './rooted-roles.js';

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

/** What isRootedCoordinator reads of a Lane: its document and its rooted roles. */
export type RootedLane = { lane: LaneDoc; rooted: LaneState['rooted'] };

/** A read Lane (lanes.ts readLane) as isRootedCoordinator takes it. */
export function rootedOf(snap: { lane: LaneDoc; state: Pick<LaneState, 'rooted'> }): RootedLane {
  return { lane: snap.lane, rooted: snap.state.rooted };
}

/**
 * Whether `actor` coordinates the Lane by a role an owner stands behind (rooted-roles.ts): an
 * owner who coordinates it, or a coordinator by a chain of grants from an owner who is an owner
 * now (`config`: demoting an owner unroots what rests on them). What landing
 * code (commit_changeset) and writing Ladder rungs (ladder_write_rung) need; a Lane a non-owner
 * proposed is theirs to run inside, and reaches no further until an owner grants the role.
 */
export function isRootedCoordinator(s: RootedLane, config: ConfigDoc, actor: string): boolean {
  return (
    isCoordinator(s.lane, config, actor) &&
    (isOwner(config, actor) || rootedNow(s.rooted.coordinators, actor, (x) => isOwner(config, x)))
  );
}

/**
 * Every actor isRootedCoordinator accepts for the Lane under `config`: what lane views list as
 * rooted_coordinators, so a worker offered the landing tools (work/open-loop.ts), or passing
 * over Asks it could not land (work/worker.ts), reads the daemon's own rule, not a restatement.
 * Hence an owner who coordinates the Lane by a grant no owner made (or, in _repo, by being an
 * owner) is listed: the daemon lets them land. Rooted roles first, in the fold's order.
 */
export function rootedCoordinators(s: RootedLane, config: ConfigDoc): string[] {
  const candidates = new Set([
    ...s.rooted.coordinators.map((r) => r.actor),
    ...s.lane.coordinators,
    ...(s.lane.lane_id === '_repo' ? config.owners : []),
  ]);
  return [...candidates].filter((actor) => isRootedCoordinator(s, config, actor));
}

/** The refusal of `what` to a caller whose coordinatorship of the Lane is not rooted. */
export function notRootedError(
  s: RootedLane,
  config: ConfigDoc,
  actor: string,
  what: string,
): ZzError {
  const id = s.lane.lane_id;
  if (!isCoordinator(s.lane, config, actor)) {
    return new ZzError(
      'forbidden',
      `only the coordinators of lane ${id} may ${what}; ask an owner (or a coordinator an owner stands behind) to run \`zz lane grant --lane-id ${id} --grantee '${actor}' --role coordinator\``,
      {
        scope: 'coordinator',
      },
    );
  }
  return new ZzError(
    'forbidden',
    `${actor} coordinates lane ${id} by a role no owner granted (a Lane a non-owner proposes is run by its proposer, but reaches no further), so it may not ${what}; ask an owner to run \`zz lane grant --lane-id ${id} --grantee '${actor}' --role coordinator\``,
    { scope: 'rooted_coordinator' },
  );
}
