import type { AskDoc, LaneDoc } from '../schema/lane.js';
import type { LoggedOp } from '../store/index.js';
import type { LaneState } from './lane-state.js';

// What callers see: stored documents plus what is derived at read time (blocked, lease
// expiry) — never stored, because it depends on other Asks and on the clock.

export type BlockedBy = {
  ask_id: string;
  state: AskDoc['state'] | 'missing';
  outcome: string | null;
};

export type AskView = Omit<AskDoc, 'origin'> & {
  blocked: boolean;
  blocked_by: BlockedBy[];
  origin: AskDoc['origin'];
  lease_expired: boolean;
};

export type LaneView = LaneDoc & {
  revision: string | null;
};

export const isResolved = (a: AskDoc | undefined): boolean =>
  !!a &&
  a.state === 'answered' &&
  (a.answer?.outcome === 'complete' || a.answer?.outcome === 'grant');

export function leaseExpired(a: AskDoc, now: Date): boolean {
  return (
    a.state === 'claimed' &&
    a.lease_expires_at !== null &&
    Date.parse(a.lease_expires_at) <= now.getTime()
  );
}

export function blockedBy(s: LaneState, a: AskDoc): BlockedBy[] {
  const out: BlockedBy[] = [];
  for (const d of a.depends_on) {
    const dep = s.asks.get(d);
    if (!isResolved(dep))
      out.push({
        ask_id: d,
        state: dep?.state ?? 'missing',
        outcome: dep?.answer?.outcome ?? null,
      });
  }
  return out;
}

export function askView(s: LaneState, a: AskDoc, now: Date): AskView {
  const bb = blockedBy(s, a);
  const expired = leaseExpired(a, now);
  return {
    ...a,
    state: expired ? 'open' : a.state,
    holder: expired ? null : a.holder,
    lease_expires_at: expired ? null : a.lease_expires_at,
    lease_expired: expired,
    blocked: bb.length > 0,
    blocked_by: bb,
  };
}

export function laneView(lane: LaneDoc, revision: string | null): LaneView {
  return { ...lane, revision };
}

export type HistoryEntry = {
  revision: string | null;
  op: string;
  actor: string;
  time: string;
  lamport: number;
  ask_id: string | null;
  args: Record<string, unknown>;
  out: Record<string, unknown> | null;
};

/**
 * The op log as callers read it. A lease that ran out is not an op (nothing wrote it), so an
 * `ask_lease_expired` entry is derived where a claim's lease passed before anything else
 * happened to that Ask.
 */
export function historyView(log: readonly LoggedOp[], now: Date): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  const openLease = new Map<string, { holder: string; until: string }>();
  const expire = (askId: string, before: number) => {
    const l = openLease.get(askId);
    if (l && Date.parse(l.until) <= before) {
      out.push({
        revision: null,
        op: 'ask_lease_expired',
        actor: l.holder,
        time: l.until,
        lamport: 0,
        ask_id: askId,
        args: { ask_id: askId },
        out: null,
      });
    }
    openLease.delete(askId);
  };
  for (const op of log) {
    const askId =
      typeof op.args.ask_id === 'string'
        ? op.args.ask_id
        : typeof op.out?.ask_id === 'string'
          ? op.out.ask_id
          : null;
    if (askId) expire(askId, Date.parse(op.time));
    out.push({
      revision: op.revision,
      op: op.op,
      actor: op.actor,
      time: op.time,
      lamport: op.lamport,
      ask_id: askId,
      args: op.args,
      out: op.out ?? null,
    });
    if (op.op === 'ask_claim' && askId && typeof op.out?.lease_expires_at === 'string') {
      openLease.set(askId, { holder: op.actor, until: op.out.lease_expires_at });
    }
  }
  for (const askId of [...openLease.keys()]) expire(askId, now.getTime());
  return out;
}
