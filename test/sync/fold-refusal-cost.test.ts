import { describe, expect, it } from 'vitest';
import { configCodec, type ConfigState } from '../../src/core/config-state.js';
import { CowMap } from '../../src/core/cow-map.js';
import { ladderCodec, LadderState } from '../../src/core/ladder/ladder-state.js';
import { laneCodec, type LaneState } from '../../src/core/lane-state.js';
import { historyView } from '../../src/core/views.js';
import { OpLog, type EntityCodec, type LoggedOp, type OpRecord } from '../../src/store/index.js';
import {
  askId,
  configRefusalLog,
  factory,
  ladderRefusalLog,
  laneRefusalLog,
  NO_LADDER_ROLES,
} from '../helpers/refusal-logs.js';

// The folds list every op they refuse (a Lane's `rejected` and `suppressed`, the config's and
// the Ladder's `rejected`), and snapshots share those lists. Each refusal once copied its
// whole list: a hostile replica's 50,000 refused ops were ~1e9 element copies on a cold fold.
// Copies are counted here, not timed: every element read through an array's or a Set's
// iterator (spread, Array.from, new Set(…), for…of) or an OpLog's (store/op-log.ts), and every
// element slice(), concat() or OpLog.map() copies, while the fold runs. Linear work is ~4 per op.

type Counted = { visits: number };

/** Runs `f` (synchronous) with array and Set iteration, slice and concat counted. */
function counting(f: () => void): number {
  const c: Counted = { visits: 0 };
  const arrayIter = Array.prototype[Symbol.iterator];
  const setIter = Set.prototype[Symbol.iterator];
  const setValues = Set.prototype.values;
  const slice = Array.prototype.slice;
  const concat = Array.prototype.concat;
  const logIter = OpLog.prototype[Symbol.iterator];
  const logMap = OpLog.prototype.map;
  // A Map's and a CowMap's iterators too (new Map(map) copies through them; spreading a
  // CowMap's values() walks the whole map).
  const mapMethods = ['entries', 'keys', 'values'] as const;
  const mapSaved = mapMethods.map((m) => Map.prototype[m]);
  const mapIter = Map.prototype[Symbol.iterator];
  const cowMethods = ['entries', 'keys', 'values', 'valuesArray'] as const;
  const cowSaved = cowMethods.map((m) => CowMap.prototype[m]);
  const wrap = <T>(it: Iterator<T>): IterableIterator<T> => ({
    next() {
      c.visits++;
      return it.next();
    },
    [Symbol.iterator]() {
      return this;
    },
  });
  try {
    Array.prototype[Symbol.iterator] = function (this: unknown[]) {
      return wrap(arrayIter.call(this));
    } as typeof arrayIter;
    Set.prototype[Symbol.iterator] = function (this: Set<unknown>) {
      return wrap(setIter.call(this));
    } as typeof setIter;
    Set.prototype.values = Set.prototype[Symbol.iterator] as typeof setValues;
    Array.prototype.slice = function (this: unknown[], ...a: [number?, number?]) {
      const out = slice.apply(this, a);
      c.visits += out.length;
      return out;
    };
    Array.prototype.concat = function (this: unknown[], ...a: unknown[]) {
      const out = concat.apply(this, a) as unknown[];
      c.visits += out.length;
      return out;
    } as typeof concat;
    OpLog.prototype[Symbol.iterator] = function (this: OpLog<unknown>) {
      return wrap(logIter.call(this));
    } as typeof logIter;
    OpLog.prototype.map = function <U>(this: OpLog<unknown>, g: (x: unknown, i: number) => U) {
      c.visits += this.length;
      return logMap.call(this, g) as U[];
    } as typeof logMap;
    for (const [i, m] of mapMethods.entries()) {
      const orig = mapSaved[i]!;
      (Map.prototype as unknown as Record<string, unknown>)[m] = function (
        this: Map<unknown, unknown>,
      ) {
        return wrap(orig.call(this) as Iterator<unknown>);
      };
    }
    Map.prototype[Symbol.iterator] = Map.prototype.entries;
    for (const [i, m] of cowMethods.entries()) {
      const orig = cowSaved[i]! as (this: unknown) => Iterable<unknown>;
      (CowMap.prototype as unknown as Record<string, unknown>)[m] =
        m === 'valuesArray'
          ? function (this: CowMap<unknown, unknown>) {
              c.visits += this.size;
              return orig.call(this);
            }
          : function (this: CowMap<unknown, unknown>) {
              return wrap(orig.call(this)[Symbol.iterator]());
            };
    }
    f();
  } finally {
    for (const [i, m] of mapMethods.entries()) {
      (Map.prototype as unknown as Record<string, unknown>)[m] = mapSaved[i];
    }
    Map.prototype[Symbol.iterator] = mapIter;
    for (const [i, m] of cowMethods.entries()) {
      (CowMap.prototype as unknown as Record<string, unknown>)[m] = cowSaved[i];
    }
    OpLog.prototype[Symbol.iterator] = logIter;
    OpLog.prototype.map = logMap;
    Array.prototype[Symbol.iterator] = arrayIter;
    Set.prototype[Symbol.iterator] = setIter;
    Set.prototype.values = setValues;
    Array.prototype.slice = slice;
    Array.prototype.concat = concat;
  }
  return c.visits;
}

/** The element copies and visits of a cold fold of `raw` (parsed first, outside the count). */
function foldCost<S extends { rejected: { length: number } }>(
  codec: EntityCodec<S, never>,
  empty: () => S,
  raw: readonly OpRecord[],
): { visits: number; refused: number } {
  const ops = raw.map((o) => {
    const p = codec.parse(o);
    if (!p.ok) throw new Error(p.error);
    return p.op;
  });
  const s = empty();
  const visits = counting(() => {
    for (const op of ops) codec.apply(s, op);
  });
  return { visits, refused: s.rejected.length };
}

const cases: Array<[string, (n: number) => { visits: number; refused: number }]> = [
  [
    'a Lane (claims lost, answers refused with their follow-ups suppressed)',
    (n) => foldCost(laneCodec as EntityCodec<LaneState, never>, laneCodec.empty, laneRefusalLog(n)),
  ],
  [
    'the config (role_grants by a non-owner)',
    (n) =>
      foldCost(
        configCodec as EntityCodec<ConfigState, never>,
        configCodec.empty,
        configRefusalLog(n),
      ),
  ],
  [
    'the Ladder (rung writes by a non-coordinator)',
    (n) =>
      foldCost(
        ladderCodec as EntityCodec<LadderState, never>,
        () => new LadderState(NO_LADDER_ROLES),
        ladderRefusalLog(n),
      ),
  ],
];

describe('a cold fold of refused ops costs linear work', () => {
  // 4,000 refusals: a copy per refusal is 8 million element copies; linear work is a few
  // dozen per op. Doubling the log must not much more than double the work.
  const N = 4_000;
  for (const [what, cost] of cases) {
    it(`${what}: at most 40 element visits per op, and twice the ops cost about twice as much`, () => {
      const small = cost(N / 2);
      const big = cost(N);
      expect(big.refused).toBe(N);
      expect(big.visits).toBeLessThanOrEqual(40 * N);
      expect(big.visits).toBeLessThanOrEqual(2.5 * small.visits + 1000);
    });
  }
});

describe('a cold fold of Asks that all depend on one costs linear work', () => {
  // The Lane's list of an Ask's dependents was copied on each post that named it, as the
  // refusal lists were: 100,000 posts depending on one Ask were ~5e9 element copies.
  const dependentsLog = (n: number): OpRecord[] => {
    const op = factory('deps');
    const ops = [
      op('o@x', { op: 'lane_propose', args: { lane_id: 'l', title: 'L' } }),
      op('o@x', {
        op: 'ask_post',
        args: { lane_id: 'l', kind: 'work', title: 'root' },
        out: { ask_id: askId(0) },
      }),
    ];
    for (let i = 1; i <= n; i++) {
      ops.push(
        op('o@x', {
          op: 'ask_post',
          args: { lane_id: 'l', kind: 'work', title: `w${i}`, depends_on: [askId(0)] },
          out: { ask_id: askId(i) },
        }),
      );
    }
    return ops;
  };
  it('at most 40 element visits per post, and twice the posts cost about twice as much', () => {
    const N = 4_000;
    const cost = (n: number) =>
      foldCost(laneCodec as EntityCodec<LaneState, never>, laneCodec.empty, dependentsLog(n));
    const small = cost(N / 2);
    const big = cost(N);
    expect(big.refused).toBe(0);
    expect(big.visits).toBeLessThanOrEqual(40 * N);
    expect(big.visits).toBeLessThanOrEqual(2.5 * small.visits + 1000);
  });
});

describe('cold folds of logs that grow a map cost linear work', () => {
  // Each key_add once copied the config's whole map of keys (new Map(keys)): the owner
  // registering one key for each of n actors was n²/2 entry copies. Each stray follow-up
  // record (a server ask_post no honoured answer derived) scanned every derived follow-up.
  const keysLog = (n: number): OpRecord[] => {
    const op = factory('keys');
    const ops = [op('o@x', { op: 'repo_init', args: { owners: ['o@x'], default_branch: 'main' } })];
    for (let i = 0; i < n; i++) {
      ops.push(
        op('o@x', { op: 'key_add', args: { actor: `a${i}@x`, key: `ssh-ed25519 AAAA${i}` } }),
      );
    }
    return ops;
  };
  const strayLog = (n: number): OpRecord[] => {
    const op = factory('stray');
    const ops = [
      op('o@x', { op: 'lane_propose', args: { lane_id: 'l', title: 'L' } }),
      op('o@x', { op: 'lane_grant', args: { lane_id: 'l', grantee: 'o@x', role: 'maintainer' } }),
    ];
    // n reviews denied by the maintainer who holds them: n honoured follow-ups, derived by
    // the fold.
    for (let i = 0; i < n; i++) {
      const review = askId(3 * i + 1);
      ops.push(
        op('o@x', {
          op: 'ask_post',
          args: { lane_id: 'l', kind: 'changeset_review', title: `r${i}` },
          out: { ask_id: review },
        }),
        op('o@x', {
          op: 'ask_claim',
          args: { lane_id: 'l', ask_id: review },
          out: { lease_expires_at: '2026-12-06T00:00:00.000Z' },
        }),
        op('o@x', {
          op: 'ask_answer',
          args: { lane_id: 'l', ask_id: review, outcome: 'deny', result: 'no' },
          out: { follow_ups: [askId(3 * i + 2)] },
        }),
      );
    }
    // Then n stray records of a second follow-up for each: refused (follow_up_not_derived).
    for (let i = 0; i < n; i++) {
      ops.push(
        op('zz@localhost', {
          op: 'ask_post',
          args: {
            lane_id: 'l',
            kind: 'work',
            title: `stray ${i}`,
            posted_by: 'zz@localhost',
            origin: { ask_id: askId(3 * i + 1), reason: 'review denied' },
          },
          out: { ask_id: askId(3 * i + 3) },
        }),
      );
    }
    return ops;
  };
  const growing: Array<[string, (n: number) => { visits: number; refused: number }, number]> = [
    [
      'the config (the owner adds a key for each of n actors)',
      (n) =>
        foldCost(configCodec as EntityCodec<ConfigState, never>, configCodec.empty, keysLog(n)),
      0,
    ],
    [
      'a Lane (n derived follow-ups, then n stray follow-up records)',
      (n) => foldCost(laneCodec as EntityCodec<LaneState, never>, laneCodec.empty, strayLog(n)),
      1,
    ],
  ];
  for (const [what, cost, refusedPerN] of growing) {
    it(`${what}: at most 40 element visits per op, and twice the ops cost about twice as much`, () => {
      const N = 4_000;
      const small = cost(N / 2);
      const big = cost(N);
      expect(big.refused).toBe(refusedPerN * N);
      expect(big.visits).toBeLessThanOrEqual(40 * 4 * N);
      expect(big.visits).toBeLessThanOrEqual(2.5 * small.visits + 1000);
    });
  }
});

describe('snapshots keep their refusal lists while the folds after them append', () => {
  it('two drafts forked from one snapshot each append their own refusal; the snapshot keeps its list', () => {
    const raw = laneRefusalLog(4);
    const ops = raw.map((o) => {
      const p = laneCodec.parse(o);
      if (!p.ok) throw new Error(p.error);
      return p.op;
    });
    const snap = laneCodec.empty();
    for (const op of ops.slice(0, 5)) laneCodec.apply(snap, op); // two refusals
    const before = [...snap.rejected].map((r) => r.op_id);
    const suppressedBefore = [...snap.suppressed.keys()];
    expect(before).toHaveLength(2);
    // A draft that appends, then a second draft of the same snapshot (a draft thrown away
    // and decided again; a merge beside a commit) that appends other ops behind it.
    const a = laneCodec.clone(snap);
    laneCodec.apply(a, ops[5]!);
    const b = laneCodec.clone(snap);
    laneCodec.apply(b, ops[6]!);
    laneCodec.apply(b, ops[5]!);
    expect([...snap.rejected].map((r) => r.op_id)).toEqual(before);
    expect([...snap.suppressed.keys()]).toEqual(suppressedBefore);
    expect([...a.rejected].map((r) => r.op_id)).toEqual([...before, ops[5]!.id]);
    expect([...b.rejected].map((r) => r.op_id)).toEqual([...before, ops[6]!.id, ops[5]!.id]);
    // ops[6] is an answer refused with its follow-up: suppressed in b alone.
    const followUp = (ops[6]!.out as { follow_ups: string[] }).follow_ups[0]!;
    expect(b.suppressed.has(followUp)).toBe(true);
    expect(a.suppressed.has(followUp)).toBe(false);
    expect(snap.suppressed.has(followUp)).toBe(false);
  });

  it('a refusal shows in the history view after a cached read of the same log', () => {
    const raw = laneRefusalLog(1);
    const logged: LoggedOp[] = raw.map((o, i) => ({ ...o, revision: `${i}`.padStart(40, '0') }));
    const log = new OpLog(logged);
    const ops = raw.map((o) => {
      const p = laneCodec.parse(o);
      if (!p.ok) throw new Error(p.error);
      return p.op;
    });
    // The state before the last op (a claim that loses) was folded, and after it.
    const before = laneCodec.empty();
    for (const op of ops.slice(0, -1)) laneCodec.apply(before, op);
    const after = laneCodec.clone(before);
    laneCodec.apply(after, ops[ops.length - 1]!);
    expect(after.rejected.length).toBe(1);
    const now = new Date('2026-12-01T00:00:01Z');
    const marked = (rejected: LaneState['rejected']) => {
      const v = historyView(log, now, rejected);
      return Array.from({ length: v.length }, (_, i) => v.at(i)!.rejected?.reason ?? null);
    };
    // Read (and cached) with the list from before the refusal; the same list reads the same.
    expect(marked(before.rejected)).toEqual([null, null, null, null]);
    expect(historyView(log, now, before.rejected)).toBe(historyView(log, now, before.rejected));
    // The longer list is another list: the view is derived again and marks the refused claim.
    expect(marked(after.rejected)).toEqual([null, null, null, 'claim_lost']);
  });
});
