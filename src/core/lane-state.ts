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
}

export const LANE_FILE = 'lane.json';

export function askPath(askId: string): string {
  return `asks/${askId.slice(4, 6)}/${askId}.json`;
}

type Args = Record<string, unknown>;
const str = (v: unknown): string => String(v);
const strOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : String(v));

export function applyLaneOp(s: LaneState, op: OpRecord): string[] {
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
  empty: () => ({ lane: null, asks: new Map(), dependents: new Map() }),
  clone: (s) => ({ lane: s.lane, asks: new Map(s.asks), dependents: new Map(s.dependents) }),
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
