import { askDoc, laneDoc, type AskDoc, type LaneDoc } from '../schema/lane.js';
import { parseLaneOp } from '../schema/lane-op-parse.js';
import type { LaneOp } from '../schema/lane-ops.js';
import { OpLog, type EntityCodec, type OpSpec } from '../store/index.js';
import { CowMap } from './cow-map.js';
import { deriveFollowUps, SERVER_ACTOR } from './follow-ups.js';
import { claimLeaseEnd, derivedAskId, guard, roleGuard, type Refusal } from './lane-guards.js';
import type { LaneState } from './lane-state-types.js';
import { applyRooted, noteRootedReview, NOT_ROOTED } from './rooted-roles.js';

export type { LaneState, RejectedOp, RoleSource } from './lane-state-types.js';

// A Lane's state is a pure fold of its op log: applyLaneOp(state, op) is all there is. Every
// value an op depends on (ids, times, lease expiry) is recorded in the op itself, so replaying
// a history — here, after a restart, or when sync merges two — always yields the same state.
//
// One case per op kind of the Lane's union (schema/lane-ops.ts), in the guard and in the
// apply: sync re-checks claims, answers and scopes when folding ops from other machines.
// The guards are in lane-guards.ts, the state's shape in lane-state-types.ts.

export type LaneOpSpec = OpSpec<LaneOp>;
export type AskPostSpec = OpSpec<Extract<LaneOp, { op: 'ask_post' }>>;

export const LANE_FILE = 'lane.json';

export function askPath(askId: string): string {
  return `asks/${askId.slice(4, 6)}/${askId}.json`;
}

/** The kind of the Ask the fold raises when two answers to one Ask meet in a merge. */
export const RESOLVE_CONFLICT_KIND = 'resolve_conflict';

export function applyLaneOp(s: LaneState, op: LaneOp): string[] {
  // The record of a follow-up the fold already posted from its answer: nothing to do.
  if (op.op === 'ask_post' && s.derived.has(op.out.ask_id)) return [];
  const refused = guard(s, op) ?? roleGuard(s, op);
  if (op.key !== undefined && !s.keys.has(`${op.actor}\0${op.key}`)) {
    s.keys.set(`${op.actor}\0${op.key}`, op.request_hash ?? '');
  }
  if (refused) return refuse(s, op, refused);
  return applyGuarded(s, op);
}

// An Ask without dependencies or payload shares these (frozen: documents are never changed in
// place, and 5,000 Asks made 5,000 empty arrays and objects).
const NO_DEPS: string[] = [];
const NO_PAYLOAD: Record<string, unknown> = {};
Object.freeze(NO_DEPS);
Object.freeze(NO_PAYLOAD);

/**
 * An open Ask the fold posts itself (a follow-up, a resolve_conflict): no holder, no answer.
 * Keys in AskDoc order: the document's JSON is what every replica stores, byte for byte.
 */
function serverAsk(
  f: Pick<AskDoc, 'ask_id' | 'lane_id' | 'kind' | 'title' | 'body' | 'priority' | 'payload'> &
    Pick<AskDoc, 'origin'>,
  time: string,
): AskDoc {
  return {
    ask_id: f.ask_id,
    lane_id: f.lane_id,
    kind: f.kind,
    title: f.title,
    body: f.body,
    priority: f.priority,
    depends_on: NO_DEPS,
    state: 'open',
    holder: null,
    lease_expires_at: null,
    answer: null,
    posted_by: SERVER_ACTOR,
    posted_at: time,
    payload: f.payload,
    origin: f.origin,
  };
}

/**
 * Refusals of what no zz writes, nor any merge of what zz wrote: they excuse nothing that
 * follows them (lane-guards.ts). Not among them: lane_full (a merge fills a Lane that had room
 * on each machine) and kind_unknown (zz before 2026-12-01 posted any kind).
 */
const NEVER_WRITTEN: ReadonlySet<string> = new Set([
  'ask_exists',
  'poster_mismatch',
  'dependency_not_found',
  'outcome_not_allowed',
  'changeset_not_allowed',
  'result_missing',
]);

function refuse(s: LaneState, op: LaneOp, r: Refusal): string[] {
  // Appended, not copied: snapshots share the list (see clone), and a hostile replica's 50,000
  // refused ops copied into a new array each cost ~1e9 element copies on a cold fold.
  s.rejected = s.rejected.concat([{ op_id: op.id, op: op.op, actor: op.actor, ...r }]);
  if (!NEVER_WRITTEN.has(r.reason)) {
    if (op.op === 'lane_propose') {
      for (const k of Object.keys(op.args.ask_kinds ?? {})) s.refusedKinds.set(k, true);
    }
    if (op.op === 'ask_post') s.refusedPosts.set(op.out.ask_id, true);
    if (op.op === 'ask_answer' && op.args.outcome !== 'deny' && s.asks.has(op.args.ask_id)) {
      s.refusedResolutions.set(op.args.ask_id, true);
    }
  }
  if (op.op !== 'ask_answer') return [];
  // Follow-ups the refused answer triggered (recorded right after it) are not posted.
  const ids = op.out?.follow_ups;
  if (ids) for (const id of ids) s.suppressed.set(id, true);
  if (r.reason !== 'conflicting_answer' || !r.ask_id || !r.resolve_ask_id) return [];
  // Both answers are kept: the first stands on the Ask, the second goes to a coordinator.
  const ask = s.asks.get(r.ask_id)!;
  const id = r.resolve_ask_id;
  s.asks.set(
    id,
    serverAsk(
      {
        ask_id: id,
        lane_id: ask.lane_id,
        kind: RESOLVE_CONFLICT_KIND,
        title: `Resolve conflicting answers to ${ask.ask_id}`.slice(0, 200),
        body: `${ask.answer?.answered_by ?? 'someone'} answered ${ask.answer?.outcome ?? '?'} first; ${op.actor} answered ${op.args.outcome} on another replica. Decide which stands.`,
        priority: ask.priority,
        payload: {
          ask_id: ask.ask_id,
          kept: ask.answer,
          conflicting: {
            op_id: op.id,
            outcome: op.args.outcome,
            result: op.args.result ?? null,
            changeset_id: op.out?.changeset_id ?? null,
            answered_by: op.actor,
            answered_at: op.time,
          },
        },
        origin: { ask_id: ask.ask_id, reason: RESOLVE_CONFLICT_KIND },
      },
      op.time,
    ),
  );
  return [askPath(id)];
}

// Module functions, not closures made per op: the fold applies every op of a Lane on a cold
// load (5,000 and more), and a closure per op was a measurable part of it.
function setAsk(s: LaneState, ask: AskDoc): string {
  s.asks.set(ask.ask_id, ask);
  return askPath(ask.ask_id);
}

function setLane(s: LaneState, lane: LaneDoc): string {
  s.lane = lane;
  return LANE_FILE;
}

function applyGuarded(s: LaneState, op: LaneOp): string[] {
  switch (op.op) {
    case 'lane_propose': {
      applyRooted(s, op);
      const a = op.args;
      return [
        setLane(s, {
          lane_id: a.lane_id,
          title: a.title,
          description: a.description ?? '',
          coordinators: a.coordinators ?? [op.actor],
          maintainers: a.maintainers ?? [],
          related_lanes: a.related_lanes ?? [],
          ask_kinds: a.ask_kinds ?? {},
          created_by: op.actor,
          created_at: op.time,
        }),
      ];
    }
    case 'lane_add_related': {
      if (!s.lane) return [];
      const rel = op.args.related_lane_id;
      if (s.lane.related_lanes.includes(rel)) return [];
      return [setLane(s, { ...s.lane, related_lanes: [...s.lane.related_lanes, rel] })];
    }
    case 'lane_grant': {
      if (!s.lane) return [];
      applyRooted(s, op);
      const field = op.args.role === 'maintainer' ? 'maintainers' : 'coordinators';
      const who = op.args.grantee;
      const list = s.lane[field].filter((x) => x !== who);
      if (!op.args.revoke) list.push(who);
      return [setLane(s, { ...s.lane, [field]: list })];
    }
    case 'lane_close': {
      if (!s.lane || s.lane.closed) return [];
      return [
        setLane(s, {
          ...s.lane,
          closed: { by: op.actor, at: op.time, reason: op.args.reason ?? '' },
        }),
      ];
    }
    case 'ask_post': {
      const a = op.args;
      const id = op.out.ask_id;
      const deps = a.depends_on ?? NO_DEPS;
      // An OpLog, shared by snapshots like `rejected`: appending is O(1), where a copy of the
      // list per post made 100,000 posts on one dependency ~5e9 element copies.
      for (const d of deps) s.dependents.set(d, (s.dependents.get(d) ?? new OpLog()).concat([id]));
      return [
        setAsk(s, {
          ask_id: id,
          lane_id: s.lane?.lane_id ?? a.lane_id,
          kind: a.kind,
          title: a.title,
          body: a.body ?? '',
          priority: a.priority ?? 2,
          depends_on: deps,
          state: 'open',
          holder: null,
          lease_expires_at: null,
          answer: null,
          posted_by: a.posted_by ?? op.actor,
          posted_at: op.time,
          payload: a.payload ?? NO_PAYLOAD,
          origin: a.origin ? { ask_id: a.origin.ask_id, reason: a.origin.reason } : null,
        }),
      ];
    }
    case 'ask_claim': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return [];
      return [
        setAsk(s, {
          ...ask,
          state: 'claimed',
          holder: op.actor,
          // Derived, not copied: the guard refused a claim whose recorded end disagrees.
          lease_expires_at: claimLeaseEnd(op),
        }),
      ];
    }
    case 'ask_release': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return [];
      return [setAsk(s, { ...ask, state: 'open', holder: null, lease_expires_at: null })];
    }
    case 'ask_answer': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return [];
      noteRootedReview(s, ask, op);
      noteChangesetCommit(s, op);
      const follow = postFollowUps(s, ask, op);
      return [
        ...follow,
        setAsk(s, {
          ...ask,
          state: 'answered',
          holder: ask.holder,
          lease_expires_at: null,
          answer: {
            outcome: op.args.outcome,
            result: op.args.result ?? null,
            changeset_id: op.out?.changeset_id ?? op.args.changeset_id ?? null,
            answered_by: op.actor,
            answered_at: op.time,
          },
        }),
      ];
    }
    case 'ask_cancel': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask || ask.state === 'answered' || ask.state === 'cancelled') return [];
      return [
        setAsk(s, {
          ...ask,
          state: 'cancelled',
          holder: null,
          lease_expires_at: null,
          cancelled: { by: op.actor, at: op.time, reason: op.args.reason ?? '' },
        }),
      ];
    }
    case 'commit_changeset':
      // Recorded for history; the Ask it lands is answered by the ask_answer beside it.
      return [];
  }
}

/** The commit an honoured answer proposed its changeset as; the first record of an id stands. */
function noteChangesetCommit(s: LaneState, op: Extract<LaneOp, { op: 'ask_answer' }>): void {
  const id = op.out?.changeset_id;
  const commit = op.out?.changeset_commit;
  if (typeof id === 'string' && typeof commit === 'string' && !s.changesetCommits.has(id)) {
    s.changesetCommits.set(id, commit);
  }
}

/**
 * Posts the follow-ups of an honoured answer (DESIGN §7: re-derived, never trusted), derived
 * from the Ask as it stood before the answer. Ids are the ones the answer recorded in
 * out.follow_ups, in order; one missing or already taken gets an id derived from the answer's
 * op id, so every replica names it alike. Answers that recorded no list are left to their
 * recorded ask_posts (see guard).
 */
function postFollowUps(
  s: LaneState,
  ask: AskDoc,
  op: Extract<LaneOp, { op: 'ask_answer' }>,
): string[] {
  const recorded = op.out?.follow_ups;
  if (recorded === undefined) return [];
  s.listed.set(ask.ask_id, true);
  const drafts = deriveFollowUps(
    (id) => s.asks.get(id),
    ask,
    {
      outcome: op.args.outcome,
      result: op.args.result ?? null,
      changeset: op.args.changeset ?? null,
    },
    op.out?.changeset_id ?? null,
  );
  const paths: string[] = [];
  drafts.forEach((d, i) => {
    const want = recorded[i];
    const id =
      want !== undefined && !s.asks.has(want) && !s.derived.has(want)
        ? want
        : derivedAskId('follow_up', op.id, String(i));
    s.derived.set(id, ask.ask_id);
    s.derivers.set(ask.ask_id, true);
    s.asks.set(
      id,
      serverAsk(
        {
          ask_id: id,
          lane_id: s.lane?.lane_id ?? op.args.lane_id,
          kind: d.kind,
          title: d.title,
          body: d.body,
          priority: d.priority,
          payload: d.payload,
          origin: d.origin,
        },
        op.time,
      ),
    );
    paths.push(askPath(id));
  });
  return paths;
}

export const laneCodec: EntityCodec<LaneState, LaneOp> = {
  empty: () => ({
    lane: null,
    asks: new CowMap(),
    dependents: new CowMap(),
    rejected: new OpLog(),
    keys: new CowMap(),
    suppressed: new CowMap(),
    derived: new CowMap(),
    derivers: new CowMap(),
    listed: new CowMap(),
    roles: null,
    refusedPosts: new CowMap(),
    refusedResolutions: new CowMap(),
    refusedKinds: new CowMap(),
    rooted: NOT_ROOTED,
    roots: new CowMap(),
    rootedReviews: new CowMap(),
    changesetCommits: new CowMap(),
  }),
  // The maps are forked (changed in place by apply, without touching the original). `rejected`
  // is an OpLog, shared: apply replaces it with a longer one (concat, in place when no other
  // holder has appended to the array, else a copy of its own part), never changes the one a
  // snapshot holds. `roles` is replaced, never mutated. Hazard: never mutate `rejected` but
  // through concat, nor `suppressed` but in a fork: readers hold the original.
  clone: (s) => ({
    lane: s.lane,
    asks: s.asks.fork(),
    dependents: s.dependents.fork(),
    rejected: s.rejected,
    keys: s.keys.fork(),
    suppressed: s.suppressed.fork(),
    derived: s.derived.fork(),
    derivers: s.derivers.fork(),
    listed: s.listed.fork(),
    roles: s.roles,
    refusedPosts: s.refusedPosts.fork(),
    refusedResolutions: s.refusedResolutions.fork(),
    refusedKinds: s.refusedKinds.fork(),
    rooted: s.rooted,
    roots: s.roots.fork(),
    rootedReviews: s.rootedReviews.fork(),
    changesetCommits: s.changesetCommits.fork(),
  }),
  parse: parseLaneOp,
  apply: applyLaneOp,
  refusals: (s) => s.rejected,
  file(s, path) {
    if (path === LANE_FILE) return s.lane ? JSON.stringify(s.lane, null, 2) + '\n' : null;
    const m = /^asks\/[0-9a-f]{2}\/(ask-[0-9a-f]{10})\.json$/.exec(path);
    const ask = m ? s.asks.get(m[1]!) : undefined;
    return ask ? JSON.stringify(ask, null, 2) + '\n' : null;
  },
  verify(s, ref) {
    // A Lane's id is its ref name (refs/zz/lanes/<id>; ids hold no "/"): a Lane's history
    // copied under another name is not that Lane.
    const id = ref.slice(ref.lastIndexOf('/') + 1);
    if (!s.lane) return 'the ref holds no lane_propose';
    if (s.lane.lane_id !== id) return `it holds lane ${s.lane.lane_id}, not ${id}`;
    return null;
  },
};

/** Reads the materialised tree back into a state (used to prove fold == stored tree). */
export function laneStateFromFiles(files: Map<string, string>): LaneState {
  const s = laneCodec.empty();
  for (const [path, text] of files) {
    if (path === LANE_FILE) s.lane = laneDoc.parse(JSON.parse(text));
    else if (path.startsWith('asks/')) {
      const ask = askDoc.parse(JSON.parse(text));
      s.asks.set(ask.ask_id, ask);
    }
  }
  return s;
}
