import fc from 'fast-check';
import { expect } from 'vitest';
import { laneCodec, type LaneState } from '../../src/core/lane-state.js';
import { SERVER_ACTOR } from '../../src/core/follow-ups.js';
import { parsedLaneOp } from '../helpers/core-fixture.js';
import {
  formatMergeMessage,
  parseZzCommit,
  syncWith,
  type SyncReport,
} from '../../src/core/sync/index.js';
import {
  commitLamports,
  formatOpMessage,
  publicationOrder,
  type OpRecord,
} from '../../src/store/index.js';
import {
  CrashError,
  MemoryRemoteRepo,
  MemoryReplica,
  Universe,
  type CrashStep,
} from './memory-replica.js';

// The world of properties.test.ts: replicas around an in-memory remote, the random actions
// (ops, syncs, push failures, partitions, crashes) and how each is run on it.

export const LANE = 'refs/zz/lanes/l';
export const LEASE_MS = 60_000;

export type Action =
  | { t: 'post'; r: number }
  | { t: 'claim' | 'release' | 'answer'; r: number; ask: number }
  | { t: 'keyed'; r: number; key: number; same: boolean }
  | { t: 'sync'; r: number }
  | { t: 'partition'; r: number; on: boolean }
  | { t: 'pushfail'; r: number }
  | { t: 'crash'; r: number; step: CrashStep }
  | { t: 'tick'; s: number }
  | { t: 'vandal'; rewind: boolean; back: number }
  | { t: 'wrap' };

export const actionArb = (n: number): fc.Arbitrary<Action> => {
  const r = fc.integer({ min: 0, max: n - 1 });
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ t: fc.constant('post' as const), r }) },
    {
      weight: 8,
      arbitrary: fc.record({
        t: fc.constantFrom(
          'claim' as const,
          'claim' as const,
          'release' as const,
          'answer' as const,
        ),
        r,
        ask: fc.nat(4),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('keyed' as const),
        r,
        key: fc.nat(2),
        same: fc.boolean(),
      }),
    },
    { weight: 5, arbitrary: fc.record({ t: fc.constant('sync' as const), r }) },
    {
      weight: 1,
      arbitrary: fc.record({ t: fc.constant('partition' as const), r, on: fc.boolean() }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('pushfail' as const), r }) },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('crash' as const),
        r,
        step: fc.constantFrom<CrashStep>('fetch', 'merge', 'update', 'push'),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('tick' as const), s: fc.nat(90) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        t: fc.constant('vandal' as const),
        rewind: fc.boolean(),
        back: fc.nat(5),
      }),
    },
    // A hostile pusher: a rival lane_propose wrapped in a merge [rival, remote tip].
    { weight: 1, arbitrary: fc.record({ t: fc.constant('wrap' as const) }) },
  );
};

export interface World {
  u: Universe;
  server: MemoryRemoteRepo;
  replicas: MemoryReplica[];
  now: number;
  written: Map<string, OpRecord>;
  /** The hostile pusher's ops and commits (its wraps): kept when fetched, never in effect. */
  hostile: { ops: Set<string>; wraps: Set<string> };
  counter: number;
}

export function fold(rep: MemoryReplica, tip: string | undefined) {
  const state = laneCodec.empty();
  if (!tip) return { state, lamport: 0, ops: [] as OpRecord[] };
  const commits = rep.u.ancestors([tip]);
  const records = [...commits].map((oid) => {
    const c = rep.u.get(oid);
    return parseZzCommit({ oid, parents: c.parents, message: c.message });
  });
  const ops = publicationOrder(records, tip).map((o) => o.op);
  for (const op of ops) laneCodec.apply(state, parsedLaneOp(op));
  return { state, lamport: commitLamports(records).get(tip) ?? 0, ops };
}

/** A local write as the daemon makes it: decided against local state, one op, one commit. */
export function write(
  w: World,
  r: number,
  make: (
    s: LaneState,
    actor: string,
  ) => Omit<OpRecord, 'id' | 'actor' | 'lamport' | 'time' | 'replica'> | null,
  actor = `a${r}@x`,
): void {
  const rep = w.replicas[r]!;
  const tip = rep.refs.get(LANE);
  const { state, lamport } = fold(rep, tip);
  const spec = make(state, actor);
  if (!spec) return;
  const op: OpRecord = {
    id: `r${r}-${(w.counter++).toString(16).padStart(12, '0')}`,
    actor,
    lamport: lamport + 1,
    time: new Date(w.now).toISOString(),
    replica: `rep${r}`,
    ...spec,
  };
  const files = new Map(tip ? w.u.get(tip).files : []);
  for (const p of laneCodec.apply(state, parsedLaneOp(op))) {
    const f = laneCodec.file(state, p);
    if (f === null) files.delete(p);
    else files.set(p, f);
  }
  const oid = w.u.put({ parents: tip ? [tip] : [], message: formatOpMessage(op.op, [op]), files });
  rep.refs.set(LANE, oid);
  w.written.set(op.id, op);
}

export function askAt(s: LaneState, i: number) {
  const asks = [...s.asks.values()]
    .filter((a) => a.kind === 'work')
    .sort((a, b) => (a.ask_id < b.ask_id ? -1 : 1));
  return asks.length ? asks[i % asks.length]! : null;
}

export function newAskId(w: World): string {
  return 'ask-' + (w.counter++).toString(16).padStart(10, '0');
}

export async function sync(w: World, r: number): Promise<SyncReport | 'crashed'> {
  const rep = w.replicas[r]!;
  try {
    return await syncWith(rep, rep.remote(), { backoff: async () => {}, maxAttempts: 4 });
  } catch (e) {
    if (e instanceof CrashError) return 'crashed';
    if (e instanceof Error && /kept losing races/.test(e.message)) return 'crashed';
    throw e;
  }
}

export async function step(w: World, a: Action): Promise<void> {
  switch (a.t) {
    case 'post':
      return write(w, a.r, () => ({
        op: 'ask_post',
        args: { lane_id: 'l', kind: 'work', title: `t${w.counter}` },
        out: { ask_id: newAskId(w) },
      }));
    case 'keyed': {
      // The same actor on several machines reusing an idempotency key.
      const hash = a.same ? 'same' : `other${a.r}`;
      return write(
        w,
        a.r,
        () => ({
          op: 'ask_post',
          key: `k${a.key}`,
          request_hash: hash,
          args: { lane_id: 'l', kind: 'work', title: `keyed ${a.key}` },
          out: { ask_id: newAskId(w) },
        }),
        'shared@x',
      );
    }
    case 'claim':
      return write(w, a.r, (s, actor) => {
        const ask = askAt(s, a.ask);
        if (!ask || ask.state === 'answered') return null;
        const expired = ask.lease_expires_at !== null && Date.parse(ask.lease_expires_at) <= w.now;
        if (ask.state === 'claimed' && ask.holder !== actor && !expired) return null;
        return {
          op: 'ask_claim',
          args: { lane_id: 'l', ask_id: ask.ask_id, lease_seconds: 60 },
          out: { lease_expires_at: new Date(w.now + LEASE_MS).toISOString() },
        };
      });
    case 'release':
      return write(w, a.r, (s, actor) => {
        const ask = askAt(s, a.ask);
        if (!ask || ask.state !== 'claimed' || ask.holder !== actor) return null;
        return { op: 'ask_release', args: { lane_id: 'l', ask_id: ask.ask_id } };
      });
    case 'answer': {
      // Answers with a changeset trigger a review follow-up. How the replica recorded it
      // varies (mode): not at all (missing), once, or once plus a stray second one; the fold
      // derives it from the answer either way (checkProperties: exactly one per answer).
      const mode = (a.ask + a.r) % 4;
      const follow = mode === 0 ? null : newAskId(w);
      let answered: string | null = null;
      write(w, a.r, (s, actor) => {
        const ask = askAt(s, a.ask);
        if (!ask || ask.state !== 'claimed' || ask.holder !== actor) return null;
        answered = ask.ask_id;
        return {
          op: 'ask_answer',
          args: { lane_id: 'l', ask_id: ask.ask_id, outcome: 'complete', result: 'ok' },
          out: follow
            ? { changeset_id: 'cs-' + follow.slice(4), follow_ups: [follow] }
            : { follow_ups: [] },
        };
      });
      const origin = answered;
      if (origin === null || follow === null || mode === 2) return;
      const records = mode === 3 ? [follow, newAskId(w)] : [follow];
      for (const id of records) {
        write(w, a.r, () => ({
          op: 'ask_post',
          args: {
            lane_id: 'l',
            kind: 'changeset_review',
            title: 'Review',
            posted_by: SERVER_ACTOR,
            origin: { ask_id: origin, reason: 'work completed with a changeset' },
          },
          out: { ask_id: id },
        }));
      }
      return;
    }
    case 'sync':
      await sync(w, a.r);
      return;
    case 'partition':
      w.replicas[a.r]!.offline = a.on;
      return;
    case 'pushfail':
      w.replicas[a.r]!.failNextPush = true;
      return;
    case 'crash':
      w.replicas[a.r]!.crashAt = a.step;
      return;
    case 'tick':
      w.now += a.s * 1000;
      return;
    case 'vandal': {
      // Someone deletes the lane's ref on the remote, or force-pushes it back to an older value.
      const values = (w.server.timeline.get(LANE) ?? []).filter((v) => v.oid !== null);
      if (a.rewind && values.length > 0) {
        const old = values[Math.max(0, values.length - 1 - a.back)]!.oid!;
        w.server.set(LANE, old, true);
      } else w.server.set(LANE, null, true);
      return;
    }
    case 'wrap': {
      const tip = w.server.refs.get(LANE);
      if (tip === undefined) return;
      const op: OpRecord = {
        id: `mallory-${(w.counter++).toString(16).padStart(12, '0')}`,
        actor: 'mallory@x',
        lamport: 1,
        time: new Date(w.now).toISOString(),
        op: 'lane_propose',
        args: { lane_id: 'l', title: 'Mine now' },
      };
      const state = laneCodec.empty();
      const files = new Map<string, string>();
      for (const p of laneCodec.apply(state, parsedLaneOp(op))) {
        files.set(p, laneCodec.file(state, p)!);
      }
      const rival = w.u.put({ parents: [], message: formatOpMessage(op.op, [op]), files });
      const lamport = fold(w.replicas[0]!, tip).lamport + 1;
      const wrap = w.u.put({
        parents: [rival, tip],
        message: formatMergeMessage('Merge', lamport),
        files: new Map(w.u.get(tip).files),
      });
      w.hostile.ops.add(op.id);
      w.hostile.wraps.add(wrap);
      w.server.set(LANE, wrap, true);
      return;
    }
  }
}

export async function heal(w: World): Promise<void> {
  for (const rep of w.replicas) {
    rep.offline = false;
    rep.failNextPush = false;
    rep.crashAt = null;
  }
  // Two full rounds: the first gathers everything on the remote, the second spreads it.
  for (let round = 0; round < 2; round++) {
    for (let r = 0; r < w.replicas.length; r++) {
      const out = await sync(w, r);
      expect(out).not.toBe('crashed');
      expect((out as SyncReport).offline).toBeNull();
    }
  }
}

export function newWorld(n: number): World {
  const u = new Universe();
  const server = new MemoryRemoteRepo();
  const w: World = {
    u,
    server,
    replicas: Array.from({ length: n }, (_, i) => new MemoryReplica(`rep${i}`, u, server)),
    now: Date.parse('2026-12-01T00:00:00Z'),
    written: new Map(),
    hostile: { ops: new Set(), wraps: new Set() },
    counter: 0,
  };
  write(w, 0, () => ({ op: 'lane_propose', args: { lane_id: 'l', title: 'L' } }));
  // A few Asks every replica sees from the start, so that claims collide often.
  for (let i = 0; i < 3; i++) {
    write(w, 0, () => ({
      op: 'ask_post',
      args: { lane_id: 'l', kind: 'work', title: `seed ${i}` },
      out: { ask_id: newAskId(w) },
    }));
  }
  return w;
}

export async function runSchedule(n: number, actions: Action[]): Promise<World> {
  const w = newWorld(n);
  await sync(w, 0);
  for (let r = 1; r < n; r++) await sync(w, r);
  for (const a of actions) await step(w, a);
  await heal(w);
  return w;
}
