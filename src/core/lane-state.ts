import { askDoc, laneDoc, type AskDoc, type LaneDoc } from '../schema/lane.js';
import { parseLaneOp, type LaneOp } from '../schema/lane-ops.js';
import type { EntityCodec, OpSpec } from '../store/index.js';

// A Lane's state is a pure fold of its op log: applyLaneOp(state, op) is all there is. Every
// value an op depends on (ids, times, lease expiry) is recorded in the op itself, so replaying
// a history — here, after a restart, or when sync merges two — always yields the same state.
//
// One case per op kind of the Lane's union (schema/lane-ops.ts); each case may grow its own
// guard (sync re-checks claims, answers and scopes when folding ops from other machines).

export interface LaneState {
  lane: LaneDoc | null;
  asks: Map<string, AskDoc>;
  /** ask_id → ids of asks that depend on it (for blocked/unblocked updates). */
  dependents: Map<string, string[]>;
}

/** An op a Lane use case decides. */
export type LaneOpSpec = OpSpec<LaneOp>;
export type AskPostSpec = OpSpec<Extract<LaneOp, { op: 'ask_post' }>>;

export const LANE_FILE = 'lane.json';

export function askPath(askId: string): string {
  return `asks/${askId.slice(4, 6)}/${askId}.json`;
}

export function applyLaneOp(s: LaneState, op: LaneOp): string[] {
  const setAsk = (ask: AskDoc): string => {
    s.asks.set(ask.ask_id, ask);
    return askPath(ask.ask_id);
  };
  const setLane = (lane: LaneDoc): string => {
    s.lane = lane;
    return LANE_FILE;
  };
  switch (op.op) {
    case 'lane_propose': {
      const a = op.args;
      return [
        setLane({
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
      return [setLane({ ...s.lane, related_lanes: [...s.lane.related_lanes, rel] })];
    }
    case 'lane_grant': {
      if (!s.lane) return [];
      const field = op.args.role === 'maintainer' ? 'maintainers' : 'coordinators';
      const who = op.args.grantee;
      const list = s.lane[field].filter((x) => x !== who);
      if (!op.args.revoke) list.push(who);
      return [setLane({ ...s.lane, [field]: list })];
    }
    case 'lane_close': {
      if (!s.lane || s.lane.closed) return [];
      return [
        setLane({
          ...s.lane,
          closed: { by: op.actor, at: op.time, reason: op.args.reason ?? '' },
        }),
      ];
    }
    case 'ask_post': {
      const a = op.args;
      const id = op.out.ask_id;
      const deps = a.depends_on ?? [];
      for (const d of deps) {
        const list = s.dependents.get(d) ?? [];
        s.dependents.set(d, [...list, id]);
      }
      return [
        setAsk({
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
          payload: a.payload ?? {},
          origin: a.origin ? { ask_id: a.origin.ask_id, reason: a.origin.reason } : null,
        }),
      ];
    }
    case 'ask_claim': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return [];
      return [
        setAsk({
          ...ask,
          state: 'claimed',
          holder: op.actor,
          lease_expires_at: op.out.lease_expires_at,
        }),
      ];
    }
    case 'ask_release': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return [];
      return [setAsk({ ...ask, state: 'open', holder: null, lease_expires_at: null })];
    }
    case 'ask_answer': {
      const ask = s.asks.get(op.args.ask_id);
      if (!ask) return [];
      return [
        setAsk({
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
        setAsk({
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

export const laneCodec: EntityCodec<LaneState, LaneOp> = {
  empty: () => ({ lane: null, asks: new Map(), dependents: new Map() }),
  clone: (s) => ({ lane: s.lane, asks: new Map(s.asks), dependents: new Map(s.dependents) }),
  parse: parseLaneOp,
  apply: applyLaneOp,
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
