import type { ConfigDoc } from '../schema/config.js';
import type { AskDoc, LaneDoc, Scope } from '../schema/lane.js';
import type { OpLog } from '../store/index.js';
import type { CowMap } from './cow-map.js';

// The shape of a Lane's state (lane-state.ts folds it, lane-guards.ts checks ops against it).

// The maps are CowMaps (cow-map.ts): clone() forks them instead of copying them, and apply()
// changes the draft's in place.
export interface LaneState {
  lane: LaneDoc | null;
  asks: CowMap<string, AskDoc>;
  /** ask_id → ids of asks that depend on it (for blocked/unblocked updates). */
  dependents: CowMap<string, OpLog<string>>;
  /**
   * Ops the guarded fold refused (they stay in the log): a claim that lost to a holder, a
   * release or answer not from the holder, a reused idempotency key. Every replica folds the
   * same log in the same order, so every replica shows the same list. An OpLog (append-only,
   * shared with the snapshots before it, store/op-log.ts): one refusal costs O(1), not a copy
   * of the list.
   */
  rejected: OpLog<RejectedOp>;
  /** (actor, idempotency key) → the request hash of its first use in publication order. */
  keys: CowMap<string, string>;
  /** Follow-up Asks of refused answers: never trusted, never posted. */
  suppressed: CowMap<string, true>;
  /**
   * Follow-up Ask id → the Ask whose honoured answer derived it. The fold posts follow-ups
   * itself, from the answer (follow-ups.ts); the daemon's recorded ask_post is then a no-op.
   */
  derived: CowMap<string, string>;
  /** The Asks in `derived`'s values: whose honoured answer derived at least one follow-up. */
  derivers: CowMap<string, true>;
  /** Asks whose honoured answer listed its follow-ups (out.follow_ups, even empty). */
  listed: CowMap<string, true>;
  /**
   * The repository's roles over time (owners, repo-wide Ask kinds), for the scope checks of
   * the guarded fold; null where the fold cannot see refs/zz/config (then owner-derived
   * rights are trusted, as the daemon's own check was).
   */
  roles: RoleSource | null;
  /**
   * Ask ids of ask_posts the fold refused for what a merge can cause (a revoked role, a closed
   * Lane, a renamed follow-up), not for what no zz writes. A post that names one in depends_on
   * saw it on its own machine, so it is not refused as naming an unknown Ask (lane-guards.ts).
   */
  refusedPosts: CowMap<string, true>;
  /**
   * Asks that an answer resolving them (complete, grant) was given to but refused by the fold
   * (a lost claim, a conflicting answer): a claim of an Ask depending on one was made where it
   * was resolved, so it is not refused as blocked (lane-guards.ts).
   */
  refusedResolutions: CowMap<string, true>;
  /**
   * Ask kinds a refused lane_propose of this Lane defined (two machines proposed one Lane id,
   * and the other's stands): posts of them were made where the kind existed, so they are not
   * refused as of an unknown kind (lane-guards.ts).
   */
  refusedKinds: CowMap<string, true>;
  /**
   * The Lane's coordinators and maintainers whose role an owner stands behind (rooted-roles.ts):
   * only they land code and write rungs, only their reviews let a changeset land. Replaced,
   * never mutated.
   */
  rooted: RootedRoles;
  /**
   * The roots (owners, rooted-roles.ts) of each honoured lane_propose and lane_grant that
   * rooted its roles, by op id; absent: it rooted nobody. The Ladder's fold reads Lane
   * timelines by op (ladder-roles.ts).
   */
  roots: CowMap<string, readonly string[]>;
  /** changeset_review Asks granted by a rooted maintainer or an owner (rooted-roles.ts). */
  rootedReviews: CowMap<string, true>;
  /**
   * The commit each changeset was proposed as (the answer that made it recorded it), by
   * changeset id; the first record stands. A review is of this commit: the changeset's ref
   * moving later (sync fast-forwards it to whatever a remote holds) does not carry the review
   * along, and commit_changeset refuses a ref that no longer names it (changesets.ts).
   */
  changesetCommits: CowMap<string, string>;
}

/**
 * A role conferred by an owner or a rooted coordinator, and the owners it rests on (its roots):
 * it counts only while one of them is an owner now (rooted-roles.ts).
 */
export interface RootedRole {
  actor: string;
  roots: readonly string[];
}

/** A Lane's coordinators and maintainers whose role an owner stands behind (rooted-roles.ts). */
export interface RootedRoles {
  /** The Lane's coordinators by a rooted role (a subset of lane.coordinators), with roots. */
  coordinators: readonly RootedRole[];
  /** The Lane's maintainers by a rooted role (a subset of lane.maintainers), with roots. */
  maintainers: readonly RootedRole[];
}

/**
 * refs/zz/config as it stood when a Lane op was made. The two refs have no common log, so
 * "at that point of the log" is decided by the ops' recorded times (DESIGN §7; see
 * role-timeline.ts for the rule and its hazards). Pure: the same config history gives the
 * same answers on every replica.
 */
export interface RoleSource {
  /** The config as of `time` (an ISO time recorded in an op), or null when unknown. */
  at(time: string): ConfigDoc | null;
  /**
   * The config now: after every config op this clone holds, whatever their times. Rooted roles
   * count only while their root is an owner now (rooted-roles.ts), since op times are claims.
   */
  now(): ConfigDoc | null;
}

export interface RejectedOp {
  op_id: string;
  op: string;
  actor: string;
  reason:
    | 'claim_lost'
    | 'ask_answered'
    | 'ask_cancelled'
    | 'not_claimed'
    | 'not_holder'
    | 'conflicting_answer'
    | 'idempotency_duplicate'
    | 'idempotency_conflict'
    | 'follow_up_of_refused_answer'
    | 'lane_exists'
    | 'ask_exists'
    | 'poster_mismatch'
    | 'scope_denied'
    | 'follow_up_not_derived'
    | 'lane_closed'
    | 'lane_unclosable'
    | 'last_coordinator'
    | 'list_full'
    | 'dependency_unresolved'
    | 'dependency_not_found'
    | 'kind_unknown'
    | 'outcome_not_allowed'
    | 'changeset_not_allowed'
    | 'result_missing'
    | 'lane_full'
    | 'lease_mismatch';
  ask_id?: string;
  /** For claim_lost: who held the Ask when this claim arrived. */
  winner?: string | null;
  /** For lane_closed: who closed the Lane before this op (in fold order). */
  closed_by?: string | null;
  /** For dependency_unresolved and dependency_not_found: the Asks depended on. */
  blocked_by?: string[];
  /** For conflicting_answer: the resolve_conflict Ask raised for the coordinator. */
  resolve_ask_id?: string;
  /** For scope_denied: the role the op needed and its actor did not hold at that point. */
  needed?: Scope | 'coordinator_or_owner' | 'poster_or_coordinator' | 'rooted_coordinator';
}

/** An op a Lane use case decides. */
