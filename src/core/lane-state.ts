import { createHash } from 'node:crypto';
import type { EntityCodec, OpRecord } from '../store/index.js';
import type { AskDoc, LaneDoc } from '../schema/lane.js';

// A Lane's state is a pure fold of its op log: applyLaneOp(state, op) is all there is. Every
// value an op depends on (ids, times, lease expiry) is recorded in the op itself, so replaying
// a history — here, after a restart, or when sync merges two — always yields the same state.

export interface LaneState {
  lane: LaneDoc | null;
  asks: Map<string, AskDoc>;
  /** ask_id → ids of asks that depend on it (for blocked/unblocked updates). */
  dependents: Map<string, string[]>;
  /**
   * Ops the guarded fold refused (they stay in the log): a claim that lost to a holder, a
   * release or answer not from the holder, a reused idempotency key. Every replica folds the
   * same log in the same order, so every replica shows the same list.
   */
  rejected: RejectedOp[];
  /** (actor, idempotency key) → the request hash of its first use in publication order. */
  keys: Map<string, string>;
  /** Follow-up Asks of refused answers: never trusted, never posted. */
  suppressed: Set<string>;
}

export interface RejectedOp {
  op_id: string;
  op: string;
  actor: string;
  reason:
    | 'claim_lost'
    | 'ask_answered'
    | 'not_claimed'
    | 'not_holder'
    | 'conflicting_answer'
    | 'idempotency_duplicate'
    | 'idempotency_conflict'
    | 'follow_up_of_refused_answer';
  ask_id?: string;
  /** For claim_lost: who held the Ask when this claim arrived. */
  winner?: string | null;
  /** For conflicting_answer: the resolve_conflict Ask raised for the coordinator. */
  resolve_ask_id?: string;
}

export const LANE_FILE = 'lane.json';

export function askPath(askId: string): string {
  return `asks/${askId.slice(4, 6)}/${askId}.json`;
}

type Args = Record<string, unknown>;
const str = (v: unknown): string => String(v);
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

/** The kind of the Ask the fold raises when two answers to one Ask meet in a merge. */
export const RESOLVE_CONFLICT_KIND = 'resolve_conflict';

// The guarded apply of DESIGN §7: ops from anywhere (this daemon, a merge of another
// replica's work) are re-checked against the state they land on. The daemon's decide()
// refuses the same cases up front, so locally written ops always pass; these guards matter
// when sync folds two histories together. A refused op changes nothing but stays in the log.
function guard(s: LaneState, op: OpRecord): Omit<RejectedOp, 'op_id' | 'op' | 'actor'> | null {
  const a = op.args;
  if (op.key !== undefined) {
    const prior = s.keys.get(`${op.actor}\0${op.key}`);
    if (prior !== undefined) {
      return {
        reason: prior === op.request_hash ? 'idempotency_duplicate' : 'idempotency_conflict',
      };
    }
  }
  const ask = typeof a.ask_id === 'string' ? s.asks.get(a.ask_id) : undefined;
  switch (op.op) {
    case 'ask_post': {
      const id = op.out?.ask_id;
      if (typeof id === 'string' && s.suppressed.has(id)) {
        return { reason: 'follow_up_of_refused_answer', ask_id: id };
      }
      return null;
    }
    case 'ask_claim': {
      if (!ask) return null;
      if (ask.state === 'answered') return { reason: 'ask_answered', ask_id: ask.ask_id };
      if (ask.state !== 'claimed' || ask.holder === op.actor) return null;
      // The lease is judged at the time the claim recorded, not at fold time.
      const until = ask.lease_expires_at === null ? NaN : Date.parse(ask.lease_expires_at);
      if (!Number.isNaN(until) && until <= Date.parse(op.time)) return null;
      return { reason: 'claim_lost', ask_id: ask.ask_id, winner: ask.holder };
    }
    case 'ask_release': {
      if (!ask) return null;
      if (ask.state !== 'claimed') return { reason: 'not_claimed', ask_id: ask.ask_id };
      // Coordinators may release a stuck claim (the `_repo` lane's are the repo's owners,
      // which this fold cannot see: trusted there as the daemon's check was).
      const lane = s.lane;
      const coordinator =
        lane !== null && (lane.coordinators.includes(op.actor) || lane.lane_id === '_repo');
      if (ask.holder !== op.actor && !coordinator) {
        return { reason: 'not_holder', ask_id: ask.ask_id, winner: ask.holder };
      }
      return null;
    }
    case 'ask_answer': {
      if (!ask) return null;
      if (ask.state === 'answered') {
        return {
          reason: 'conflicting_answer',
          ask_id: ask.ask_id,
          resolve_ask_id: conflictAskId(op),
        };
      }
      if (ask.holder !== op.actor) {
        return { reason: 'not_holder', ask_id: ask.ask_id, winner: ask.holder };
      }
      return null;
    }
    default:
      return null;
  }
}

function conflictAskId(op: OpRecord): string {
  return (
    'ask-' + createHash('sha256').update(`resolve_conflict\0${op.id}`).digest('hex').slice(0, 10)
  );
}

export function applyLaneOp(s: LaneState, op: OpRecord): string[] {
  const refused = guard(s, op);
  if (op.key !== undefined && !s.keys.has(`${op.actor}\0${op.key}`)) {
    s.keys.set(`${op.actor}\0${op.key}`, op.request_hash ?? '');
  }
  if (refused) return refuse(s, op, refused);
  return applyGuarded(s, op);
}

function refuse(
  s: LaneState,
  op: OpRecord,
  r: Omit<RejectedOp, 'op_id' | 'op' | 'actor'>,
): string[] {
  s.rejected = [...s.rejected, { op_id: op.id, op: op.op, actor: op.actor, ...r }];
  if (op.op === 'ask_answer') {
    // Follow-ups the refused answer triggered (recorded right after it) are not posted.
    const ids = op.out?.follow_ups;
    if (Array.isArray(ids)) {
      s.suppressed = new Set([...s.suppressed, ...ids.filter((x) => typeof x === 'string')]);
    }
  }
  if (r.reason !== 'conflicting_answer' || !r.ask_id || !r.resolve_ask_id) return [];
  // Both answers are kept: the first stands on the Ask, the second goes to a coordinator.
  const ask = s.asks.get(r.ask_id)!;
  const id = r.resolve_ask_id;
  s.asks.set(id, {
    ask_id: id,
    lane_id: ask.lane_id,
    kind: RESOLVE_CONFLICT_KIND,
    title: `Resolve conflicting answers to ${ask.ask_id}`.slice(0, 200),
    body: `${ask.answer?.answered_by ?? 'someone'} answered ${ask.answer?.outcome ?? '?'} first; ${op.actor} answered ${String(op.args.outcome)} on another replica. Decide which stands.`,
    priority: ask.priority,
    depends_on: [],
    state: 'open',
    holder: null,
    lease_expires_at: null,
    answer: null,
    posted_by: 'zz@localhost',
    posted_at: op.time,
    payload: {
      ask_id: ask.ask_id,
      kept: ask.answer,
      conflicting: {
        op_id: op.id,
        outcome: op.args.outcome ?? null,
        result: op.args.result ?? null,
        changeset_id: op.out?.changeset_id ?? null,
        answered_by: op.actor,
        answered_at: op.time,
      },
    },
    origin: { ask_id: ask.ask_id, reason: RESOLVE_CONFLICT_KIND },
  });
  return [askPath(id)];
}

function applyGuarded(s: LaneState, op: OpRecord): string[] {
  const a: Args = op.args;
  const out: Args = op.out ?? {};
  const setAsk = (ask: AskDoc): string => {
    s.asks.set(ask.ask_id, ask);
    return askPath(ask.ask_id);
  };
  const setLane = (lane: LaneDoc): string => {
    s.lane = lane;
    return LANE_FILE;
  };
  switch (op.op) {
    case 'lane_propose':
      return [
        setLane({
          lane_id: str(a.lane_id),
          title: str(a.title),
          description: str(a.description ?? ''),
          coordinators: (a.coordinators as string[]) ?? [op.actor],
          maintainers: (a.maintainers as string[]) ?? [],
          related_lanes: (a.related_lanes as string[]) ?? [],
          ask_kinds: (a.ask_kinds as LaneDoc['ask_kinds']) ?? {},
          created_by: op.actor,
          created_at: op.time,
        }),
      ];
    case 'lane_add_related': {
      if (!s.lane) return [];
      const rel = str(a.related_lane_id);
      if (s.lane.related_lanes.includes(rel)) return [];
      return [setLane({ ...s.lane, related_lanes: [...s.lane.related_lanes, rel] })];
    }
    case 'lane_grant': {
      if (!s.lane) return [];
      const field = a.role === 'maintainer' ? 'maintainers' : 'coordinators';
      const who = str(a.grantee);
      const list = s.lane[field].filter((x) => x !== who);
      if (!a.revoke) list.push(who);
      return [setLane({ ...s.lane, [field]: list })];
    }
    case 'ask_post': {
      const id = str(out.ask_id);
      const deps = (a.depends_on as string[]) ?? [];
      for (const d of deps) {
        const list = s.dependents.get(d) ?? [];
        s.dependents.set(d, [...list, id]);
      }
      return [
        setAsk({
          ask_id: id,
          lane_id: s.lane?.lane_id ?? str(a.lane_id),
          kind: str(a.kind),
          title: str(a.title),
          body: str(a.body ?? ''),
          priority: Number(a.priority ?? 2),
          depends_on: deps,
          state: 'open',
          holder: null,
          lease_expires_at: null,
          answer: null,
          posted_by: str(a.posted_by ?? op.actor),
          posted_at: op.time,
          payload: (a.payload as Record<string, unknown>) ?? {},
          origin: (a.origin as AskDoc['origin']) ?? null,
        }),
      ];
    }
    case 'ask_claim': {
      const ask = s.asks.get(str(a.ask_id));
      if (!ask) return [];
      return [
        setAsk({
          ...ask,
          state: 'claimed',
          holder: op.actor,
          lease_expires_at: str(out.lease_expires_at),
        }),
      ];
    }
    case 'ask_release': {
      const ask = s.asks.get(str(a.ask_id));
      if (!ask) return [];
      return [setAsk({ ...ask, state: 'open', holder: null, lease_expires_at: null })];
    }
    case 'ask_answer': {
      const ask = s.asks.get(str(a.ask_id));
      if (!ask) return [];
      return [
        setAsk({
          ...ask,
          state: 'answered',
          holder: ask.holder,
          lease_expires_at: null,
          answer: {
            outcome: a.outcome as 'complete' | 'deny' | 'grant',
            result: strOrNull(a.result),
            changeset_id: strOrNull(out.changeset_id ?? a.changeset_id),
            answered_by: op.actor,
            answered_at: op.time,
          },
        }),
      ];
    }
    default:
      // Ops from a newer zz are kept in history but change nothing here.
      return [];
  }
}

export const laneCodec: EntityCodec<LaneState> = {
  empty: () => ({
    lane: null,
    asks: new Map(),
    dependents: new Map(),
    rejected: [],
    keys: new Map(),
    suppressed: new Set(),
  }),
  // `rejected` and `suppressed` are replaced, never mutated, so sharing them is safe.
  clone: (s) => ({
    lane: s.lane,
    asks: new Map(s.asks),
    dependents: new Map(s.dependents),
    rejected: s.rejected,
    keys: new Map(s.keys),
    suppressed: s.suppressed,
  }),
  apply: applyLaneOp,
  file(s, path) {
    if (path === LANE_FILE) return s.lane ? JSON.stringify(s.lane, null, 2) + '\n' : null;
    const m = /^asks\/[0-9a-f]{2}\/(ask-[0-9a-f]{10})\.json$/.exec(path);
    const ask = m ? s.asks.get(m[1]!) : undefined;
    return ask ? JSON.stringify(ask, null, 2) + '\n' : null;
  },
};

/** Reads the materialised tree back into a state (used to prove fold == stored tree). */
export function laneStateFromFiles(files: Map<string, string>): LaneState {
  const s = laneCodec.empty();
  for (const [path, text] of files) {
    if (path === LANE_FILE) s.lane = JSON.parse(text) as LaneDoc;
    else if (path.startsWith('asks/')) {
      const ask = JSON.parse(text) as AskDoc;
      s.asks.set(ask.ask_id, ask);
    }
  }
  return s;
}
