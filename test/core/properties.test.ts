import { execFileSync } from 'node:child_process';
import { inspect, isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { registry, runTool, type ToolName } from '../../src/tools/index.js';
import {
  laneCodec,
  laneRef,
  laneStateFromFiles,
  type LaneState,
  type ZzRepo,
} from '../../src/core/index.js';
import {
  AGENT,
  ALICE,
  BOB,
  call,
  FakeClock,
  gitRepo,
  memoryRepo,
  OWNER,
  parsedLaneOp,
} from '../helpers/core-fixture.js';

// Random sequences of tool calls by random actors, run through runTool exactly as the
// transports call it, against a small model of the rules (DESIGN §1, §3) kept here. After every
// step the repository must agree with the model: who holds what, what is claimable, which calls
// were allowed, what history records, and that the stored tree is the fold of the op log.

const CAROL = { actor: 'carol@example.com' };
const ACTORS = [OWNER.actor, ALICE.actor, BOB.actor, CAROL.actor, AGENT.actor] as const;
const BOGUS_ASK = 'ask-0000000000';
const MEMORY_BASE = 'b'.repeat(40);

type Scope = 'member' | 'maintainer' | 'coordinator';
type Outcome = 'complete' | 'deny' | 'grant';

// An independent statement of the kind table (DESIGN §1), not an import of the code under test.
const BUILTIN: Record<string, { scope: Scope; outcomes: Outcome[] }> = {
  work: { scope: 'member', outcomes: ['complete', 'deny'] },
  changeset_review: { scope: 'maintainer', outcomes: ['grant', 'deny'] },
  submit_changeset: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
  resolve_conflict: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
  ladder_update: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
};
const SERVER_POSTED = new Set(['changeset_review', 'submit_changeset', 'resolve_conflict']);
const KINDS = [
  'work',
  'work',
  'work',
  'changeset_review',
  'submit_changeset',
  'resolve_conflict',
  'ladder_update',
  'triage', // coordinator in lanes that define it
  'peer', // maintainer in lanes that define it
  'chore', // never defined: member
];
const CUSTOM_KINDS: Record<string, Scope> = { triage: 'coordinator', peer: 'maintainer' };

// ---------------------------------------------------------------------------------------------
// The model

interface MAsk {
  id: string;
  lane: string;
  kind: string;
  priority: number;
  /** The model clock when it was posted: Asks of one millisecond sort by id. */
  posted: number;
  deps: string[];
  state: 'open' | 'claimed' | 'answered';
  holder: string | null;
  until: number | null;
  outcome: Outcome | null;
  /** The lease an `ask_lease_expired` history entry may be derived from. */
  openLease: number | null;
}

interface MLane {
  id: string;
  coordinators: string[];
  maintainers: string[];
  kinds: Record<string, Scope>;
  asks: string[];
  ops: Record<string, number>;
  expired: number;
  revisions: string[];
}

class Model {
  owners: string[] = [OWNER.actor];
  lanes = new Map<string, MLane>();
  asks = new Map<string, MAsk>();
  /** Successful calls that carried an idempotency key, for replays. */
  keyed: Array<{
    actor: string;
    tool: string;
    args: Record<string, unknown>;
    lane: string | null;
  }> = [];
  private keys = 0;

  constructor(readonly clock: FakeClock) {}

  now(): number {
    return this.clock.t;
  }

  newKey(): string {
    return `k-${++this.keys}`;
  }

  addLane(
    id: string,
    coordinators: string[],
    maintainers: string[],
    kinds: Record<string, Scope>,
    revision: string,
  ): void {
    this.lanes.set(id, {
      id,
      coordinators: [...coordinators],
      maintainers: [...maintainers],
      kinds,
      asks: [],
      ops: { lane_propose: 1 },
      expired: 0,
      revisions: [revision],
    });
  }

  isOwner(a: string): boolean {
    return this.owners.includes(a);
  }

  isCoordinator(l: MLane, a: string): boolean {
    return l.coordinators.includes(a) || (l.id === '_repo' && this.isOwner(a));
  }

  rule(l: MLane, kind: string): { scope: Scope; outcomes: Outcome[] } {
    return BUILTIN[kind] ?? { scope: l.kinds[kind] ?? 'member', outcomes: ['complete', 'deny'] };
  }

  inScope(l: MLane, kind: string, a: string): boolean {
    const s = this.rule(l, kind).scope;
    if (s === 'member') return true;
    if (s === 'maintainer') return l.maintainers.includes(a);
    return this.isCoordinator(l, a);
  }

  expired(k: MAsk): boolean {
    return k.state === 'claimed' && k.until !== null && k.until <= this.now();
  }

  blocked(k: MAsk): boolean {
    return k.deps.some((d) => {
      const dep = this.asks.get(d);
      return !(
        dep?.state === 'answered' &&
        (dep.outcome === 'complete' || dep.outcome === 'grant')
      );
    });
  }

  /** Every op on an Ask first closes a lease that ran out (historyView derives an entry). */
  touch(l: MLane, k: MAsk): void {
    if (k.openLease !== null && k.openLease <= this.now()) l.expired++;
    k.openLease = null;
  }

  count(l: MLane, op: string, n = 1): void {
    l.ops[op] = (l.ops[op] ?? 0) + n;
  }

  claimable(l: MLane, a: string): string[] {
    return (
      l.asks
        .map((id) => this.asks.get(id)!)
        .filter(
          (k) =>
            k.state !== 'answered' &&
            !(k.state === 'claimed' && !this.expired(k)) &&
            this.inScope(l, k.kind, a) &&
            !this.blocked(k),
        )
        // By priority, then age, then id (Asks posted in one millisecond have no other order).
        .sort(
          (x, y) =>
            x.priority - y.priority ||
            x.posted - y.posted ||
            (x.id < y.id ? -1 : x.id > y.id ? 1 : 0),
        )
        .map((k) => k.id)
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Actions

const LANE_POOL = ['l1', 'l1', 'l1', 'l1', 'l1', '_repo', '_repo', 'l2', 'l2', 'nope'];
const actorIx = fc.integer({ min: 0, max: ACTORS.length - 1 });
const laneIx = fc.integer({ min: 0, max: LANE_POOL.length - 1 });
const askIx = fc.nat({ max: 10_000 });
const flag = (pTrue: number) => fc.integer({ min: 0, max: 99 }).map((n) => n < pTrue * 100);
const revMode = fc.constantFrom('none', 'none', 'none', 'none', 'none', 'current', 'stale');

const actionArb = fc.oneof(
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
type Action = typeof actionArb extends fc.Arbitrary<infer A> ? A : never;
/** An action, or one step of a composite one aimed at a given Ask. */
type Step = Action & { target?: string };

// Templates for the steps of composite actions and the setup.
const POST = {
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
const CLAIM = {
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
const ANSWER = {
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

// ---------------------------------------------------------------------------------------------
// Running one action against the repo and the model

/** A call's result or its ZzError code; anything else thrown is a bug and fails the run. */
type CallOutcome = { code: string; value: Record<string, unknown>; error: ZzError | null };

async function attempt(p: Promise<Record<string, unknown>>): Promise<CallOutcome> {
  try {
    return { code: 'ok', value: await p, error: null };
  } catch (e) {
    if (!(e instanceof ZzError)) throw e;
    return { code: e.code, value: {}, error: e };
  }
}

function expectCode(got: CallOutcome, want: string, what: string): void {
  if (got.code !== want) {
    const msg = got.error ? got.error.message : JSON.stringify(got.value).slice(0, 300);
    expect.fail(`${what}: expected ${want}, got ${got.code} (${msg})`);
  }
}

class Runner {
  readonly model: Model;
  private readonly base: string;

  constructor(
    readonly repo: ZzRepo,
    readonly clock: FakeClock,
    base: string,
  ) {
    this.model = new Model(clock);
    this.base = base;
  }

  private lane(ix: number): string {
    return LANE_POOL[ix]!;
  }

  /**
   * An Ask and the Lane named with it: mostly an Ask in the wanted state (claimable ones for
   * claims, held ones for answers and releases) in its own Lane; sometimes an unknown Ask, an
   * unknown Lane, or another Lane than the Ask's.
   */
  private pick(
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
  private inScopeActor(ix: number, askId: string): string {
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
  private actorFor(ix: number, byHolder: boolean, askId: string): string {
    const holder = this.model.asks.get(askId)?.holder;
    return byHolder && holder ? holder : ACTORS[ix]!;
  }

  private revArg(laneId: string, mode: string): { expected_revision?: string; stale: boolean } {
    const l = this.model.lanes.get(laneId);
    if (!l || mode === 'none') return { stale: false };
    if (mode === 'current') return { expected_revision: l.revisions.at(-1)!, stale: false };
    if (l.revisions.length < 2) return { stale: false };
    return { expected_revision: l.revisions.at(-2)!, stale: true };
  }

  private spoofed(actor: string): string {
    return ACTORS[(ACTORS.indexOf(actor as (typeof ACTORS)[number]) + 1) % ACTORS.length]!;
  }

  private commitRevision(l: MLane, out: CallOutcome): void {
    if (out.code !== 'ok') return;
    const rev = out.value.revision as string;
    expect(rev).toMatch(/^[0-9a-f]{40}$/);
    expect(rev).not.toBe(l.revisions.at(-1));
    l.revisions.push(rev);
  }

  private remember(
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

  async run(a: Step): Promise<void> {
    const m = this.model;
    switch (a.t) {
      case 'propose': {
        const actor = ACTORS[a.actor]!;
        const args: Record<string, unknown> = { lane_id: a.lane, title: `Lane ${a.lane}` };
        if (a.maintainers) args.maintainers = a.maintainers.map((i) => ACTORS[i]!);
        if (a.kinds) args.ask_kinds = CUSTOM_KINDS;
        if (a.related) args.related_lanes = [a.related === 1 ? 'l1' : 'nope'];
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.from = this.spoofed(actor);
        const want =
          a.lane === '_repo'
            ? 'invalid_argument'
            : a.spoof
              ? 'forbidden'
              : a.related === 2
                ? 'not_found'
                : m.lanes.has(a.lane)
                  ? 'conflict'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'lane_propose', args));
        expectCode(out, want, `lane_propose ${a.lane} by ${actor}`);
        if (out.code === 'ok') {
          const lane = (out.value as { lane: Record<string, unknown> }).lane;
          expect(lane.coordinators).toEqual([actor]);
          m.addLane(
            a.lane,
            [actor],
            (args.maintainers as string[] | undefined) ?? [actor],
            a.kinds ? CUSTOM_KINDS : {},
            out.value.revision as string,
          );
        }
        this.remember(actor, 'lane_propose', args, out, a.lane);
        return;
      }
      case 'post': {
        const laneId = this.lane(a.lane);
        const l = m.lanes.get(laneId);
        const coordinator = l?.coordinators[a.actor % l.coordinators.length];
        const actor = a.asCoordinator && coordinator ? coordinator : ACTORS[a.actor]!;
        const kind = KINDS[a.kind]!;
        const deps = [
          ...(l && l.asks.length > 0 ? a.deps.map((i) => l.asks[i % l.asks.length]!) : []),
          ...(a.bogusDep ? [BOGUS_ASK] : []),
        ];
        const args: Record<string, unknown> = { lane_id: laneId, kind, title: `${kind} task` };
        if (deps.length) args.depends_on = deps;
        if (a.priority !== null) args.priority = a.priority;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args[a.kind % 2 ? 'from' : 'actor'] = this.spoofed(actor);
        const want = a.spoof
          ? 'forbidden'
          : !l
            ? 'not_found'
            : !(kind in BUILTIN) && !(kind in l.kinds)
              ? 'invalid_argument' // a kind neither built in nor defined by the Lane
              : SERVER_POSTED.has(kind) && !m.isCoordinator(l, actor)
                ? 'forbidden'
                : a.bogusDep
                  ? 'not_found'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'ask_post', args));
        expectCode(out, want, `ask_post ${kind} in ${laneId} by ${actor}`);
        if (out.code === 'ok' && l) {
          const ask = (out.value as { ask: { ask_id: string; blocked: boolean } }).ask;
          const k: MAsk = {
            id: ask.ask_id,
            lane: laneId,
            kind,
            priority: a.priority ?? 2,
            posted: m.now(),
            deps: [...new Set(deps)],
            state: 'open',
            holder: null,
            until: null,
            outcome: null,
            openLease: null,
          };
          expect(m.asks.has(k.id)).toBe(false);
          m.asks.set(k.id, k);
          l.asks.push(k.id);
          expect(ask.blocked).toBe(m.blocked(k));
          m.count(l, 'ask_post');
          this.commitRevision(l, out);
        }
        this.remember(actor, 'ask_post', args, out, laneId);
        return;
      }
      case 'claim': {
        const [laneId, askId] = this.pick(a.ask, 'open', a.focus, a.target);
        const actor = a.byScope ? this.inScopeActor(a.actor, askId) : ACTORS[a.actor]!;
        const args: Record<string, unknown> = { lane_id: laneId, ask_id: askId };
        if (a.lease !== null) args.lease_seconds = a.lease;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rev = this.revArg(laneId, a.rev);
        if (rev.expected_revision) args.expected_revision = rev.expected_revision;
        const want = a.spoof
          ? 'forbidden'
          : rev.stale
            ? 'revision_mismatch'
            : this.claimWant(laneId, askId, actor);
        const out = await attempt(call(this.repo, { actor }, 'ask_claim', args));
        expectCode(out, want, `ask_claim ${askId} in ${laneId} by ${actor}`);
        if (out.code === 'ok') this.applyClaim(laneId, askId, actor, a.lease, out);
        this.remember(actor, 'ask_claim', args, out, laneId);
        return;
      }
      case 'race': {
        // Distinct actors claim one Ask at once: at most one wins, and one does whenever any
        // of them may claim it.
        const [laneId, askId] = this.pick(a.ask, 'open');
        const actors = a.actors.map((i) => ACTORS[i]!);
        const wants = actors.map((x) => this.claimWant(laneId, askId, x));
        const outs = await Promise.all(
          actors.map((x) =>
            attempt(call(this.repo, { actor: x }, 'ask_claim', { lane_id: laneId, ask_id: askId })),
          ),
        );
        const winners = outs.flatMap((o, i) => (o.code === 'ok' ? [i] : []));
        const eligible = wants.flatMap((w, i) => (w === 'ok' ? [i] : []));
        expect(winners.length).toBe(eligible.length > 0 ? 1 : 0);
        outs.forEach((o, i) => {
          if (wants[i] !== 'ok') expectCode(o, wants[i]!, `racing ask_claim by ${actors[i]}`);
          else if (o.code !== 'ok')
            expectCode(o, 'already_claimed', `racing ask_claim by ${actors[i]}`);
        });
        if (winners.length === 1) {
          const w = winners[0]!;
          this.applyClaim(laneId, askId, actors[w]!, null, outs[w]!);
        }
        return;
      }
      case 'release': {
        const [laneId, askId] = this.pick(a.ask, 'claimed');
        const actor = this.actorFor(a.actor, a.byHolder, askId);
        const l = m.lanes.get(laneId);
        const k = m.asks.get(askId);
        const args: Record<string, unknown> = { lane_id: laneId, ask_id: askId };
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rev = this.revArg(laneId, a.rev);
        if (rev.expected_revision) args.expected_revision = rev.expected_revision;
        const want = a.spoof
          ? 'forbidden'
          : rev.stale
            ? 'revision_mismatch'
            : !l || !k || k.lane !== laneId
              ? 'not_found'
              : k.state !== 'claimed'
                ? 'conflict'
                : k.holder !== actor && !m.isCoordinator(l, actor)
                  ? 'forbidden'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'ask_release', args));
        expectCode(out, want, `ask_release ${askId} in ${laneId} by ${actor}`);
        if (out.code === 'ok' && l && k) {
          m.touch(l, k);
          k.state = 'open';
          k.holder = null;
          k.until = null;
          m.count(l, 'ask_release');
          this.commitRevision(l, out);
        }
        this.remember(actor, 'ask_release', args, out, laneId);
        return;
      }
      case 'answer': {
        const [laneId, askId] = this.pick(a.ask, 'claimed', a.focus, a.target);
        const actor = this.actorFor(a.actor, a.byHolder, askId);
        const l = m.lanes.get(laneId);
        const k = m.asks.get(askId);
        const k0 = this.model.asks.get(askId);
        // Mostly an outcome the kind accepts (so that reviews get granted), else any.
        const outcome =
          a.fitting && k0 && a.outcome !== 'approve'
            ? (BUILTIN[k0.kind]?.outcomes[a.ask % 2] ??
              (a.outcome === 'grant' ? 'deny' : a.outcome))
            : a.outcome;
        const args: Record<string, unknown> = { lane_id: laneId, ask_id: askId, outcome };
        if (a.result) args.result = `answer from ${actor}`;
        if (a.changeset)
          args.changeset = {
            base: this.base,
            message: 'Change',
            files: [{ path: `src/f${a.ask % 7}.txt`, content: `v${a.ask}\n` }],
          };
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rule = l && k ? m.rule(l, k.kind) : null;
        const want =
          outcome === 'approve'
            ? 'invalid_argument'
            : a.spoof
              ? 'forbidden'
              : !l || !k || !rule || k.lane !== laneId
                ? 'not_found'
                : k.state === 'answered'
                  ? 'conflict'
                  : !m.inScope(l, k.kind, actor)
                    ? 'forbidden'
                    : k.state !== 'claimed' || k.holder !== actor
                      ? 'forbidden'
                      : m.expired(k)
                        ? 'conflict'
                        : !rule.outcomes.includes(outcome as Outcome)
                          ? 'invalid_argument'
                          : a.changeset && !(k.kind === 'work' && outcome === 'complete')
                            ? 'invalid_argument'
                            : k.kind === 'work' &&
                                outcome === 'complete' &&
                                !a.changeset &&
                                !a.result
                              ? 'invalid_argument'
                              : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'ask_answer', args));
        expectCode(out, want, `ask_answer ${outcome} on ${k?.kind} ${askId} by ${actor}`);
        if (out.code === 'ok' && l && k) {
          m.touch(l, k);
          k.state = 'answered';
          k.until = null;
          k.outcome = outcome as Outcome;
          m.count(l, 'ask_answer');
          const v = out.value as {
            follow_ups: Array<{ ask_id: string; kind: string; posted_by: string }>;
            changeset_id: string | null;
          };
          expect(v.changeset_id === null).toBe(!a.changeset);
          const wantKinds =
            k.kind === 'work' && outcome === 'complete' && a.changeset
              ? ['changeset_review']
              : k.kind === 'changeset_review'
                ? [outcome === 'grant' ? 'submit_changeset' : 'work']
                : [];
          expect(v.follow_ups.map((f) => f.kind)).toEqual(wantKinds);
          for (const f of v.follow_ups) {
            const fk: MAsk = {
              id: f.ask_id,
              lane: laneId,
              kind: f.kind,
              priority: k.priority,
              posted: m.now(),
              deps: [],
              state: 'open',
              holder: null,
              until: null,
              outcome: null,
              openLease: null,
            };
            m.asks.set(fk.id, fk);
            l.asks.push(fk.id);
            m.count(l, 'ask_post');
          }
          this.commitRevision(l, out);
        }
        this.remember(actor, 'ask_answer', args, out, laneId);
        return;
      }
      case 'grant': {
        const actor = ACTORS[a.actor]!;
        const grantee = ACTORS[a.grantee]!;
        const laneId = this.lane(a.lane);
        const l = m.lanes.get(laneId);
        const args: Record<string, unknown> = { lane_id: laneId, grantee, role: a.role };
        if (a.revoke) args.revoke = true;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const rev = this.revArg(laneId, a.rev);
        if (rev.expected_revision) args.expected_revision = rev.expected_revision;
        const want = a.spoof
          ? 'forbidden'
          : rev.stale
            ? 'revision_mismatch'
            : !l
              ? 'not_found'
              : !m.isCoordinator(l, actor) && !m.isOwner(actor)
                ? 'forbidden'
                : a.revoke &&
                    a.role === 'coordinator' &&
                    laneId !== '_repo' &&
                    l.coordinators.every((c) => c === grantee)
                  ? 'conflict'
                  : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'lane_grant', args));
        expectCode(
          out,
          want,
          `lane_grant ${a.revoke ? 'revoke' : 'grant'} ${a.role} ${grantee} in ${laneId} by ${actor}`,
        );
        if (out.code === 'ok' && l) {
          const field = a.role === 'coordinator' ? 'coordinators' : 'maintainers';
          l[field] = l[field].filter((x) => x !== grantee);
          if (!a.revoke) l[field].push(grantee);
          m.count(l, 'lane_grant');
          this.commitRevision(l, out);
        }
        this.remember(actor, 'lane_grant', args, out, laneId);
        return;
      }
      case 'role': {
        const actor = ACTORS[a.actor]!;
        const grantee = ACTORS[a.grantee]!;
        const args: Record<string, unknown> = { grantee, role: 'owner' };
        if (a.revoke) args.revoke = true;
        if (a.key) args.idempotency_key = m.newKey();
        if (a.spoof) args.actor = this.spoofed(actor);
        const want = a.spoof
          ? 'forbidden'
          : !m.isOwner(actor)
            ? 'forbidden'
            : a.revoke && m.owners.every((o) => o === grantee)
              ? 'conflict'
              : 'ok';
        const out = await attempt(call(this.repo, { actor }, 'role_grant', args));
        expectCode(out, want, `role_grant ${a.revoke ? 'revoke' : 'grant'} ${grantee} by ${actor}`);
        if (out.code === 'ok') {
          m.owners = m.owners.filter((o) => o !== grantee);
          if (!a.revoke) m.owners.push(grantee);
          expect((out.value as { owners: string[] }).owners).toEqual(m.owners);
        }
        this.remember(actor, 'role_grant', args, out, null);
        return;
      }
      case 'advance':
        this.clock.advance(a.seconds);
        return;
      case 'flow': {
        const newest = (kind: string) => {
          const ks = [...m.asks.values()].filter((k) => k.kind === kind && k.state === 'open');
          return ks.at(-1)?.id;
        };
        const before = m.asks.size;
        await this.run({ ...POST, actor: a.actor, asCoordinator: true, lane: a.lane });
        if (m.asks.size === before) return;
        const work = [...m.asks.keys()].at(-1)!;
        await this.run({ ...CLAIM, actor: a.actor, target: work });
        await this.run({ ...ANSWER, actor: a.actor, key: a.key, target: work });
        const review = newest('changeset_review');
        if (!review) return;
        await this.run({ ...CLAIM, actor: a.actor, target: review });
        const outcome = a.grant ? 'grant' : 'deny';
        await this.run({ ...ANSWER, actor: a.actor, outcome, changeset: false, target: review });
        return;
      }
      case 'replay': {
        if (m.keyed.length === 0) return;
        const prior = m.keyed[a.pick % m.keyed.length]!;
        const args = a.alter ? alter(prior.tool, prior.args) : prior.args;
        const out = await attempt(
          call(this.repo, { actor: prior.actor }, prior.tool as ToolName, args),
        );
        const what = `${a.alter ? 'altered ' : ''}replay of ${prior.tool} ${JSON.stringify(prior.args)} by ${prior.actor}`;
        if (a.alter) {
          expectCode(out, 'idempotency_conflict', what);
          return;
        }
        expectCode(out, 'ok', what);
        expect(out.code === 'ok' && out.value.replayed, what).toBe(true);
        if (out.code === 'ok' && prior.lane) {
          // Nothing new was written: the revision is still the latest one.
          expect(out.value.revision).toBe(m.lanes.get(prior.lane)!.revisions.at(-1));
        }
        return;
      }
    }
  }

  private claimWant(laneId: string, askId: string, actor: string): string {
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

  private applyClaim(
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

function alter(tool: string, args: Record<string, unknown>): Record<string, unknown> {
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
async function checkFold(
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

async function setup(repo: ZzRepo, clock: FakeClock, base: string): Promise<Runner> {
  const r = new Runner(repo, clock, base);
  const repoLane = await repo.lane('_repo').read();
  r.model.addLane('_repo', [OWNER.actor], [OWNER.actor], {}, repoLane.revision!);
  const l1 = await call(repo, ALICE, 'lane_propose', {
    lane_id: 'l1',
    title: 'Lane one',
    maintainers: [BOB.actor],
    ask_kinds: CUSTOM_KINDS,
  });
  r.model.addLane('l1', [ALICE.actor], [BOB.actor], CUSTOM_KINDS, l1.revision);
  // A few Asks to start from, so that short runs claim and answer something.
  await r.run({ ...POST, actor: 1 });
  await r.run({ ...POST, actor: 2, kind: 7, priority: 1 });
  await r.run({ ...POST, actor: 3, deps: [0], priority: 0 });
  return r;
}

export const TIMES = { run: 0, check: 0 };
async function runAll(r: Runner, actions: Action[], fold: (step: number) => boolean) {
  await r.check({ fold: true, validate: true });
  for (let i = 0; i < actions.length; i++) {
    await r.run(actions[i]!);
    const last = i === actions.length - 1;
    await r.check({ fold: fold(i) || last, validate: last });
  }
}

// One seed per run, printed so a failure can be replayed: ZZ_SEED=<seed> npx vitest run …
const SEED = process.env.ZZ_SEED ? Number(process.env.ZZ_SEED) : Date.now() % 2 ** 31;
console.log(`properties: seed ${SEED} (replay with ZZ_SEED=${SEED})`);

describe('properties of random tool-call sequences', () => {
  it('on a memory repo', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(actionArb, { minLength: 1, maxLength: 50, size: 'max' }),
        async (actions) => {
          const { repo, clock } = await memoryRepo();
          const r = await setup(repo, clock, MEMORY_BASE);
          await runAll(r, actions, () => true);
        },
      ),
      { numRuns: 80, seed: SEED },
    );
  });

  it('on a git repo', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(actionArb, { minLength: 1, maxLength: 30, size: 'max' }),
        async (actions) => {
          const clock = new FakeClock();
          const { repo, dir, cleanup } = await gitRepo(clock);
          try {
            const head = execFileSync('git', ['rev-parse', 'HEAD'], {
              cwd: dir,
              encoding: 'utf8',
            }).trim();
            const r = await setup(repo, clock, head);
            await runAll(r, actions, (i) => i % 5 === 4);
          } finally {
            cleanup();
          }
        },
      ),
      { numRuns: 5, seed: SEED },
    );
  });
});
