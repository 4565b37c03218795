import { isLostClaim } from '../lane-guards.js';
import type { Rejection } from './codecs.js';

// What one sync round reports (engine.ts fills it; the CLI, the daemon's events and the
// dashboard read it): which refs moved how, what the folds refused, what was kept aside.

export interface ClaimLost {
  ref: string;
  ask_id: string | null;
  loser: string;
  winner: string | null;
  op_id: string;
  /**
   * claim_lost: another held the Ask; lane_closed: the Lane was closed first (by closed_by);
   * dependency_unresolved: the Ask was blocked by the Asks in blocked_by.
   */
  reason: 'claim_lost' | 'lane_closed' | 'dependency_unresolved';
  closed_by?: string | null;
  blocked_by?: string[];
  /** See Origin. */
  origin?: Origin;
}

/**
 * Set ('remote') on what a merge refused of the remote's ops, not of ours: a rewritten
 * remote is merged with ours first and its own ops applied after (history-checks.ts), so
 * what its fold refuses is the remote's. Absent: one of this clone's ops.
 */
export type Origin = 'remote';

export type NotPushedWhy = { quarantined: string } | { name_taken_by: string };

export interface SyncReport {
  remote: string;
  /** Pushes only to the authoritative remote; others are fetch-only. */
  authoritative: boolean;
  /** Refs created locally from the remote. */
  adopted: string[];
  fast_forwarded: string[];
  /**
   * `rewritten`: the remote no longer held the value synced there (`synced`), or folded a rival
   * history before it (`wrapped`: a merge whose first parent is the rival); the merge keeps ours
   * first and applies the remote's `remote_ops` after (history-checks.ts). Its parents are
   * [local tip, remote tip]; after a wrap of what the remote had gone on to publish from what
   * was synced, [that continuation with our `local_ops` merged after it, remote tip]
   * (merge.ts answerBase). `local_ops` is otherwise 0 after a rewrite.
   */
  merged: Array<{
    ref: string;
    commit: string;
    local_ops: number;
    rewritten?: { synced: string; remote_ops: number; wrapped?: true };
  }>;
  pushed: string[];
  /** Refs missing on the remote that we had confirmed there before: recreated. */
  recreated: string[];
  claims_lost: ClaimLost[];
  /** Local-only ops other than lost claims that the guarded fold refuses (at merge, or under roles this round brought in). */
  rejected: Array<Rejection & { ref: string; origin?: Origin }>;
  /**
   * This clone's own ops (written here: their replica is this clone's) that a Lane's fold
   * accepted at the local tip before this round and refuses where the round leaves it, beside
   * what `rejected` and `claims_lost` list of the ops a merge applied. A fast-forward can do
   * it: a Lane deleted on the remote and recreated by another machine's rival proposal is
   * answered ours first, that machine's answer back folds its own first, and fast-forwarding
   * to that answer leaves our published lane_propose refused (`lane_exists`) on every machine.
   */
  newly_refused: Array<Rejection & { ref: string }>;
  /**
   * `kept: false`: a name outside zz's layout, reported and never kept here (no
   * refs/zz-quarantine/ copy: such a name can conflict with another, `lanes/junk/x` beside
   * `lanes/junk`, and break every later fetch); an owner deletes it on the remote.
   */
  quarantined: Array<{ ref: string; commit: string; reason: string; kept?: false }>;
  /**
   * Refs whose remote tip is the one already quarantined here, not judged again this round
   * (engine.ts, "Unchanged since refused"): how many. They stay quarantined.
   */
  still_quarantined: number;
  /**
   * Set when the remote holds names outside zz's layout: how many (`count`), how many of them
   * `quarantined` lists (`shown`, the first ones: remote-names.ts OUTSIDE_LAYOUT_SHOWN), and
   * `truncated` when that is not all of them.
   */
  outside_layout: { count: number; shown: number; truncated: boolean } | null;
  /**
   * Local refs not pushed because what they would bring fails the checks every other machine
   * makes on import (an op not signed by a registered key where signatures are required, an
   * owner-level op not signed by an owner's key): pushed, it would quarantine the remote's ref
   * for the whole team. Kept here; pushed once it passes (its key registered, say).
   */
  held_back: Array<{
    ref: string;
    commit: string;
    reason: string;
    /**
     * Set when the hold clears by itself: an op of this clone's dated ahead of this clock
     * (written while it ran ahead), pushed by the first sync once the clock reaches `until`.
     * Absent: it passes only once something changes (a key registered, say).
     */
    until?: string;
  }>;
  /**
   * Local refs with work the remote lacks, not pushed: the remote's tip (`quarantined`) was
   * refused, and they stay here until an owner replaces that tip (README, "A quarantined ref");
   * or the remote holds a ref whose name conflicts with this one (`name_taken_by`:
   * `lanes/web/x` where we push `lanes/web`), which git cannot hold beside it, until an owner
   * deletes that ref. Pushed, either would fail the whole atomic push every round.
   */
  not_pushed: Array<{ ref: string; commit: string } & NotPushedWhy>;
  /** Non-entity refs whose local and remote values differ and cannot be merged. */
  diverged: string[];
  attempts: number;
  /** Set when the remote could not be reached; local state is untouched. */
  offline: string | null;
  /**
   * Owners before this round that are not after it, set when there are any: `merged` when
   * refs/zz/config diverged (two clones each ran `zz init`: the remote's repo_init stands),
   * else a revocation fast-forwarded in. The person who lost ownership learns it otherwise
   * only when an owner-only call is refused.
   */
  owners_lost: { actors: string[]; owners: string[]; merged: boolean } | null;
}

/** A report with nothing in it yet. */
export function emptyReport(remote: string, authoritative: boolean): SyncReport {
  return {
    remote,
    authoritative,
    adopted: [],
    fast_forwarded: [],
    merged: [],
    pushed: [],
    recreated: [],
    claims_lost: [],
    rejected: [],
    newly_refused: [],
    quarantined: [],
    still_quarantined: 0,
    outside_layout: null,
    held_back: [],
    not_pushed: [],
    diverged: [],
    attempts: 0,
    offline: null,
    owners_lost: null,
  };
}

/** What a merge of `ref` refused: lost claims as claims_lost, the rest as rejected. */
export function reportRefusals(
  report: SyncReport,
  ref: string,
  rejected: readonly Rejection[],
  origin?: Origin,
): void {
  const from = origin ? { origin } : {};
  for (const r of rejected) {
    if (isLostClaim(r)) {
      report.claims_lost.push({
        ref,
        ask_id: r.ask_id ?? null,
        loser: r.actor,
        winner: r.winner ?? null,
        op_id: r.op_id,
        reason:
          r.reason === 'lane_closed' || r.reason === 'dependency_unresolved'
            ? r.reason
            : 'claim_lost',
        ...(r.reason === 'lane_closed' ? { closed_by: r.closed_by ?? null } : {}),
        ...(r.blocked_by === undefined ? {} : { blocked_by: r.blocked_by }),
        ...from,
      });
    } else report.rejected.push({ ...r, ref, ...from });
  }
}
