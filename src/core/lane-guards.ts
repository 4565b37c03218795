import { createHash } from 'node:crypto';
import type { ConfigDoc } from '../schema/config.js';
import type { AskDoc, LaneDoc } from '../schema/lane.js';
import type { LaneOp } from '../schema/lane-ops.js';
import { LIMITS } from '../schema/limits.js';
import { FOLLOW_UP_REASONS, SERVER_ACTOR } from './follow-ups.js';
import { BUILTIN_KINDS, kindEntry, kindRule, LANDING_KINDS, WORKFLOW_KINDS } from './kinds.js';
import { finishesWorkInHand } from './lane-closed.js';
import type { LaneState, RejectedOp } from './lane-state-types.js';
import { rootedCoordinatorAt } from './rooted-roles.js';
import { isResolved, leaseEndMs } from './views.js';

// What may apply to a Lane's state: the guards applyLaneOp (lane-state.ts) runs on every op
// before applying it. guard() checks the op against the state (claims, answers, scopes,
// idempotency keys); roleGuard() checks who may do it (owner, coordinator, the Ask's holder).

export type Refusal = Omit<RejectedOp, 'op_id' | 'op' | 'actor'>;

/**
 * When a claim's lease ends, as the fold derives it: its time plus min(lease_seconds,
 * LIMITS.leaseSeconds) — what asks.ts writes, to the millisecond. A claim without
 * lease_seconds (older zz) keeps its recorded end if it lies within the cap of its time. Null
 * when the recorded end says otherwise: the guard refuses the claim (`lease_mismatch`).
 */
export function claimLeaseEnd(op: Extract<LaneOp, { op: 'ask_claim' }>): string | null {
  const at = Date.parse(op.time);
  const recorded = Date.parse(op.out.lease_expires_at);
  const secs = op.args.lease_seconds;
  if (secs === undefined) {
    const ok = recorded >= at && recorded <= at + LIMITS.leaseSeconds * 1000;
    return ok ? new Date(recorded).toISOString() : null;
  }
  const end = at + Math.min(secs, LIMITS.leaseSeconds) * 1000;
  return recorded === end ? new Date(end).toISOString() : null;
}

// The guarded apply of DESIGN §7: ops from anywhere (this daemon, a merge of another
// replica's work) are re-checked against the state they land on. The daemon's decide()
// refuses the same cases up front, so locally written ops always pass; these guards matter
// when sync folds two histories together. A refused op changes nothing but stays in the log.
export function guard(s: LaneState, op: LaneOp): Refusal | null {
  if (op.key !== undefined) {
    const prior = s.keys.get(`${op.actor}\0${op.key}`);
    if (prior !== undefined) {
      return {
        reason: prior === op.request_hash ? 'idempotency_duplicate' : 'idempotency_conflict',
      };
    }
  }
  switch (op.op) {
    case 'lane_propose':
      // Two replicas proposing one lane id (two `zz init`s each making `_repo`): the first
      // in publication order stands.
      return s.lane === null ? null : { reason: 'lane_exists' };
    case 'ask_post': {
      const id = op.out.ask_id;
      // First, before any refusal that counts the id as a refused post (s.refusedPosts excuses
      // its dependents): a post that reuses an Ask's id would overwrite that Ask (its claim,
      // its answer, its poster), and no zz writes one (ids are new; a recorded follow-up the
      // fold derived never reaches here). Like a second lane_propose, the first stands.
      if (s.asks.has(id)) return { reason: 'ask_exists', ask_id: id };
      // The poster is the op's actor (asks.ts writes caller.actor for both); only the server's
      // own records (follow-ups, resolve_conflict) name zz. A peer's posted_by is a claim: one
      // naming another person gave that person an Ask, and the right to cancel it.
      const by = op.args.posted_by;
      if (by !== undefined && by !== op.actor && by !== SERVER_ACTOR) {
        return { reason: 'poster_mismatch', ask_id: id };
      }
      if (s.suppressed.has(id)) return { reason: 'follow_up_of_refused_answer', ask_id: id };
      // A recorded answer follow-up that no honoured answer derived: a second one for one
      // answer, or one for an answer that was never given. Answers recorded without
      // out.follow_ups (before the daemon listed them) keep their recorded follow-ups.
      const o = op.args.origin;
      if (
        o &&
        !s.derived.has(id) &&
        FOLLOW_UP_REASONS.has(o.reason) &&
        op.args.posted_by === SERVER_ACTOR
      ) {
        const origin = s.asks.get(o.ask_id);
        const derivedHere = s.derivers.has(o.ask_id);
        // An honoured answer that listed its follow-ups owns them all: a stray record for its
        // Ask (a refused answer's second one, from another replica) is not one of them.
        if (derivedHere || origin?.state !== 'answered' || s.listed.has(o.ask_id)) {
          return { reason: 'follow_up_not_derived', ask_id: id };
        }
      }
      // A closed Lane takes no new Asks (lane-closed.ts); the server's own records (a
      // follow-up of an answer to work in hand, a commit's resolve_conflict) it still takes,
      // as the daemon does.
      if (s.lane?.closed && !(o && op.args.posted_by === SERVER_ACTOR)) return closed(s, id);
      return postRefusal(s, op);
    }
    case 'ask_claim': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return null;
      // A peer's out.lease_expires_at is not trusted: one dated 2099 held an Ask for good.
      if (claimLeaseEnd(op) === null) return { reason: 'lease_mismatch', ask_id: ask.ask_id };
      if (ask.state === 'answered') return { reason: 'ask_answered', ask_id: ask.ask_id };
      if (ask.state === 'cancelled') return { reason: 'ask_cancelled', ask_id: ask.ask_id };
      // The lease is judged at the time the claim recorded, not at fold time.
      const lapsed = leaseEndMs(ask) <= Date.parse(op.time);
      // A closed Lane renews a live claim and hands out no other (lane-closed.ts), whichever
      // replica the claim was made on: in fold order, a claim after the close loses, even one
      // made offline before it (published after it, it was never work in hand for anyone).
      // The workflow's follow-ups of work in hand are claimed as on an open Lane.
      if (
        s.lane?.closed &&
        !finishesWorkInHand(ask) &&
        (ask.state !== 'claimed' || ask.holder !== op.actor || lapsed)
      ) {
        return closed(s, ask.ask_id);
      }
      const blocked = blockedAt(s, ask);
      if (blocked.length > 0) {
        return { reason: 'dependency_unresolved', ask_id: ask.ask_id, blocked_by: blocked };
      }
      if (ask.state !== 'claimed' || ask.holder === op.actor) return null;
      if (lapsed) return null;
      return { reason: 'claim_lost', ask_id: ask.ask_id, winner: ask.holder };
    }
    case 'ask_release': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return null;
      if (ask.state !== 'claimed') return { reason: 'not_claimed', ask_id: ask.ask_id };
      // Coordinators may release a stuck claim: roleGuard decides who is one.
      return null;
    }
    case 'ask_answer': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return null;
      // Before the rest: an answer no kind allows is refused as what it is, and raises no
      // resolve_conflict (kinds.ts: custom kinds take complete or deny, whatever their scope).
      if (!kindRule(ask.kind, s.lane?.ask_kinds ?? {}).outcomes.includes(op.args.outcome)) {
        return { reason: 'outcome_not_allowed', ask_id: ask.ask_id };
      }
      const unfit = changesetRefusal(ask, op);
      if (unfit) return { reason: unfit, ask_id: ask.ask_id };
      if (ask.state === 'answered') {
        // A full Lane takes no resolve_conflict Ask: the second answer is refused all the same.
        if (!hasRoom(s, 1)) return { reason: 'lane_full', ask_id: ask.ask_id };
        return {
          reason: 'conflicting_answer',
          ask_id: ask.ask_id,
          resolve_ask_id: conflictAskId(op),
        };
      }
      if (ask.state === 'cancelled') return { reason: 'ask_cancelled', ask_id: ask.ask_id };
      if (ask.holder !== op.actor) {
        return { reason: 'not_holder', ask_id: ask.ask_id, winner: ask.holder };
      }
      // On a closed Lane only a live claim is answered: a lapsed lease is not the holder's
      // any more, and the closed Lane hands out no new one (lane-closed.ts).
      if (s.lane?.closed && !finishesWorkInHand(ask) && leaseEndMs(ask) <= Date.parse(op.time)) {
        return closed(s, ask.ask_id);
      }
      // The follow-ups it records must fit (the daemon refuses the answer alike). The fold
      // derives its own (lane-state.ts), at most one answer's worth past the cap.
      const followUps = op.out?.follow_ups?.length ?? 0;
      return hasRoom(s, followUps) ? null : { reason: 'lane_full', ask_id: ask.ask_id };
    }
    case 'lane_add_related': {
      const lane = s.lane;
      if (!lane || lane.related_lanes.includes(op.args.related_lane_id)) return null;
      return lane.related_lanes.length >= LIMITS.list ? { reason: 'list_full' } : null;
    }
    case 'lane_grant': {
      const lane = s.lane;
      if (!lane) return null;
      const list = op.args.role === 'maintainer' ? lane.maintainers : lane.coordinators;
      const has = list.includes(op.args.grantee);
      if (!op.args.revoke)
        return !has && list.length >= LIMITS.list ? { reason: 'list_full' } : null;
      // Two coordinators each revoking the other on their own replica: the second revoke in
      // fold order would leave the Lane with nobody to run it (the daemon refuses it alike).
      const last = op.args.role === 'coordinator' && has && list.length === 1;
      return last && lane.lane_id !== '_repo' ? { reason: 'last_coordinator' } : null;
    }
    case 'lane_close':
      // Lane _repo always exists open (DESIGN §1); the daemon refuses to close it.
      return s.lane?.lane_id === '_repo' ? { reason: 'lane_unclosable' } : null;
    case 'ask_cancel':
    case 'commit_changeset':
      return null;
  }
}

// Roles re-checked as they stood at that point of the log (DESIGN §7): an op needs the role
// the daemon would have demanded when it was written. Lane roles (coordinators, maintainers,
// the Lane's Ask kinds) come from this Lane's own fold, so a lane_grant revoke published
// before an op defeats it; owners and the repo's Ask kinds come from refs/zz/config as of
// the op's recorded time (s.roles). A refused op changes nothing and is shown as scope_denied
// on every replica. Not checked: lane_add_related (zz before the rooted rule let the related
// Lane's coordinators add it, and refusing those here would drop links on upgrade: sync checks
// what arrives, core/sync/related-check.ts) and lane_propose (any member may propose). Landing
// records (commit_changeset and its answer) need a coordinator rooted in an owner
// (rooted-roles.ts).
// Role checks as plain functions, not closures made per op: the guard runs for every op of
// every fold (5,000 ops on a cold load), and the config at an op's time is looked up only by
// the checks that need it.
type RolesAt = ConfigDoc | null;

const configAt = (s: LaneState, op: LaneOp): RolesAt => (s.roles ? s.roles.at(op.time) : null);

function isOwner(s: LaneState, config: RolesAt, a: string): boolean {
  // Unknown roles (no config source): owner-derived rights are trusted, as before.
  return s.roles === null || (config?.owners.includes(a) ?? false);
}

function isCoordinator(s: LaneState, lane: LaneDoc, op: LaneOp, a: string): boolean {
  return (
    lane.coordinators.includes(a) || (lane.lane_id === '_repo' && isOwner(s, configAt(s, op), a))
  );
}

function deny(needed: NonNullable<RejectedOp['needed']>, askId?: string): Refusal {
  return { reason: 'scope_denied', needed, ...(askId === undefined ? {} : { ask_id: askId }) };
}

export function roleGuard(s: LaneState, op: LaneOp): Refusal | null {
  const lane = s.lane;
  if (!lane) return null;
  const a = op.actor;
  switch (op.op) {
    case 'ask_post':
      // A workflow kind is posted by the server as the follow-up of an answer (origin set);
      // by hand only by a coordinator.
      if (WORKFLOW_KINDS.has(op.args.kind) && !op.args.origin && !isCoordinator(s, lane, op, a)) {
        return deny('coordinator', op.out.ask_id);
      }
      return null;
    case 'ask_claim':
    case 'ask_answer': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return null;
      const config = configAt(s, op);
      const scope = kindRule(ask.kind, lane.ask_kinds, config?.ask_kinds ?? {}).scope;
      const holds =
        scope === 'member' ||
        (scope === 'maintainer' ? lane.maintainers.includes(a) : isCoordinator(s, lane, op, a));
      if (!holds) return deny(scope, ask.ask_id);
      // The answer commit_changeset records beside its landing (out.commit) says code landed:
      // like the landing itself, it stands only from a rooted coordinator (rooted-roles.ts).
      if (
        op.op === 'ask_answer' &&
        op.out?.commit !== undefined &&
        !rootedCoordinatorAt(s, a, op.time)
      ) {
        return deny('rooted_coordinator', ask.ask_id);
      }
      return null;
    }
    case 'ask_release': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask || ask.holder === a || isCoordinator(s, lane, op, a)) return null;
      return { reason: 'not_holder', ask_id: ask.ask_id, winner: ask.holder };
    }
    case 'ask_cancel': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask || ask.posted_by === a) return null;
      return isCoordinator(s, lane, op, a) ? null : deny('poster_or_coordinator', ask.ask_id);
    }
    case 'lane_grant':
    case 'lane_close':
      return isCoordinator(s, lane, op, a) || isOwner(s, configAt(s, op), a)
        ? null
        : deny('coordinator_or_owner');
    case 'commit_changeset':
      // Landing code is a repo-wide effect: a coordinatorship no owner stands behind (a Lane a
      // member proposed) records no landing on any replica (rooted-roles.ts).
      if (!isCoordinator(s, lane, op, a)) return deny('coordinator');
      return rootedCoordinatorAt(s, a, op.time) ? null : deny('rooted_coordinator');
    case 'lane_propose':
    case 'lane_add_related':
      return null;
  }
}

/**
 * Whether `n` more Asks fit in the Lane (LIMITS.asksPerLane). Locally (asks.ts, changesets.ts)
 * and in the fold alike: no Ask is ever deleted, so a full Lane stays full.
 */
export function hasRoom(s: LaneState, n: number): boolean {
  return n === 0 || s.asks.size + n <= LIMITS.asksPerLane;
}

/**
 * An ask_post that no local call would have written (asks.ts refuses each alike): an unknown
 * kind, a dependency on an Ask that does not exist, one Ask past LIMITS.asksPerLane. In fold
 * order: what is missing here is missing on every replica that folds this log.
 *
 * Upgrade-safe by design (the fold runs again over histories already stored): a post by a local
 * call named dependencies its own machine held, so each was posted before it in fold order
 * (its commit descends from theirs). A merge may have refused that post since (a revoked
 * coordinator's workflow Ask, a closed Lane): such an id is in s.refusedPosts and not refused
 * here, or this rule would drop, on upgrade, Asks that exist today. Kinds: a repo's kinds are
 * set at repo_init and a Lane's at lane_propose, so they stand from the first op on; a kind
 * only a refused lane_propose of this Lane defined (two machines proposed one id) is one its
 * posts saw. Where the fold cannot see refs/zz/config (s.roles null, or no config at the op's
 * time), the repo's kinds are unknown and no kind is refused. Hazard: zz before 2026-12-01
 * (7d61eb2) posted any kind; such Asks in a history it wrote are refused here on upgrade.
 */
function postRefusal(s: LaneState, op: Extract<LaneOp, { op: 'ask_post' }>): Refusal | null {
  const id = op.out.ask_id;
  const kind = op.args.kind;
  if (
    s.lane &&
    !kindEntry(BUILTIN_KINDS, kind) &&
    !kindEntry(s.lane.ask_kinds, kind) &&
    !s.refusedKinds.has(kind) &&
    s.roles
  ) {
    const config = s.roles.at(op.time);
    if (config && !kindEntry(config.ask_kinds, kind)) return { reason: 'kind_unknown', ask_id: id };
  }
  const missing = (op.args.depends_on ?? []).filter(
    (d) => !s.asks.has(d) && !s.refusedPosts.has(d),
  );
  if (missing.length > 0)
    return { reason: 'dependency_not_found', ask_id: id, blocked_by: missing };
  return hasRoom(s, 1) ? null : { reason: 'lane_full', ask_id: id };
}

/**
 * The dependencies that block a claim of `ask` at this point of the fold (asks.ts refuses the
 * claim alike, `dependency_unresolved`). Upgrade-safe like postRefusal: a claim a local call
 * made saw each dependency resolved, by an answer that is before it in fold order; a merge may
 * have refused that answer since (it lost its claim, another answer came first), so a
 * dependency some refused answer resolved (s.refusedResolutions) does not block, or this rule
 * would take back, on upgrade, claims and the work answered on them that stand today.
 */
function blockedAt(s: LaneState, ask: AskDoc): string[] {
  if (ask.depends_on.length === 0) return ask.depends_on;
  // A dependency whose post the merge refused (its poster's role revoked first elsewhere) was
  // there, and perhaps resolved, on the claimer's machine: as for a refused answer, the claim
  // stands (found in review: only answers were excused, and an answer to a refused post is a
  // no-op that never reached refusedResolutions).
  return ask.depends_on.filter(
    (d) => !isResolved(s.asks.get(d)) && !s.refusedResolutions.has(d) && !s.refusedPosts.has(d),
  );
}

/**
 * What an answer carries that asks.ts (askAnswer) and changesets.ts (commitChangeset) never
 * write: a changeset made by the answer (args.changeset, out.changeset_id) on anything but a
 * `work` Ask answered complete (`changeset_not_allowed`); a changeset_id cited (commit_changeset's
 * answer) on anything but a landing Ask answered complete (alike); a `work` Ask completed with
 * neither a changeset nor a result (`result_missing`; askAnswer records an absent result as
 * null). Like outcome_not_allowed, checked before the Ask's state: such an answer raises no
 * resolve_conflict and excuses nothing after it (lane-state.ts NEVER_WRITTEN).
 *
 * Upgrade-safe: askAnswer has refused both since its first version (bffb707, 2026-11-30) and
 * recorded `result: args.result ?? null` from a string input; commitChangeset has answered only
 * LANDING_KINDS, complete, with a result, since it was added (8a3608a); nothing else writes an
 * ask_answer. So no honest history holds an answer refused here.
 */
function changesetRefusal(
  ask: AskDoc,
  op: Extract<LaneOp, { op: 'ask_answer' }>,
): 'changeset_not_allowed' | 'result_missing' | null {
  const a = op.args;
  const complete = a.outcome === 'complete';
  const made = a.changeset !== undefined || op.out?.changeset_id !== undefined;
  const cited = a.changeset_id !== undefined && a.changeset_id !== null;
  if (made && !(ask.kind === 'work' && complete)) return 'changeset_not_allowed';
  if (cited && !(LANDING_KINDS.has(ask.kind) && complete)) return 'changeset_not_allowed';
  if (ask.kind === 'work' && complete && !made && (a.result === undefined || a.result === null)) {
    return 'result_missing';
  }
  return null;
}

/** The refusal of an op a closed Lane does not take: who closed it. */
function closed(s: LaneState, askId: string): Refusal {
  return { reason: 'lane_closed', ask_id: askId, closed_by: s.lane?.closed?.by ?? null };
}

/** A refused claim its maker must hear of (the loser's `claim_lost` event, sync's report). */
export function isLostClaim(r: { op: string; reason: string }): boolean {
  return (
    r.op === 'ask_claim' &&
    (r.reason === 'claim_lost' ||
      r.reason === 'lane_closed' ||
      r.reason === 'dependency_unresolved')
  );
}

/**
 * The id of an Ask the fold itself posts (a follow-up, a resolve_conflict), from what raised
 * it: the same on every replica that folds the same op.
 */
export function derivedAskId(...parts: string[]): string {
  return 'ask-' + createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 10);
}

/** The id of the resolve_conflict Ask the fold raises for `op`. */
function conflictAskId(op: LaneOp): string {
  return derivedAskId('resolve_conflict', op.id);
}
