import { describe, expect, it } from 'vitest';
import { laneCodec, type LaneState } from '../../src/core/lane-state.js';
import type { ConfigDoc } from '../../src/schema/config.js';
import type { OpRecord } from '../../src/store/index.js';
import { LIMITS } from '../../src/schema/limits.js';
import { parsedLaneOp } from '../helpers/core-fixture.js';

// The guarded apply (DESIGN §7) on logs a merge can produce: ops that each replica's daemon
// allowed, folded together in publication order.

let n = 0;
const T0 = Date.parse('2026-12-01T00:00:00Z');
function op(
  actor: string,
  spec: Pick<OpRecord, 'op' | 'args'> & { out?: OpRecord['out'] },
  secs = n,
): OpRecord {
  n++;
  return {
    id: `op-${String(n).padStart(8, '0')}`,
    actor,
    lamport: n,
    time: new Date(T0 + secs * 1000).toISOString(),
    ...spec,
  };
}
function fold(ops: OpRecord[]): { s: LaneState; touched: string[] } {
  const s = laneCodec.empty();
  const touched: string[] = [];
  for (const o of ops) touched.push(...laneCodec.apply(s, parsedLaneOp(o)));
  return { s, touched };
}
/** refs/zz/config as the fold's roles give it: owner o@x, these repo kinds. */
const repoConfig = (ask_kinds: ConfigDoc['ask_kinds'] = {}): ConfigDoc => ({
  format: 1,
  owners: ['o@x'],
  visibility: 'private',
  default_branch: 'main',
  ask_kinds,
  created_by: 'o@x',
  created_at: new Date(T0).toISOString(),
});
const ASK = 'ask-00000000aa';
const base = () => [
  op('o@x', { op: 'lane_propose', args: { lane_id: 'l', title: 'L' } }),
  op('o@x', {
    op: 'ask_post',
    args: { lane_id: 'l', kind: 'work', title: 'x' },
    out: { ask_id: ASK },
  }),
];
const claim = (actor: string, secs: number) =>
  op(
    actor,
    {
      op: 'ask_claim',
      args: { lane_id: 'l', ask_id: ASK, lease_seconds: 60 },
      out: { lease_expires_at: new Date(T0 + (secs + 60) * 1000).toISOString() },
    },
    secs,
  );
const answer = (actor: string, outcome: 'complete' | 'deny', followUps: string[] = []) =>
  op(actor, {
    op: 'ask_answer',
    args: { lane_id: 'l', ask_id: ASK, outcome, result: outcome },
    out: { follow_ups: followUps },
  });

describe('guarded fold', () => {
  it('a second answer from another replica is kept and raises resolve_conflict; its follow-ups are not posted', () => {
    // The same agent held the claim on two machines (a renewal offline) and answered on both.
    const follow = 'ask-00000000bb';
    const { s, touched } = fold([
      ...base(),
      claim('a@x[claude]', 10),
      answer('a@x[claude]', 'complete'),
      answer('a@x[claude]', 'deny', [follow]),
      op('zz@localhost', {
        op: 'ask_post',
        args: {
          lane_id: 'l',
          kind: 'review',
          title: 'r',
          origin: { ask_id: ASK, reason: 'review' },
        },
        out: { ask_id: follow },
      }),
    ]);
    expect(s.asks.get(ASK)!.answer!.outcome).toBe('complete');
    const conflict = [...s.asks.values()].find((a) => a.kind === 'resolve_conflict')!;
    expect(conflict.origin).toEqual({ ask_id: ASK, reason: 'resolve_conflict' });
    expect(conflict.payload).toMatchObject({
      conflicting: { outcome: 'deny', answered_by: 'a@x[claude]' },
    });
    expect(touched).toContain(`asks/${conflict.ask_id.slice(4, 6)}/${conflict.ask_id}.json`);
    expect(s.asks.has(follow)).toBe(false);
    expect(s.rejected.map((r) => r.reason)).toEqual([
      'conflicting_answer',
      'follow_up_of_refused_answer',
    ]);
  });

  it('a claim lands only on an open Ask or an expired lease; release and answer only from the holder', () => {
    const { s } = fold([
      ...base(),
      claim('a@x', 10),
      claim('b@x', 20), // a's lease runs to 70: lost
      op('b@x', { op: 'ask_release', args: { lane_id: 'l', ask_id: ASK } }), // not the holder
      answer('b@x', 'complete'), // not the holder
      claim('c@x', 71), // a's lease expired at 70
    ]);
    expect(s.asks.get(ASK)!.holder).toBe('c@x');
    expect(s.rejected.map((r) => [r.reason, r.actor, r.winner ?? null])).toEqual([
      ['claim_lost', 'b@x', 'a@x'],
      ['not_holder', 'b@x', 'a@x'],
      ['not_holder', 'b@x', 'a@x'],
    ]);
  });

  it('a closed Lane renews and answers a live claim only; no new claim, no new Ask', () => {
    const at = (actor: string, spec: Parameters<typeof op>[1], secs: number) =>
      op(actor, spec, secs);
    const answerAt = (secs: number) =>
      at(
        'a@x',
        { op: 'ask_answer', args: { lane_id: 'l', ask_id: ASK, outcome: 'complete', result: 'r' } },
        secs,
      );
    const { s } = fold([
      ...base(),
      claim('a@x', 10), // lease to 70
      at('o@x', { op: 'lane_close', args: { lane_id: 'l' } }, 20),
      claim('a@x', 30), // the live holder renews: lease to 90
      claim('b@x', 40), // a new claim: refused
      at(
        'o@x',
        {
          op: 'ask_post',
          args: { lane_id: 'l', kind: 'work', title: 'y' },
          out: { ask_id: 'ask-00000000cc' },
        },
        41,
      ),
      answerAt(95), // the lease ran out at 90: not the holder's any more
      answerAt(50),
    ]);
    expect(s.rejected.map((r) => [r.op, r.actor, r.reason, r.closed_by])).toEqual([
      ['ask_claim', 'b@x', 'lane_closed', 'o@x'],
      ['ask_post', 'o@x', 'lane_closed', 'o@x'],
      ['ask_answer', 'a@x', 'lane_closed', 'o@x'],
    ]);
    expect(s.asks.get(ASK)).toMatchObject({ state: 'answered', holder: 'a@x' });
    expect(s.asks.has('ask-00000000cc')).toBe(false);
    // A lapsed lease is not handed out again, not even to its last holder.
    const lapsed = fold([
      ...base(),
      claim('a@x', 10),
      at('o@x', { op: 'lane_close', args: { lane_id: 'l' } }, 20),
      claim('a@x', 80),
    ]).s;
    expect(lapsed.rejected.map((r) => [r.actor, r.reason])).toEqual([['a@x', 'lane_closed']]);
    expect(lapsed.asks.get(ASK)!.lease_expires_at).toBe(new Date(T0 + 70_000).toISOString());
  });

  it("a closed Lane still hands out the workflow's follow-ups of work in hand, from anywhere", () => {
    // The review a finished changeset asks for is work in hand (lane-closed.ts): refused, the
    // changeset could never be reviewed or landed. Checked red with finishesWorkInHand false.
    const review = 'ask-00000000bb';
    const other = 'ask-00000000cc';
    const { s } = fold([
      ...base(),
      op('o@x', {
        op: 'ask_post',
        args: { lane_id: 'l', kind: 'work', title: 'new work' },
        out: { ask_id: other },
      }),
      op('o@x', {
        op: 'lane_grant',
        args: { lane_id: 'l', grantee: 'b@x', role: 'maintainer' },
      }),
      claim('a@x', 10),
      // The answer with a changeset: the fold derives its review (DESIGN §7).
      op('a@x', {
        op: 'ask_answer',
        args: {
          lane_id: 'l',
          ask_id: ASK,
          outcome: 'complete',
          changeset: { base: 'a'.repeat(40), message: 'x', paths: ['x.txt'] },
        },
        out: { follow_ups: [review], changeset_id: 'cs-00000000aa' },
      }),
      op('o@x', { op: 'lane_close', args: { lane_id: 'l' } }, 20),
      op(
        'b@x',
        {
          op: 'ask_claim',
          args: { lane_id: 'l', ask_id: review, lease_seconds: 60 },
          out: { lease_expires_at: new Date(T0 + 90_000).toISOString() },
        },
        30,
      ),
      op(
        'b@x',
        {
          op: 'ask_claim',
          args: { lane_id: 'l', ask_id: other, lease_seconds: 60 },
          out: { lease_expires_at: new Date(T0 + 91_000).toISOString() },
        },
        31,
      ),
      op('b@x', { op: 'ask_answer', args: { lane_id: 'l', ask_id: review, outcome: 'grant' } }, 40),
    ]);
    expect(s.rejected.map((r) => [r.op, r.actor, r.reason, r.ask_id])).toEqual([
      ['ask_claim', 'b@x', 'lane_closed', other],
    ]);
    expect(s.asks.get(review)).toMatchObject({ state: 'answered', holder: 'b@x' });
    expect(s.asks.get(other)).toMatchObject({ state: 'open', holder: null });
  });

  it('lists stay within LIMITS.list, a Lane keeps a coordinator, _repo stays open', () => {
    const grant = (who: string, role: 'coordinator' | 'maintainer', revoke = false) =>
      op('o@x', { op: 'lane_grant', args: { lane_id: 'l', grantee: who, role, revoke } });
    const many = Array.from({ length: LIMITS.list + 1 }, (_, i) => grant(`m${i}@x`, 'maintainer'));
    const { s } = fold([
      base()[0]!,
      grant('o@x', 'coordinator', true), // the last coordinator
      ...many,
      grant('m0@x', 'maintainer'), // already one: no growth, no refusal
      ...Array.from({ length: LIMITS.list + 1 }, (_, i) =>
        op('o@x', { op: 'lane_add_related', args: { lane_id: 'l', related_lane_id: `r${i}` } }),
      ),
    ]);
    expect(s.rejected.map((r) => [r.op, r.reason])).toEqual([
      ['lane_grant', 'last_coordinator'],
      ['lane_grant', 'list_full'],
      ['lane_add_related', 'list_full'],
    ]);
    expect(s.lane!.related_lanes).toHaveLength(LIMITS.list);
    expect(s.lane!.coordinators).toEqual(['o@x']);
    expect(s.lane!.maintainers).toHaveLength(LIMITS.list);
    const repo = fold([
      op('o@x', { op: 'lane_propose', args: { lane_id: '_repo', title: 'R' } }),
      op('o@x', { op: 'lane_close', args: { lane_id: '_repo' } }),
    ]).s;
    expect(repo.rejected.map((r) => r.reason)).toEqual(['lane_unclosable']);
    expect(repo.lane!.closed).toBeUndefined();
  });

  it('an answer no kind allows unblocks nothing; a full Lane raises no resolve_conflict and takes no follow-up', () => {
    const DEP = 'ask-00000000d0';
    const WAITS = 'ask-00000000d1';
    const postAsk = (id: string, deps: string[] = []) =>
      op('o@x', {
        op: 'ask_post',
        args: { lane_id: 'l', kind: 'work', title: id, depends_on: deps },
        out: { ask_id: id },
      });
    const claimOf = (actor: string, id: string) =>
      op(actor, {
        op: 'ask_claim',
        // No lease_seconds (an older zz): the recorded end stands, being within the cap.
        args: { lane_id: 'l', ask_id: id },
        out: { lease_expires_at: new Date(T0 + 3_600_000).toISOString() },
      });
    // A hostile replica "grants" the dependency (refused: work takes complete or deny), then
    // claims what waits on it: that refused answer does not excuse the claim (lane-state.ts).
    const { s } = fold([
      ...base(),
      postAsk(DEP),
      postAsk(WAITS, [DEP]),
      claimOf('h@x', DEP),
      op('h@x', {
        op: 'ask_answer',
        args: { lane_id: 'l', ask_id: DEP, outcome: 'grant', result: 'x' },
        out: { follow_ups: [] },
      }),
      claimOf('h@x', WAITS),
    ]);
    expect(s.rejected.map((r) => [r.op, r.reason, r.blocked_by])).toEqual([
      ['ask_answer', 'outcome_not_allowed', undefined],
      ['ask_claim', 'dependency_unresolved', [DEP]],
    ]);
    expect(s.asks.get(WAITS)).toMatchObject({ state: 'open', holder: null });

    // Fill the Lane to LIMITS.asksPerLane (documents shared: only the count matters here).
    const W2 = 'ask-00000000e2';
    const full = fold([
      ...base(),
      postAsk(W2),
      claim('a@x', 10),
      answer('a@x', 'complete'),
      claimOf('a@x', W2),
    ]).s;
    const filler = full.asks.get(ASK)!;
    for (let i = 0; full.asks.size < LIMITS.asksPerLane; i++) {
      full.asks.set(`ask-f${String(i).padStart(9, '0')}`, filler);
    }
    const size = full.asks.size;
    for (const o of [
      // A second answer to an answered Ask: refused, and no resolve_conflict Ask.
      answer('a@x', 'deny'),
      postAsk('ask-00000000e0'),
      // An answer whose follow-up would not fit (the daemon refuses it alike).
      op('a@x', {
        op: 'ask_answer',
        args: { lane_id: 'l', ask_id: W2, outcome: 'complete', result: 'ok' },
        out: { follow_ups: ['ask-00000000e1'] },
      }),
    ]) {
      laneCodec.apply(full, parsedLaneOp(o));
    }
    expect(full.rejected.map((r) => [r.op, r.reason])).toEqual([
      ['ask_answer', 'lane_full'],
      ['ask_post', 'lane_full'],
      ['ask_answer', 'lane_full'],
    ]);
    expect(full.asks.size).toBe(size);
    expect(full.asks.get(W2)).toMatchObject({ state: 'claimed', answer: null });
  });

  it('a claim of an Ask whose dependency was posted by a role the merge refused stands', () => {
    const D = 'ask-00000000d1';
    const { s } = fold([
      op('o@x', { op: 'lane_propose', args: { lane_id: 'l', title: 'L' } }),
      // A workflow kind posted by hand by one who is not (or no longer) a coordinator.
      op('b@x', {
        op: 'ask_post',
        args: { lane_id: 'l', kind: 'changeset_review', title: 'd' },
        out: { ask_id: D },
      }),
      op('m@x', {
        op: 'ask_post',
        args: { lane_id: 'l', kind: 'work', title: 'x', depends_on: [D] },
        out: { ask_id: ASK },
      }),
      claim('m@x', 10),
    ]);
    expect(s.rejected.map((r) => [r.op, r.reason])).toEqual([['ask_post', 'scope_denied']]);
    expect(s.asks.get(ASK)).toMatchObject({ state: 'claimed', holder: 'm@x' });
  });

  // Kind names are any [a-z][a-z0-9_]*: "constructor" once found Object.prototype's in the
  // built-in table, looked built in, and the answer's outcome check threw in every fold.
  it('a kind named like an Object.prototype member is an ordinary name, never a crash', () => {
    const post = op('o@x', {
      op: 'ask_post',
      args: { lane_id: 'l', kind: 'constructor', title: 'x' },
      out: { ask_id: ASK },
    });
    const propose = op('o@x', { op: 'lane_propose', args: { lane_id: 'l', title: 'L' } });
    // Repo kinds unknown (no config at that time): a custom kind, answered as one.
    const { s } = fold([propose, post, claim('a@x', 10), answer('a@x', 'complete')]);
    expect(s.asks.get(ASK)).toMatchObject({ kind: 'constructor', state: 'answered' });
    expect([...s.rejected]).toEqual([]);
    // Repo kinds known: the kind is unknown, refused like any other.
    const k = laneCodec.empty();
    k.roles = { at: () => repoConfig(), now: () => repoConfig() };
    for (const o of [propose, post, claim('a@x', 10), answer('a@x', 'complete')]) {
      laneCodec.apply(k, parsedLaneOp(o));
    }
    expect(k.rejected.map((r) => r.reason)).toContain('kind_unknown');
    expect(k.asks.has(ASK)).toBe(false);
  });

  it('refuses a post of a kind neither the repo nor the Lane defines; a kind of a refused proposal of the Lane stands', () => {
    const s = laneCodec.empty();
    const config = repoConfig({ triage: 'member' });
    s.roles = { at: () => config, now: () => config };
    const postKind = (kind: string, id: string) =>
      op('o@x', { op: 'ask_post', args: { lane_id: 'l', kind, title: kind }, out: { ask_id: id } });
    for (const o of [
      op('o@x', {
        op: 'lane_propose',
        args: { lane_id: 'l', title: 'L', ask_kinds: { spec: 'member' } },
      }),
      // Another machine proposed the same Lane id with a kind of its own: its posts saw it.
      op('b@x', {
        op: 'lane_propose',
        args: { lane_id: 'l', title: 'L', ask_kinds: { design: 'member' } },
      }),
      postKind('work', 'ask-00000000c1'),
      postKind('triage', 'ask-00000000c2'),
      postKind('spec', 'ask-00000000c3'),
      postKind('design', 'ask-00000000c4'),
      postKind('wrok', 'ask-00000000c5'),
    ]) {
      laneCodec.apply(s, parsedLaneOp(o));
    }
    expect(s.rejected.map((r) => [r.op, r.reason, r.ask_id])).toEqual([
      ['lane_propose', 'lane_exists', undefined],
      ['ask_post', 'kind_unknown', 'ask-00000000c5'],
    ]);
    expect([...s.asks.keys()]).toEqual([
      'ask-00000000c1',
      'ask-00000000c2',
      'ask-00000000c3',
      'ask-00000000c4',
    ]);
  });
});
