import fc from 'fast-check';
import { ACTORS, KINDS } from './model.js';

// The actions properties.test.ts draws at random, and the templates of the set-up's steps.

// ---------------------------------------------------------------------------------------------
// Actions

export const LANE_POOL = ['l1', 'l1', 'l1', 'l1', 'l1', '_repo', '_repo', 'l2', 'l2', 'nope'];
export const actorIx = fc.integer({ min: 0, max: ACTORS.length - 1 });
export const laneIx = fc.integer({ min: 0, max: LANE_POOL.length - 1 });
export const askIx = fc.nat({ max: 10_000 });
export const flag = (pTrue: number) => fc.integer({ min: 0, max: 99 }).map((n) => n < pTrue * 100);
export const revMode = fc.constantFrom('none', 'none', 'none', 'none', 'none', 'current', 'stale');

export const actionArb = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('propose' as const),
      actor: actorIx,
      lane: fc.constantFrom('l2', 'l2', 'l1', '_repo'),
      maintainers: fc.option(fc.uniqueArray(actorIx, { maxLength: 3 }), { nil: null }),
      kinds: fc.boolean(),
      related: fc.constantFrom(0, 0, 1, 2),
      key: flag(0.3),
      spoof: flag(0.05),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('post' as const),
      actor: actorIx,
      asCoordinator: flag(0.3),
      lane: laneIx,
      kind: fc.integer({ min: 0, max: KINDS.length - 1 }),
      deps: fc.array(askIx, { maxLength: 3 }),
      bogusDep: flag(0.05),
      priority: fc.option(fc.integer({ min: 0, max: 4 }), { nil: null }),
      key: flag(0.3),
      spoof: flag(0.05),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('claim' as const),
      actor: actorIx,
      focus: flag(0.3),
      byScope: flag(0.5),
      ask: askIx,
      lease: fc.constantFrom(null, 1, 30, 600, 1800),
      key: flag(0.3),
      spoof: flag(0.05),
      rev: revMode,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('race' as const),
      actors: fc.uniqueArray(actorIx, { minLength: 2, maxLength: 4 }),
      ask: askIx,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('release' as const),
      actor: actorIx,
      byHolder: flag(0.6),
      ask: askIx,
      key: flag(0.3),
      spoof: flag(0.05),
      rev: revMode,
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('answer' as const),
      actor: actorIx,
      focus: flag(0.3),
      byHolder: flag(0.7),
      ask: askIx,
      // 'approve' is no outcome at all: refused by the schema.
      outcome: fc.constantFrom(...'complete deny grant '.repeat(3).trim().split(' '), 'approve'),
      fitting: flag(0.7),
      result: flag(0.8),
      changeset: flag(0.3),
      key: flag(0.3),
      spoof: flag(0.05),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('grant' as const),
      actor: actorIx,
      lane: laneIx,
      grantee: actorIx,
      role: fc.constantFrom('coordinator' as const, 'maintainer' as const),
      revoke: flag(0.4),
      key: flag(0.3),
      spoof: flag(0.05),
      rev: revMode,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('role' as const),
      actor: actorIx,
      grantee: actorIx,
      revoke: flag(0.4),
      key: flag(0.3),
      spoof: flag(0.05),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant('advance' as const),
      seconds: fc.constantFrom(1, 29, 31, 599, 601, 1801),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ t: fc.constant('replay' as const), pick: fc.nat(), alter: flag(0.3) }),
  },
  {
    // The review workflow end to end: work posted, claimed, completed with a changeset; the
    // review it raises claimed by someone allowed to and granted or denied.
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('flow' as const),
      actor: actorIx,
      lane: laneIx,
      grant: fc.boolean(),
      key: flag(0.3),
    }),
  },
);
export type Action = typeof actionArb extends fc.Arbitrary<infer A> ? A : never;
/** An action, or one step of a composite one aimed at a given Ask. */
export type Step = Action & { target?: string };

// Templates for the steps of composite actions and the setup.
export const POST = {
  t: 'post' as const,
  actor: 0,
  asCoordinator: false,
  lane: 0,
  kind: 0,
  deps: [] as number[],
  bogusDep: false,
  priority: null,
  key: false,
  spoof: false,
};
export const CLAIM = {
  t: 'claim' as const,
  actor: 0,
  focus: false,
  byScope: true,
  ask: 0,
  lease: null,
  key: false,
  spoof: false,
  rev: 'none' as const,
};
export const ANSWER = {
  t: 'answer' as const,
  actor: 0,
  focus: false,
  byHolder: true,
  ask: 0,
  outcome: 'complete',
  fitting: false,
  result: true,
  changeset: true,
  key: false,
  spoof: false,
};
