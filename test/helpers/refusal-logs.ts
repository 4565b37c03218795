import { configCodec, type ConfigState } from '../../src/core/config-state.js';
import { ladderCodec, LadderState } from '../../src/core/ladder/ladder-state.js';
import { laneCodec, type LaneState } from '../../src/core/lane-state.js';
import type { OpRecord } from '../../src/store/index.js';

// Op logs in which nearly every op is one the guarded fold refuses, as a hostile replica could
// publish them: for the test that a cold fold of them costs linear work
// (test/sync/fold-refusal-cost.test.ts) and for bench/fold-refusals.ts.

const T0 = Date.parse('2026-12-01T00:00:00Z');
// Within the 7 days a claim without lease_seconds may record (LIMITS.leaseSeconds; a longer
// end is lease_mismatch), and past every op of these logs, so a@x holds throughout.
const LEASE_END = new Date(T0 + 6 * 86_400_000).toISOString();

export function factory(prefix: string) {
  let n = 0;
  return (actor: string, spec: Pick<OpRecord, 'op' | 'args'> & { out?: OpRecord['out'] }) => {
    n++;
    return {
      v: 2,
      id: `${prefix}-${String(n).padStart(10, '0')}`,
      actor,
      lamport: n,
      time: new Date(T0 + n).toISOString(),
      ...spec,
    } as OpRecord;
  };
}

export const askId = (n: number) => 'ask-' + n.toString(16).padStart(10, '0');

/**
 * A Lane whose Ask a@x holds, then `n` refused ops by b@x: claims that lose to a@x (claim_lost,
 * in `rejected`) and answers that are not the holder's, each naming a follow-up (not_holder, in
 * `rejected`, its follow-up id in `suppressed`).
 */
export function laneRefusalLog(n: number): OpRecord[] {
  const op = factory('lane');
  const ask = askId(0);
  const ops = [
    op('o@x', { op: 'lane_propose', args: { lane_id: 'l', title: 'L' } }),
    op('o@x', {
      op: 'ask_post',
      args: { lane_id: 'l', kind: 'work', title: 'w' },
      out: { ask_id: ask },
    }),
    op('a@x', {
      op: 'ask_claim',
      args: { lane_id: 'l', ask_id: ask },
      out: { lease_expires_at: LEASE_END },
    }),
  ];
  for (let i = 0; i < n; i++) {
    ops.push(
      i % 2 === 0
        ? op('b@x', {
            op: 'ask_claim',
            args: { lane_id: 'l', ask_id: ask },
            out: { lease_expires_at: LEASE_END },
          })
        : op('b@x', {
            op: 'ask_answer',
            args: { lane_id: 'l', ask_id: ask, outcome: 'deny', result: 'r' },
            out: { follow_ups: [askId(i + 1)] },
          }),
    );
  }
  return ops;
}

/** A config owned by o@x, then `n` role_grants by m@x, who owns nothing (not_owner). */
export function configRefusalLog(n: number): OpRecord[] {
  const op = factory('config');
  const ops = [op('o@x', { op: 'repo_init', args: { owners: ['o@x'], default_branch: 'main' } })];
  for (let i = 0; i < n; i++) {
    ops.push(op('m@x', { op: 'role_grant', args: { grantee: `g${i}@x` } }));
  }
  return ops;
}

/** `n` rung writes by m@x, who coordinates no Lane (scope_denied). */
export function ladderRefusalLog(n: number): OpRecord[] {
  const op = factory('ladder');
  const ops: OpRecord[] = [];
  for (let i = 0; i < n; i++) {
    ops.push(
      op('m@x', {
        op: 'ladder_write_rung',
        args: { lane_id: 'l', ask_id: askId(0), rungs: [] },
      }),
    );
  }
  return ops;
}

/** The Ladder's roles for ladderRefusalLog: no Lane has a coordinator, no config. */
export const NO_LADDER_ROLES = {
  at: () => null,
  now: () => null,
  coordinatorsAt: () => ({ coordinators: [], rooted: [] }),
};

/** Each log folded cold, as Entity.load folds a log it has never read. */
export function foldLane(ops: readonly OpRecord[]): LaneState {
  const s = laneCodec.empty();
  for (const raw of ops) laneCodec.apply(s, parsed(laneCodec.parse(raw)));
  return s;
}

export function foldConfig(ops: readonly OpRecord[]): ConfigState {
  const s = configCodec.empty();
  for (const raw of ops) configCodec.apply(s, parsed(configCodec.parse(raw)));
  return s;
}

export function foldLadder(ops: readonly OpRecord[]): LadderState {
  const s = new LadderState(NO_LADDER_ROLES);
  for (const raw of ops) ladderCodec.apply(s, parsed(ladderCodec.parse(raw)));
  return s;
}

function parsed<T>(p: { ok: true; op: T } | { ok: false; error: string }): T {
  if (!p.ok) throw new Error(p.error);
  return p.op;
}
