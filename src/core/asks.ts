import { randomBytes } from 'node:crypto';
import { ZzError } from '../errors.js';
import type { AskDoc, Closure } from '../schema/lane.js';
import { LIMITS } from '../schema/limits.js';
import { inScope, isCoordinator, scopeDenied, type Caller } from './access.js';
import { compareAsks } from './ask-order.js';
import { assertChangesSomething, changesetChanges } from './changesets-policy.js';
import { assertKnownKind, assertKnownKinds, kindRule } from './kinds.js';
import { unexpectedOp, writeOp, type WriteContext } from './write-op.js';
import { followUpsFor, newAskId, WORKFLOW_KINDS } from './workflow.js';
import type { LaneOpSpec, LaneState } from './lane-state.js';
import { assertClaimOnClosed, assertOpen, finishesWorkInHand } from './lane-closed.js';
import { hasRoom } from './lane-guards.js';
import { noSuchLane, readLane, type WriteMeta, type WriteOpts } from './lanes.js';
import {
  leaseEndMs,
  askView,
  assertLiveClaim,
  blockedBy,
  holdsLiveClaim,
  leaseExpired,
  type AskView,
} from './views.js';
import { CHANGESETS_PREFIX, type ZzRepo } from './zz-repo.js';

// Ask use cases: post, claim (one or the next), release, answer. The workflow follow-ups
// an answer triggers (review, submit, rework) are decided in workflow.ts and land in the same
// commit as the answer.

type CallerAndConfig = Omit<WriteContext, 'meta'>;

export const DEFAULT_LEASE_SECONDS = 30 * 60;
export const newChangesetId = () => 'cs-' + randomBytes(5).toString('hex');

export function getAsk(s: LaneState, laneId: string, askId: string): AskDoc {
  const a = s.asks.get(askId);
  if (!a) throw new ZzError('not_found', `ask ${askId} does not exist in lane ${laneId}`);
  return a;
}

export function assertNotCancelled(ask: AskDoc): void {
  if (ask.state === 'cancelled') {
    throw new ZzError(
      'conflict',
      `ask ${ask.ask_id} was cancelled by ${ask.cancelled?.by ?? 'someone'}`,
      { cancelled: ask.cancelled ?? null },
    );
  }
}

/**
 * Refuses `n` more Asks past LIMITS.asksPerLane (the guarded fold refuses them alike,
 * `lane_full`). Asks are never deleted, so the way on is another Lane.
 */
export function assertRoom(s: LaneState, laneId: string, n: number): void {
  if (hasRoom(s, n)) return;
  throw new ZzError(
    'precondition_failed',
    `lane ${laneId} holds ${s.asks.size} Asks and takes at most ${LIMITS.asksPerLane}; post in another Lane (lane_propose)`,
    { lane_full: true, asks: s.asks.size, limit: LIMITS.asksPerLane },
  );
}

export function laneOf(s: LaneState, laneId: string) {
  if (!s.lane) throw noSuchLane(laneId);
  return s.lane;
}

export interface AskPostArgs extends WriteOpts {
  lane_id: string;
  kind: string;
  title: string;
  body?: string;
  priority?: number;
  depends_on?: string[];
  payload?: Record<string, unknown>;
  from?: string;
}

export async function askPost(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskPostArgs,
): Promise<{ ask: AskView } & WriteMeta> {
  const { actor: _a, from: _f, idempotency_key: _k, expected_revision: _r, ...request } = args;
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'ask_post',
    request,
    ...(args.from === undefined ? {} : { from: args.from }),
    decide: (s, { caller, config }): LaneOpSpec => {
      const lane = laneOf(s, args.lane_id);
      assertOpen(lane);
      assertRoom(s, lane.lane_id, 1);
      assertKnownKind(args.kind, args.lane_id, lane.ask_kinds, config.ask_kinds);
      // A resolve_conflict is the server's alone (changesets.ts posts it after the conflicting
      // landing of a reviewed changeset): its theirs-only files land by the direct form, which
      // needs no review, so a hand-posted one citing an unreviewed changeset lands it unread.
      if (args.kind === 'resolve_conflict') {
        throw new ZzError(
          'forbidden',
          'resolve_conflict asks are posted by the server when landing a reviewed changeset conflicts; no one posts one by hand',
        );
      }
      if (WORKFLOW_KINDS.has(args.kind) && !isCoordinator(lane, config, caller.actor)) {
        throw new ZzError(
          'forbidden',
          `${args.kind} asks are posted by the server; only coordinators may post one by hand`,
        );
      }
      const deps = [...new Set(args.depends_on ?? [])];
      for (const d of deps) {
        if (!s.asks.has(d))
          throw new ZzError(
            'not_found',
            `depends_on: ask ${d} does not exist in lane ${args.lane_id}`,
          );
      }
      const askId = newAskId();
      return {
        op: 'ask_post',
        summary: `ask_post ${askId} (${args.kind}): ${args.title}`,
        args: {
          lane_id: args.lane_id,
          kind: args.kind,
          title: args.title,
          body: args.body ?? '',
          priority: args.priority ?? 2,
          depends_on: deps,
          payload: args.payload ?? {},
          posted_by: caller.actor,
        },
        out: { ask_id: askId },
      };
    },
    result: (s, op) => {
      if (op?.op !== 'ask_post') throw unexpectedOp(op, 'ask_post');
      return askView(s, s.asks.get(op.out.ask_id)!, repo.clock());
    },
  });
  return { ask: r.result, revision: r.revision, replayed: r.replayed };
}

export interface AskClaimArgs extends WriteOpts {
  lane_id: string;
  ask_id: string;
  lease_seconds?: number;
}

export async function askClaim(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskClaimArgs,
): Promise<{ ask: AskView; renewed: boolean } & WriteMeta> {
  // The fold caps a lease at LIMITS.leaseSeconds (claimLeaseEnd): write what it derives.
  const lease = Math.min(args.lease_seconds ?? DEFAULT_LEASE_SECONDS, LIMITS.leaseSeconds);
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'ask_claim',
    request: { lane_id: args.lane_id, ask_id: args.ask_id, lease_seconds: lease },
    decide: (s, { caller, config, meta }): LaneOpSpec => {
      const lane = laneOf(s, args.lane_id);
      const ask = getAsk(s, args.lane_id, args.ask_id);
      if (ask.state === 'answered') {
        throw new ZzError(
          'conflict',
          `ask ${ask.ask_id} is already answered (${ask.answer?.outcome})`,
        );
      }
      assertNotCancelled(ask);
      assertClaimOnClosed(lane, ask, caller.actor, meta.now, 'claim');
      const rule = kindRule(ask.kind, lane.ask_kinds, config.ask_kinds);
      if (!inScope(rule.scope, lane, config, caller.actor))
        throw scopeDenied(rule.scope, lane, `claim ${ask.kind} asks`);
      const bb = blockedBy(s, ask);
      if (bb.length > 0) {
        const denied = bb.filter((b) => b.outcome === 'deny').map((b) => b.ask_id);
        throw new ZzError(
          'dependency_unresolved',
          denied.length > 0
            ? `ask ${ask.ask_id} is blocked: its dependency ${denied.join(', ')} was denied`
            : `ask ${ask.ask_id} is blocked by unresolved dependencies: ${bb.map((b) => b.ask_id).join(', ')}`,
          { blocked_by: bb },
        );
      }
      const expired = leaseExpired(ask, meta.now);
      if (ask.state === 'claimed' && ask.holder !== caller.actor && !expired) {
        throw new ZzError(
          'already_claimed',
          `ask ${ask.ask_id} is claimed by ${ask.holder} until ${ask.lease_expires_at}`,
          {
            holder: ask.holder,
            lease_expires_at: ask.lease_expires_at,
          },
        );
      }
      const until = new Date(meta.now.getTime() + lease * 1000).toISOString();
      const renewed = holdsLiveClaim(ask, caller.actor, meta.now);
      return {
        op: 'ask_claim',
        summary: `ask_claim ${ask.ask_id} by ${caller.actor}`,
        args: { lane_id: args.lane_id, ask_id: ask.ask_id, lease_seconds: lease },
        out: {
          lease_expires_at: until,
          renewed,
          ...(ask.state === 'claimed' && expired
            ? { expired_holder: ask.holder, expired_at: ask.lease_expires_at }
            : {}),
        },
      };
    },
    result: (s, op) => {
      if (op?.op !== 'ask_claim') throw unexpectedOp(op, 'ask_claim');
      return {
        ask: askView(s, s.asks.get(args.ask_id)!, repo.clock()),
        renewed: op.out.renewed === true,
      };
    },
  });
  return { ...r.result, revision: r.revision, replayed: r.replayed };
}

export interface AskClaimNextArgs {
  lane_id: string;
  kinds?: string[];
  /** Asks to pass over (a worker's Asks that wait to be retried); at most LIMITS.claimExclude. */
  exclude?: string[];
  /** Kinds to pass over (zz work's landing kinds when the daemon would not let it land). */
  exclude_kinds?: string[];
  lease_seconds?: number;
  idempotency_key?: string;
  actor?: string;
}

/**
 * Picks and claims the next Ask in one commit: the highest-priority, oldest Ask in the caller's
 * scope whose dependencies are resolved and whose lease is free or expired, passing over the
 * Asks in `exclude` (ids that name no Ask are simply not met). Decided inside the
 * Entity's queue against the state it will apply to, so a group commit of many callers (or a
 * CAS retry against another process) never hands one Ask to two of them. The op recorded is
 * an ordinary ask_claim: history, replay and sync see a claim like any other.
 */
export async function askClaimNext(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskClaimNextArgs,
): Promise<{
  ask: AskView | null;
  lane_closed?: Closure;
  revision: string | null;
  replayed: boolean;
}> {
  // The fold caps a lease at LIMITS.leaseSeconds (claimLeaseEnd): write what it derives.
  const lease = Math.min(args.lease_seconds ?? DEFAULT_LEASE_SECONDS, LIMITS.leaseSeconds);
  const kinds = args.kinds ? new Set(args.kinds) : null;
  if ((args.exclude?.length ?? 0) > LIMITS.claimExclude) {
    // The tool's schema refuses this first; a direct caller of core gets the same answer.
    throw new ZzError(
      'invalid_argument',
      `exclude: at most ${LIMITS.claimExclude} Ask ids, got ${args.exclude!.length}`,
    );
  }
  // As a set, sorted: a retry that lists the same Asks in another order is the same request
  // (its idempotency key replays), and no exclude at all hashes as before exclude existed.
  const exclude = [...new Set(args.exclude ?? [])].sort();
  const skip = exclude.length > 0 ? new Set(exclude) : null;
  const skipKinds = [...new Set(args.exclude_kinds ?? [])].sort();
  const passKinds = skipKinds.length > 0 ? new Set(skipKinds) : null;
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'ask_claim_next',
    request: {
      lane_id: args.lane_id,
      kinds: args.kinds ?? null,
      lease_seconds: lease,
      ...(skip ? { exclude } : {}),
      ...(passKinds ? { exclude_kinds: skipKinds } : {}),
    },
    decide: (s, { caller, config, meta }): LaneOpSpec[] => {
      const lane = laneOf(s, args.lane_id);
      assertKnownKinds(args.kinds, args.lane_id, lane.ask_kinds, config.ask_kinds);
      // A closed Lane hands out only the follow-ups of work in hand (lane-closed.ts).
      const inHandOnly = !!lane.closed;
      const nowMs = meta.now.getTime();
      const scopeOk = new Map<string, boolean>();
      let best: AskDoc | null = null;
      // A linear scan of the draft (not the per-revision candidate cache): inside a group
      // commit the draft already holds the claims decided ahead of this one. By position: no
      // iterator result per Ask (CowMap's values() is a generator over its chunks).
      for (let i = 0; i < s.asks.size; i++) {
        const a = s.asks.at(i)!;
        if (a.state === 'answered' || a.state === 'cancelled') continue;
        if (a.state === 'claimed' && leaseEndMs(a) > nowMs) continue;
        if (kinds && !kinds.has(a.kind)) continue;
        if (passKinds?.has(a.kind)) continue;
        if (skip?.has(a.ask_id)) continue;
        if (inHandOnly && !finishesWorkInHand(a)) continue;
        if (best && compareAsks(a, best) >= 0) continue;
        let ok = scopeOk.get(a.kind);
        if (ok === undefined) {
          ok = inScope(
            kindRule(a.kind, lane.ask_kinds, config.ask_kinds).scope,
            lane,
            config,
            caller.actor,
          );
          scopeOk.set(a.kind, ok);
        }
        if (!ok) continue;
        if (a.depends_on.length > 0 && blockedBy(s, a).length > 0) continue;
        best = a;
      }
      if (!best) return [];
      const until = new Date(nowMs + lease * 1000).toISOString();
      return [
        {
          op: 'ask_claim',
          summary: `ask_claim ${best.ask_id} by ${caller.actor} (next)`,
          args: { lane_id: args.lane_id, ask_id: best.ask_id, lease_seconds: lease },
          out: {
            lease_expires_at: until,
            renewed: false,
            ...(best.state === 'claimed'
              ? { expired_holder: best.holder, expired_at: best.lease_expires_at }
              : {}),
          },
        },
      ];
    },
    result: (s, op) => {
      if (op === null) return { ask: null, closed: s.lane?.closed ?? null };
      if (op.op !== 'ask_claim') throw unexpectedOp(op, 'ask_claim');
      return { ask: askView(s, s.asks.get(op.args.ask_id)!, repo.clock()), closed: null };
    },
  });
  // Nothing claimable: {ask: null} at the revision that was looked at; on a closed Lane, who
  // closed it too, so that a worker waiting for work stops instead of waiting forever.
  return {
    ask: r.result.ask,
    ...(r.result.closed ? { lane_closed: r.result.closed } : {}),
    revision: r.revision,
    replayed: r.replayed,
  };
}

export interface AskReleaseArgs extends WriteOpts {
  lane_id: string;
  ask_id: string;
  /** Why the claim is given back (shown in the Lane's history); at most LIMITS.reason. */
  reason?: string;
}

export async function askRelease(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskReleaseArgs,
): Promise<{ ask: AskView } & WriteMeta> {
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'ask_release',
    // No reason, no key: a release without one hashes as it always did (idempotency replays).
    request: {
      lane_id: args.lane_id,
      ask_id: args.ask_id,
      ...(args.reason === undefined ? {} : { reason: args.reason }),
    },
    decide: (s, { caller, config }): LaneOpSpec => {
      const lane = laneOf(s, args.lane_id);
      const ask = getAsk(s, args.lane_id, args.ask_id);
      if (ask.state !== 'claimed')
        throw new ZzError('conflict', `ask ${ask.ask_id} is not claimed (it is ${ask.state})`);
      // Coordinators may release a stuck claim; anyone else only their own.
      if (ask.holder !== caller.actor && !isCoordinator(lane, config, caller.actor)) {
        throw new ZzError(
          'forbidden',
          `ask ${ask.ask_id} is held by ${ask.holder}, not by ${caller.actor}`,
        );
      }
      return {
        op: 'ask_release',
        summary: `ask_release ${ask.ask_id} by ${caller.actor}`,
        args: {
          lane_id: args.lane_id,
          ask_id: ask.ask_id,
          ...(args.reason === undefined ? {} : { reason: args.reason.slice(0, LIMITS.reason) }),
        },
        out: { previous_holder: ask.holder },
      };
    },
    result: (s) => askView(s, s.asks.get(args.ask_id)!, repo.clock()),
  });
  return { ask: r.result, revision: r.revision, replayed: r.replayed };
}

export interface ChangesetInput {
  base: string;
  message: string;
  files: Array<{ path: string; content: string | null; encoding?: 'utf8' | 'base64' }>;
}

export interface AskAnswerArgs extends WriteOpts {
  lane_id: string;
  ask_id: string;
  outcome: 'complete' | 'deny' | 'grant';
  result?: string;
  changeset?: ChangesetInput;
}

/**
 * A review is granted of what its reviewer read: the changeset's ref (git_diff, the dashboard,
 * zz work's review flow). Landing checks that ref against the commit the changeset was proposed
 * as (changesets.ts assertReviewed), but a replica can record another commit for the id than
 * its ref names and fast-forward the ref there after a grant of the first: so a grant needs the
 * ref to name the proposed commit now (re-review of the changeset pin, HIGH).
 */
async function assertReviewOfProposed(repo: ZzRepo, state: LaneState, ask: AskDoc): Promise<void> {
  const id = ask.payload.changeset_id;
  if (ask.kind !== 'changeset_review' || typeof id !== 'string') return;
  const ref = await repo.store.head(CHANGESETS_PREFIX + id);
  assertAsProposed(
    state,
    ask.lane_id,
    id,
    ref,
    'what a reviewer reads is not what would land, so its review cannot be granted (deny it; the change is redone as a new changeset)',
  );
}

/**
 * That `commit` (what changeset `id`'s ref names now; null: none) is the commit an answer in
 * this Lane proposed it as (the fold's first record): a review vouches for that commit only.
 * `consequence` says what is refused. One check for granting a review and for landing.
 */
export function assertAsProposed(
  state: LaneState,
  laneId: string,
  id: string,
  commit: string | null,
  consequence: string,
): void {
  const proposed = state.changesetCommits.get(id);
  if (proposed !== undefined && commit === proposed) return;
  throw new ZzError(
    'precondition_failed',
    proposed === undefined
      ? `changeset ${id} was not proposed by an answer in lane ${laneId} (no commit is recorded for it); ${consequence}`
      : `changeset ${id} now names ${commit === null ? 'no commit' : `commit ${commit}`}, not ${proposed} that was proposed and reviewed; its ref has moved since (a sync from a remote can move it): ${consequence}`,
    { changeset_id: id, commit, proposed_commit: proposed ?? null },
  );
}

export async function askAnswer(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskAnswerArgs,
): Promise<{ ask: AskView; follow_ups: AskView[]; changeset_id: string | null } & WriteMeta> {
  const check = (s: LaneState, now: Date, { caller, config }: CallerAndConfig): AskDoc => {
    const lane = laneOf(s, args.lane_id);
    const ask = getAsk(s, args.lane_id, args.ask_id);
    if (ask.state === 'answered')
      throw new ZzError(
        'conflict',
        `ask ${ask.ask_id} is already answered (${ask.answer?.outcome})`,
      );
    assertNotCancelled(ask);
    const rule = kindRule(ask.kind, lane.ask_kinds, config.ask_kinds);
    if (!inScope(rule.scope, lane, config, caller.actor))
      throw scopeDenied(rule.scope, lane, `answer ${ask.kind} asks`);
    // Before assertLiveClaim, whose "claim it again" a closed Lane would refuse.
    assertClaimOnClosed(lane, ask, caller.actor, now, 'answer');
    assertLiveClaim(ask, caller.actor, now, 'answer');
    if (!rule.outcomes.includes(args.outcome)) {
      throw new ZzError(
        'invalid_argument',
        `outcome: ${ask.kind} asks are answered with ${rule.outcomes.join(' or ')}, not ${args.outcome}`,
      );
    }
    if (args.changeset && !(ask.kind === 'work' && args.outcome === 'complete')) {
      throw new ZzError(
        'invalid_argument',
        'changeset: only a work ask answered complete carries a changeset',
      );
    }
    if (
      ask.kind === 'work' &&
      args.outcome === 'complete' &&
      !args.changeset &&
      args.result === undefined
    ) {
      throw new ZzError('invalid_argument', 'a work ask is completed with a changeset or a result');
    }
    return ask;
  };

  let changesetId: string | null = null;
  let changesetCommit: string | null = null;
  const { actor: _a, idempotency_key: _k, expected_revision: _r, ...request } = args;
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'ask_answer',
    request,
    // A changeset's objects are written before the answer (and its ref after it), so a refused
    // answer moves no ref and a crash leaves at worst unreachable objects.
    check: async (ctx) => {
      if (args.outcome === 'grant') {
        const { state } = await readLane(repo, args.lane_id);
        const ask = state.asks.get(args.ask_id);
        if (ask) await assertReviewOfProposed(repo, state, ask);
      }
      if (!args.changeset) return;
      // A retry with a used idempotency_key replays the recorded answer (and repairs the ref
      // below); it must not be re-checked against the now answered Ask nor write a new commit.
      if (
        args.idempotency_key !== undefined &&
        (await repo.lane(args.lane_id).priorOp(ctx.caller.actor, args.idempotency_key)) !==
          undefined
      )
        return;
      check((await readLane(repo, args.lane_id)).state, repo.clock(), ctx);
      // The one path policy, against the base, before anything is written (hardening 11.8).
      const changes = await changesetChanges(repo, args.changeset.base, args.changeset.files);
      changesetId = newChangesetId();
      changesetCommit = await repo.store.writeCodeCommit({
        base: args.changeset.base,
        changes,
        message: args.changeset.message,
        author: ctx.caller.actor,
      });
      await assertChangesSomething(repo, args.changeset.base, changesetCommit);
    },
    decide: (s, ctx) => {
      const ask = check(s, ctx.meta.now, ctx);
      const followUps = followUpsFor(s, ask, args, changesetId);
      assertRoom(s, args.lane_id, followUps.length);
      const main: LaneOpSpec = {
        op: 'ask_answer',
        summary: `ask_answer ${ask.ask_id}: ${args.outcome}`,
        args: {
          lane_id: args.lane_id,
          ask_id: ask.ask_id,
          outcome: args.outcome,
          result: args.result ?? null,
          ...(args.changeset
            ? {
                changeset: {
                  base: args.changeset.base,
                  message: args.changeset.message,
                  paths: args.changeset.files.map((f) => f.path),
                },
              }
            : {}),
        },
        out: {
          ...(changesetId ? { changeset_id: changesetId, changeset_commit: changesetCommit } : {}),
          follow_ups: followUps.map((f) => f.out.ask_id),
        },
      };
      return [main, ...followUps];
    },
    result: (s, op) => {
      if (op?.op !== 'ask_answer') throw unexpectedOp(op, 'ask_answer');
      const now = repo.clock();
      const ids = op.out?.follow_ups ?? [];
      return {
        ask: askView(s, s.asks.get(args.ask_id)!, now),
        follow_ups: ids
          .map((id) => s.asks.get(id))
          .filter((a): a is AskDoc => !!a)
          .map((a) => askView(s, a, now)),
        changeset_id: op.out?.changeset_id ?? null,
        op,
      };
    },
  });
  // The ref follows the answer; a retry (replay) after a crash between the two repairs it.
  const { op: answerOp, ...answered } = r.result;
  const csId = answerOp.out?.changeset_id;
  const csCommit = answerOp.out?.changeset_commit;
  if (typeof csId === 'string' && typeof csCommit === 'string') {
    if ((await repo.store.head(CHANGESETS_PREFIX + csId)) === null) {
      await repo.store.setRef(CHANGESETS_PREFIX + csId, null, csCommit);
    }
  }
  return { ...answered, revision: r.revision, replayed: r.replayed };
}
