import { ZzError } from '../errors.js';
import { LIMITS } from '../schema/limits.js';
import { isCoordinator, isOwner, type Caller } from './access.js';
import { getAsk, laneOf } from './asks.js';
import { assertOpen } from './lane-closed.js';
import type { LaneOpSpec } from './lane-state.js';
import type { WriteMeta, WriteOpts } from './lanes.js';
import { askView, laneView, type AskView, type LaneView } from './views.js';
import { unexpectedOp, writeOp } from './write-op.js';
import type { ZzRepo } from './zz-repo.js';

// Ending things, recorded like any op: an Ask cancelled by its poster or a coordinator, a Lane
// closed by a coordinator (or an owner). Nothing is deleted: history keeps both.

const reason = (r: string | undefined): string => (r ?? '').slice(0, LIMITS.reason);

export interface AskCancelArgs extends WriteOpts {
  lane_id: string;
  ask_id: string;
  reason?: string;
}

export async function askCancel(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: AskCancelArgs,
): Promise<{ ask: AskView } & WriteMeta> {
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'ask_cancel',
    request: { lane_id: args.lane_id, ask_id: args.ask_id, reason: args.reason ?? null },
    decide: (s, { caller, config }): LaneOpSpec => {
      const lane = laneOf(s, args.lane_id);
      const ask = getAsk(s, args.lane_id, args.ask_id);
      if (ask.posted_by !== caller.actor && !isCoordinator(lane, config, caller.actor)) {
        throw new ZzError(
          'forbidden',
          `only the poster of ask ${ask.ask_id} (${ask.posted_by}) or a coordinator of lane ${lane.lane_id} may cancel it`,
        );
      }
      if (ask.state === 'answered' || ask.state === 'cancelled') {
        throw new ZzError('conflict', `ask ${ask.ask_id} is already ${ask.state}`);
      }
      return {
        op: 'ask_cancel',
        summary: `ask_cancel ${ask.ask_id} by ${caller.actor}`,
        args: { lane_id: args.lane_id, ask_id: ask.ask_id, reason: reason(args.reason) },
      };
    },
    result: (s, op) => {
      if (op?.op !== 'ask_cancel') throw unexpectedOp(op, 'ask_cancel');
      return askView(s, s.asks.get(op.args.ask_id)!, repo.clock());
    },
  });
  return { ask: r.result, revision: r.revision, replayed: r.replayed };
}

export interface LaneCloseArgs extends WriteOpts {
  lane_id: string;
  reason?: string;
}

export async function laneClose(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LaneCloseArgs,
): Promise<{ lane: LaneView } & WriteMeta> {
  const r = await writeOp(repo, callerIn, repo.lane(args.lane_id), args, {
    tool: 'lane_close',
    request: { lane_id: args.lane_id, reason: args.reason ?? null },
    decide: (s, { caller, config }): LaneOpSpec => {
      const lane = laneOf(s, args.lane_id);
      if (lane.lane_id === '_repo') throw new ZzError('forbidden', 'lane _repo cannot be closed');
      if (!isCoordinator(lane, config, caller.actor) && !isOwner(config, caller.actor)) {
        throw new ZzError(
          'forbidden',
          `only a coordinator of lane ${lane.lane_id} or an owner may close it`,
        );
      }
      assertOpen(lane, 'it is closed already');
      return {
        op: 'lane_close',
        summary: `lane_close ${lane.lane_id} by ${caller.actor}`,
        args: { lane_id: lane.lane_id, reason: reason(args.reason) },
      };
    },
    result: (s) => s,
  });
  return {
    lane: laneView(r.result.lane!, r.revision, r.result),
    revision: r.revision,
    replayed: r.replayed,
  };
}
