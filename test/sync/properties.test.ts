import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { laneCodec } from '../../src/core/lane-state.js';
import { FOLLOW_UP_REASONS } from '../../src/core/follow-ups.js';
import { parseZzCommit, validateIncoming, type SyncReport } from '../../src/core/sync/index.js';
import {
  LANE,
  type Action,
  actionArb,
  type World,
  fold,
  sync,
  step,
  heal,
  newWorld,
  runSchedule,
} from './properties-world.js';

// DESIGN §7's properties over random schedules of ops, syncs, push failures, partitions and
// crashes, with three or four replicas and an in-memory remote. The engine under test is the
// one `zz sync` runs (syncWith); only the ports are in memory. The seed is printed; rerun a
// failure with ZZ_SYNC_SEED=<seed>.

const SEED = Number(process.env.ZZ_SYNC_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.ZZ_SYNC_RUNS ?? 80);

function checkProperties(w: World): void {
  const tip = w.server.refs.get(LANE)!;
  // Convergence: every replica holds exactly the remote's value.
  for (const rep of w.replicas) expect(rep.refs.get(LANE)).toBe(tip);
  const final = fold(w.replicas[0]!, tip);
  // Nothing lost: every op any replica ever wrote is in the log, exactly once.
  const ids = final.ops.map((o) => o.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(new Set(ids.filter((id) => !w.hostile.ops.has(id)))).toEqual(new Set(w.written.keys()));
  // No takeover: the hostile wraps' rival lane_propose never takes effect (lane_exists).
  expect(final.state.lane?.coordinators).toEqual(['a0@x']);
  const refused = new Set(final.state.rejected.map((r) => r.op_id));
  for (const id of ids) if (w.hostile.ops.has(id)) expect(refused.has(id)).toBe(true);
  // The merge trees are what the fold yields (no replica recorded another state).
  const files = w.u.get(tip).files;
  for (const [path, text] of files) expect(laneCodec.file(final.state, path)).toBe(text);
  for (const ask of final.state.asks.values()) {
    expect(files.has(`asks/${ask.ask_id.slice(4, 6)}/${ask.ask_id}.json`)).toBe(true);
  }
  // Monotone clocks along every edge, merges without ops: the remote passes validation.
  const all = [...w.u.ancestors([tip])];
  const parsed = w.replicas[0]!.u;
  const records = all.map((oid) => {
    const c = parsed.get(oid);
    return parseZzCommit({ oid, parents: c.parents, message: c.message });
  });
  const topo = topoSort(records);
  expect(validateIncoming(LANE, topo, new Set(all))).toBeNull();
  // A merge only where both sides moved: when the remote's value is in our history we push
  // ours as it is (a merge of an ancestor would be a commit that says nothing).
  // (Not so for a hostile wrap, nor for the answer to one: ours first, whatever it holds.)
  for (const c of records.filter((r) => r.parents.length === 2)) {
    if (w.hostile.wraps.has(c.revision) || c.parents.some((p) => w.hostile.wraps.has(p))) continue;
    const [theirs, mine] = c.parents as [string, string];
    expect(w.u.ancestors([mine]).has(theirs)).toBe(false);
    expect(w.u.ancestors([theirs]).has(mine)).toBe(false);
  }
  // Follow-ups re-derived: exactly one review per honoured answer with a changeset, none for
  // any other Ask, whatever the replicas recorded.
  for (const ask of final.state.asks.values()) {
    if (ask.kind !== 'work') continue;
    const follows = [...final.state.asks.values()].filter(
      (f) => f.origin?.ask_id === ask.ask_id && FOLLOW_UP_REASONS.has(f.origin.reason),
    );
    const triggered = ask.state === 'answered' && ask.answer?.changeset_id != null;
    expect(follows.map((f) => f.kind)).toEqual(triggered ? ['changeset_review'] : []);
  }
  // Loser visibility: every claim that is not in effect is listed as refused, with a winner.
  const rejected = new Map(final.state.rejected.map((r) => [r.op_id, r]));
  for (const op of final.ops) {
    if (op.op !== 'ask_claim') continue;
    const r = rejected.get(op.id);
    if (r) {
      expect([
        'claim_lost',
        'ask_answered',
        'idempotency_duplicate',
        'idempotency_conflict',
      ]).toContain(r.reason);
      if (r.reason === 'claim_lost') expect(r.winner).toBeTruthy();
    }
  }
  // Idempotency dedupe: at most one effective post per (actor, key).
  const effective = final.ops.filter((o) => o.key !== undefined && !rejected.has(o.id));
  const keys = effective.map((o) => `${o.actor}\0${o.key}`);
  expect(new Set(keys).size).toBe(keys.length);
  for (const o of final.ops.filter((x) => x.key !== undefined && rejected.has(x.id))) {
    const first = effective.find((e) => e.actor === o.actor && e.key === o.key)!;
    expect(rejected.get(o.id)!.reason).toBe(
      first.request_hash === o.request_hash ? 'idempotency_duplicate' : 'idempotency_conflict',
    );
  }
  // Published-prefix stability: each value the remote held folds to a prefix of the next one,
  // and nothing in effect there is ever taken back.
  const timeline = w.server.timeline.get(LANE)!;
  for (let i = 1; i < timeline.length; i++) {
    // Across a hand-made deletion or rewind the remote itself broke the prefix: not ours.
    if (timeline[i]!.vandal || timeline[i - 1]!.vandal || timeline[i - 1]!.oid === null) continue;
    // After one, a replica that had synced what the remote dropped merges it back first (its
    // merge's first parent, history-checks.ts): the prefix kept is that earlier publication.
    const cur = w.replicas[0]!.u.get(timeline[i]!.oid!);
    const restored =
      timeline.slice(0, i).some((v) => v.vandal) &&
      cur.parents.length > 1 &&
      !w.replicas[0]!.u.ancestors([cur.parents[0]!]).has(timeline[i - 1]!.oid!);
    const before = fold(w.replicas[0]!, restored ? cur.parents[0]! : timeline[i - 1]!.oid!);
    const after = fold(w.replicas[0]!, timeline[i]!.oid!);
    expect(after.ops.slice(0, before.ops.length).map((o) => o.id)).toEqual(
      before.ops.map((o) => o.id),
    );
    const rejBefore = new Set(before.state.rejected.map((r) => r.op_id));
    const rejAfter = new Set(after.state.rejected.map((r) => r.op_id));
    for (const op of before.ops) expect(rejAfter.has(op.id)).toBe(rejBefore.has(op.id));
  }
  // At most one holder per Ask at any point of the log: an effective claim by someone else
  // only lands on an open Ask or an expired lease (an oracle independent of the fold's guard).
  const holder = new Map<string, { actor: string; until: number } | null>();
  for (const op of final.ops) {
    if (rejected.has(op.id)) continue;
    const id = String(op.args.ask_id);
    const cur = holder.get(id) ?? null;
    if (op.op === 'ask_claim') {
      if (cur && cur.actor !== op.actor) expect(cur.until).toBeLessThanOrEqual(Date.parse(op.time));
      holder.set(id, { actor: op.actor, until: Date.parse(String(op.out?.lease_expires_at)) });
    } else if (op.op === 'ask_release' || op.op === 'ask_answer') {
      if (op.op === 'ask_answer') expect(cur?.actor).toBe(op.actor);
      holder.set(id, null);
    }
  }
  // Every holder's claim is one of the effective claims.
  for (const ask of final.state.asks.values()) {
    if (ask.state !== 'claimed') continue;
    const claims = final.ops.filter(
      (o) => o.op === 'ask_claim' && o.args.ask_id === ask.ask_id && !rejected.has(o.id),
    );
    expect(claims.at(-1)?.actor).toBe(ask.holder);
  }
}

function topoSort<T extends { revision: string; parents: string[] }>(records: T[]): T[] {
  const by = new Map(records.map((r) => [r.revision, r]));
  const out: T[] = [];
  const done = new Set<string>();
  const visit = (oid: string) => {
    const stack: Array<[string, boolean]> = [[oid, false]];
    while (stack.length) {
      const [o, expanded] = stack.pop()!;
      if (done.has(o)) continue;
      if (expanded) {
        done.add(o);
        out.push(by.get(o)!);
        continue;
      }
      stack.push([o, true]);
      for (const p of by.get(o)!.parents) if (!done.has(p)) stack.push([p, false]);
    }
  };
  for (const r of records) visit(r.revision);
  return out;
}

describe(`sync properties (seed ${SEED}, ${RUNS} runs)`, () => {
  console.log(`sync property seed: ${SEED} (rerun with ZZ_SYNC_SEED=${SEED})`);

  it('convergence, nothing lost, valid clocks, loser visibility, key dedupe, prefix stability, crash safety', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 3, max: 4 })
          .chain((n) =>
            fc.tuple(fc.constant(n), fc.array(actionArb(n), { minLength: 5, maxLength: 45 })),
          ),
        async ([n, actions]) => {
          const w = await runSchedule(n, actions);
          checkProperties(w);
          // Idempotence: a sync with nothing new makes no commit and moves nothing.
          const objects = w.u.objects.size;
          const before = w.replicas.map((r) => new Map(r.refs));
          for (let r = 0; r < n; r++) {
            const rep = (await sync(w, r)) as SyncReport;
            expect(rep.merged).toEqual([]);
            expect(rep.pushed).toEqual([]);
          }
          expect(w.u.objects.size).toBe(objects);
          expect(w.replicas.map((r) => new Map(r.refs))).toEqual(before);
        },
      ),
      {
        seed: SEED,
        numRuns: RUNS,
        // Found by seed 832613560: replica 3's answer (with a changeset and a stray second
        // review record) loses its claim to replica 0's answer (no changeset); the stray review
        // must not survive the honoured answer that listed no follow-ups.
        examples: [
          [
            [
              4,
              [
                { t: 'claim', r: 3, ask: 0 },
                { t: 'answer', r: 3, ask: 0 },
                { t: 'keyed', r: 0, key: 0, same: false },
                { t: 'sync', r: 0 },
                { t: 'claim', r: 0, ask: 0 },
                { t: 'answer', r: 0, ask: 0 },
                { t: 'tick', s: 0 },
              ] as Action[],
            ],
          ],
          // Found by seed 999792686: replica 1, which had synced only the seeded Lane, answered a
          // wrap of replica 0's published claim by folding every remote op after its own by
          // Lamport (the rival's lane_propose, Lamport 1, before the claim); after the ref was
          // deleted and replica 0 recreated its claim, that order was merged back over it and
          // taken (wrap-then-deletion.test.ts runs it on real git).
          [
            [
              3,
              [
                { t: 'claim', r: 0, ask: 0 },
                { t: 'sync', r: 0 },
                { t: 'wrap' },
                { t: 'sync', r: 1 },
                { t: 'claim', r: 1, ask: 0 },
                { t: 'vandal', rewind: false, back: 0 },
                { t: 'partition', r: 0, on: false },
                { t: 'wrap' },
                { t: 'claim', r: 1, ask: 1 },
              ] as Action[],
            ],
          ],
        ],
      },
    );
  }, 120_000);

  it('the op set does not depend on the order replicas sync in', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          actionArb(3).filter((a) => a.t !== 'sync'),
          { minLength: 3, maxLength: 25 },
        ),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 3, maxLength: 12 }),
        async (actions, order) => {
          const idsOf = async (syncs: number[]) => {
            const w = newWorld(3);
            await sync(w, 0);
            for (const r of [1, 2]) await sync(w, r);
            for (const a of actions) await step(w, a);
            for (const r of syncs) await sync(w, r);
            await heal(w);
            const f = fold(w.replicas[0]!, w.server.refs.get(LANE));
            return new Set(f.ops.map((o) => o.id.replace(/-.*/, '') + o.op + o.lamport));
          };
          expect(await idsOf(order)).toEqual(await idsOf([...order].reverse()));
        },
      ),
      { seed: SEED, numRuns: Math.max(10, RUNS / 4) },
    );
  }, 120_000);
});
