import { inspect, isDeepStrictEqual } from 'node:util';
import { expect } from 'vitest';
import { ZzError } from '../../../src/errors.js';
import { registry, runTool } from '../../../src/tools/index.js';
import {
  laneCodec,
  laneRef,
  laneStateFromFiles,
  type LaneState,
  type ZzRepo,
} from '../../../src/core/index.js';
import type { FakeClock } from '../../helpers/core-fixture.js';
import { call, OWNER, parsedLaneOp } from '../../helpers/core-fixture.js';
import { ACTORS, BOGUS_ASK, SERVER_POSTED, type MLane, Model } from './model.js';
import { LANE_POOL } from './actions.js';

// What properties.test.ts's Runner stands on: a call's outcome, the model it keeps, the choice
// of actors and Asks for a step, and the invariants checked after every step (check: the
// repository agrees with the model; checkFold: the stored tree is the fold of the op log).

// ---------------------------------------------------------------------------------------------
// Running one action against the repo and the model

/** A call's result or its ZzError code; anything else thrown is a bug and fails the run. */
export type CallOutcome = { code: string; value: Record<string, unknown>; error: ZzError | null };

export async function attempt(p: Promise<Record<string, unknown>>): Promise<CallOutcome> {
  try {
    return { code: 'ok', value: await p, error: null };
  } catch (e) {
    if (!(e instanceof ZzError)) throw e;
    return { code: e.code, value: {}, error: e };
  }
}

export function expectCode(got: CallOutcome, want: string, what: string): void {
  if (got.code !== want) {
    const msg = got.error ? got.error.message : JSON.stringify(got.value).slice(0, 300);
    expect.fail(`${what}: expected ${want}, got ${got.code} (${msg})`);
  }
}

export class RunnerBase {
  readonly model: Model;
  protected readonly base: string;

  constructor(
    readonly repo: ZzRepo,
    readonly clock: FakeClock,
    base: string,
  ) {
    this.model = new Model(clock);
    this.base = base;
  }

  protected lane(ix: number): string {
    return LANE_POOL[ix]!;
  }

  /**
   * An Ask and the Lane named with it: mostly an Ask in the wanted state (claimable ones for
   * claims, held ones for answers and releases) in its own Lane; sometimes an unknown Ask, an
   * unknown Lane, or another Lane than the Ask's.
   */
  protected pick(
    ix: number,
    prefer: 'open' | 'claimed',
    focus = false,
    target?: string,
  ): [string, string] {
    const m = this.model;
    const t = target === undefined ? undefined : m.asks.get(target);
    if (t) return [t.lane, t.id];
    const all = [...m.asks.values()];
    let preferred = all.filter((k) =>
      prefer === 'open'
        ? k.state !== 'answered' && !(k.state === 'claimed' && !m.expired(k)) && !m.blocked(k)
        : k.state === 'claimed',
    );
    // Focus on the workflow Asks the server posts, so that reviews get granted and denied.
    const workflow = preferred.filter((k) => SERVER_POSTED.has(k.kind));
    if (focus && workflow.length > 0) preferred = workflow;
    const pool = ix % 7 !== 6 && preferred.length > 0 ? preferred : all;
    if (pool.length === 0 || ix % 23 === 22) return ['l1', BOGUS_ASK];
    const k = pool[Math.floor(ix / 7) % pool.length]!;
    if (ix % 31 === 30) return ['nope', k.id];
    if (ix % 29 === 28) {
      const other = [...m.lanes.keys()].find((id) => id !== k.lane);
      if (other) return [other, k.id];
    }
    return [k.lane, k.id];
  }

  /** Often someone the Ask's kind lets claim it (so that reviews and coordinator kinds move). */
  protected inScopeActor(ix: number, askId: string): string {
    const m = this.model;
    const k = m.asks.get(askId);
    const l = k && m.lanes.get(k.lane);
    for (let i = 0; l && i < ACTORS.length; i++) {
      const a = ACTORS[(ix + i) % ACTORS.length]!;
      if (m.inScope(l, k.kind, a)) return a;
    }
    return ACTORS[ix]!;
  }

  /** Mostly the holder, so that answers and releases get past the holder check often. */
  protected actorFor(ix: number, byHolder: boolean, askId: string): string {
    const holder = this.model.asks.get(askId)?.holder;
    return byHolder && holder ? holder : ACTORS[ix]!;
  }

  protected revArg(laneId: string, mode: string): { expected_revision?: string; stale: boolean } {
    const l = this.model.lanes.get(laneId);
    if (!l || mode === 'none') return { stale: false };
    if (mode === 'current') return { expected_revision: l.revisions.at(-1)!, stale: false };
    if (l.revisions.length < 2) return { stale: false };
    return { expected_revision: l.revisions.at(-2)!, stale: true };
  }

  protected spoofed(actor: string): string {
    return ACTORS[(ACTORS.indexOf(actor as (typeof ACTORS)[number]) + 1) % ACTORS.length]!;
  }

  protected commitRevision(l: MLane, out: CallOutcome): void {
    if (out.code !== 'ok') return;
    const rev = out.value.revision as string;
    expect(rev).toMatch(/^[0-9a-f]{40}$/);
    expect(rev).not.toBe(l.revisions.at(-1));
    l.revisions.push(rev);
  }

  protected remember(
    actor: string,
    tool: string,
    args: Record<string, unknown>,
    out: CallOutcome,
    lane: string | null,
  ): void {
    if (out.code === 'ok' && args.idempotency_key !== undefined) {
      expect(out.value.replayed).toBe(false);
      this.model.keyed.push({ actor, tool, args, lane });
    }
  }

  protected claimWant(laneId: string, askId: string, actor: string): string {
    const m = this.model;
    const l = m.lanes.get(laneId);
    const k = m.asks.get(askId);
    if (!l || !k || !l.asks.includes(askId)) return 'not_found';
    if (k.state === 'answered') return 'conflict';
    if (!m.inScope(l, k.kind, actor)) return 'forbidden';
    if (m.blocked(k)) return 'dependency_unresolved';
    if (k.state === 'claimed' && k.holder !== actor && !m.expired(k)) return 'already_claimed';
    return 'ok';
  }

  protected applyClaim(
    laneId: string,
    askId: string,
    actor: string,
    lease: number | null,
    out: CallOutcome,
  ): void {
    const m = this.model;
    const l = m.lanes.get(laneId)!;
    const k = m.asks.get(askId)!;
    const v = out.value as { ask: Record<string, unknown>; renewed: boolean };
    const renewed = k.state === 'claimed' && k.holder === actor && !m.expired(k);
    expect(v.renewed).toBe(renewed);
    m.touch(l, k);
    k.state = 'claimed';
    k.holder = actor;
    k.until = m.now() + (lease ?? 1800) * 1000;
    k.openLease = k.until;
    expect(v.ask.holder).toBe(actor);
    expect(v.ask.lease_expires_at).toBe(new Date(k.until).toISOString());
    m.count(l, 'ask_claim');
    this.commitRevision(l, out);
  }

  // -------------------------------------------------------------------------------------------
  // Invariants, after every step

  async check(opts: { fold: boolean; validate: boolean }): Promise<void> {
    const m = this.model;
    // Reads through runTool like every call; their results are checked against the output
    // schemas at the end of a run (doing it every step would take most of the time).
    const read = (actor: string, tool: string, args: Record<string, unknown>) =>
      runTool(
        registry.require(tool),
        args,
        { repo: this.repo, caller: { actor }, local: true },
        { validateOutput: opts.validate },
      );
    const config = (await this.repo.config.read()).state.config!;
    expect(config.owners).toEqual(m.owners);
    for (const l of m.lanes.values()) {
      const got = (await read(OWNER.actor, 'lane_get', { lane_id: l.id })) as {
        lane: { coordinators: string[]; maintainers: string[]; revision: string };
        asks: Array<Record<string, unknown>>;
        history: Array<{ op: string }>;
      };
      expect(got.lane.coordinators).toEqual(l.coordinators);
      expect(got.lane.maintainers).toEqual(l.maintainers);
      expect(got.lane.revision).toBe(l.revisions.at(-1));
      expect(got.asks.map((x) => x.ask_id)).toEqual(l.asks);
      for (const v of got.asks) {
        const k = m.asks.get(v.ask_id as string)!;
        const expired = m.expired(k);
        expect(v.kind).toBe(k.kind);
        expect(v.priority).toBe(k.priority);
        expect(v.depends_on).toEqual(k.deps);
        expect(v.state).toBe(expired ? 'open' : k.state);
        // The holder callers see: the last successful claimer, unless released or run out.
        expect(v.holder).toBe(expired ? null : k.holder);
        expect(v.lease_expires_at).toBe(
          expired || k.until === null ? null : new Date(k.until).toISOString(),
        );
        expect(v.lease_expired).toBe(expired);
        expect(v.blocked).toBe(m.blocked(k));
        expect((v.answer as { outcome: string } | null)?.outcome ?? null).toBe(k.outcome);
      }
      // Every successful write is in the history, once.
      const counts: Record<string, number> = {};
      for (const h of got.history) counts[h.op] = (counts[h.op] ?? 0) + 1;
      const { ask_lease_expired: expiredEntries = 0, ...ops } = counts;
      expect(ops).toEqual(l.ops);
      const stillOpen = l.asks.filter((id) => {
        const lease = m.asks.get(id)!.openLease;
        return lease !== null && lease <= m.now();
      }).length;
      expect(expiredEntries).toBe(l.expired + stillOpen);

      // The stored document holds the last successful claimer, even once the lease ran out.
      const snap = await this.repo.lane(l.id).read();
      expect(snap.revision).toBe(l.revisions.at(-1));
      for (const id of l.asks) {
        const doc = snap.state.asks.get(id)!;
        const k = m.asks.get(id)!;
        expect(doc.state).toBe(k.state);
        expect(doc.holder).toBe(k.holder);
      }

      // Claimable = open (or lease run out), unblocked, in scope; by priority then age.
      for (const actor of ACTORS) {
        const q = (await read(actor, 'ask_query_claimable', { lane_id: l.id, limit: 500 })) as {
          asks: Array<{ ask_id: string; blocked: boolean }>;
        };
        expect(
          q.asks.map((x) => x.ask_id),
          `claimable for ${actor} in ${l.id}`,
        ).toEqual(m.claimable(l, actor));
      }
      // A blocked Ask is never claimable, even by someone in its scope.
      for (const id of l.asks) {
        const k = m.asks.get(id)!;
        if (k.state === 'answered' || !m.blocked(k)) continue;
        const actor = ACTORS.find((x) => m.inScope(l, k.kind, x));
        if (!actor) continue;
        const out = await attempt(
          call(this.repo, { actor }, 'ask_claim', { lane_id: l.id, ask_id: id }),
        );
        expectCode(out, 'dependency_unresolved', `claim of blocked ${id} by ${actor}`);
      }

      if (opts.fold) await checkFold(this.repo, l.id, snap.state, snap.revision!);
    }
  }
}

export function alter(tool: string, args: Record<string, unknown>): Record<string, unknown> {
  switch (tool) {
    case 'lane_propose':
    case 'ask_post':
      return { ...args, title: `${String(args.title)} (changed)` };
    case 'ask_claim':
      return { ...args, lease_seconds: args.lease_seconds === 7 ? 8 : 7 };
    case 'ask_release':
      return { ...args, ask_id: args.ask_id === BOGUS_ASK ? 'ask-1111111111' : BOGUS_ASK };
    case 'ask_answer':
      return { ...args, result: `${String(args.result ?? '')} (changed)` };
    default:
      return { ...args, revoke: !args.revoke };
  }
}

/** The fold invariant: op log from empty == Entity state == the stored tree read back. */
export async function checkFold(
  repo: ZzRepo,
  laneId: string,
  state: LaneState,
  revision: string,
): Promise<void> {
  const folded = laneCodec.empty();
  for (const c of await repo.store.history(laneRef(laneId)))
    for (const op of c.ops) laneCodec.apply(folded, parsedLaneOp(op));
  const stored = laneStateFromFiles(await repo.store.readAll(revision));
  // isDeepStrictEqual tells `{x: undefined}` from `{}` (a value JSON drops on the way to the
  // tree), which expect's equality does not do inside Maps; expect only prints a diff.
  const same = (x: unknown, y: unknown, what: string) => {
    if (isDeepStrictEqual(x, y)) return;
    let at = '';
    if (x instanceof Map && y instanceof Map) {
      const k = [...new Set([...x.keys(), ...y.keys()])].find(
        (key) => !isDeepStrictEqual(x.get(key), y.get(key)),
      );
      if (k !== undefined) {
        at = ` at ${String(k)}: ${inspect(x.get(k), { depth: 5 })} vs ${inspect(y.get(k), { depth: 5 })}`;
      }
    }
    expect(x, `${what} in lane ${laneId}`).toStrictEqual(y);
    expect.fail(`${what} in lane ${laneId} differ${at}`);
  };
  same(folded.lane, state.lane, 'folded op log vs entity state: lane');
  same(folded.asks, state.asks, 'folded op log vs entity state: asks');
  same(folded.dependents, state.dependents, 'folded op log vs entity state: dependents');
  same(stored.lane, state.lane, 'stored tree vs entity state: lane');
  same(stored.asks, state.asks, 'stored tree vs entity state: asks');
}
