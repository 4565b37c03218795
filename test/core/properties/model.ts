import type { FakeClock } from '../../helpers/core-fixture.js';
import { AGENT, ALICE, BOB, OWNER } from '../../helpers/core-fixture.js';

// The model of properties.test.ts: the actors, the kind table stated independently of the code
// under test (DESIGN §1), and Model, which keeps the Lanes and Asks the rules say there are.

export const CAROL = { actor: 'carol@example.com' };
export const ACTORS = [OWNER.actor, ALICE.actor, BOB.actor, CAROL.actor, AGENT.actor] as const;
export const BOGUS_ASK = 'ask-0000000000';
export const MEMORY_BASE = 'b'.repeat(40);

export type Scope = 'member' | 'maintainer' | 'coordinator';
export type Outcome = 'complete' | 'deny' | 'grant';

// An independent statement of the kind table (DESIGN §1), not an import of the code under test.
export const BUILTIN: Record<string, { scope: Scope; outcomes: Outcome[] }> = {
  work: { scope: 'member', outcomes: ['complete', 'deny'] },
  changeset_review: { scope: 'maintainer', outcomes: ['grant', 'deny'] },
  submit_changeset: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
  resolve_conflict: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
  ladder_update: { scope: 'coordinator', outcomes: ['complete', 'deny'] },
};
export const SERVER_POSTED = new Set(['changeset_review', 'submit_changeset', 'resolve_conflict']);
export const KINDS = [
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
export const CUSTOM_KINDS: Record<string, Scope> = { triage: 'coordinator', peer: 'maintainer' };

// ---------------------------------------------------------------------------------------------
// The model

export interface MAsk {
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

export interface MLane {
  id: string;
  coordinators: string[];
  maintainers: string[];
  kinds: Record<string, Scope>;
  asks: string[];
  ops: Record<string, number>;
  expired: number;
  revisions: string[];
}

export class Model {
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
