import { publicationOrder, type CommitRecord } from '../../store/index.js';
import { CONFIG_REF } from './roles-at.js';
import type { Invalid, ParsedCommit } from './validate.js';

// Checks on what a remote holds that need this machine's memory of it (the value last confirmed
// there) or its clock, beside validate.ts's checks of the commits alone. Anyone who can push to
// the remote can write any commit: these are what keep a push from rewriting what was published
// or from dating an op into the future to win a guard judged by time (a lapsed lease).

/**
 * How far past this machine's clock an arriving op may be dated. Past it the ref is
 * quarantined: an op dated in 2099 would otherwise lapse every lease before it (lane-guards.ts
 * judges a claim at its recorded time). An honest peer's clock that runs this far ahead is
 * refused only until ours catches up: quarantine is judged again every round.
 */
export const MAX_CLOCK_SKEW_MS = 10 * 60 * 1000;

/**
 * Whether the remote's tip still descends from the value last confirmed there (`confirmed`, the
 * one this machine synced with). A push that replaced it (a rival history, a ref deleted and
 * made again from an older copy) would reorder ops every replica already folded in publication
 * order — a rival lane_propose would take the Lane, a rival claim a live lease — were ours
 * replayed after it. The engine merges such a tip with ours as the first parent when ours holds
 * `confirmed`, and refuses it with this reason when it does not. `fromTheirs` is every commit
 * the tip reaches. A tip our own ref reaches (a rewind) never comes here: ours is pushed back.
 */
export function rewrittenBehind(
  confirmed: string | null,
  theirs: string,
  fromTheirs: ReadonlySet<string>,
): Invalid | null {
  if (confirmed === null || fromTheirs.has(confirmed)) return null;
  return {
    commit: theirs,
    reason: `remote rewritten (not a descendant of what was synced at ${confirmed})`,
  };
}

/**
 * What wrapsRival found: `rival`, answered (merged with what was synced first, the rival's ops
 * after); `reorders`, refused (quarantined). `continued` (rival only) is the remote's own
 * continuation of what was synced, the value the wrap wrapped: the answer folds it first.
 */
export type Wrap = Invalid &
  ({ kind: 'rival'; continued: string } | { kind: 'reorders'; continued?: undefined });

/**
 * Whether the remote's tip `theirs`, which still reaches the value last confirmed there, folds
 * ops before what was synced there: a merge reaches `confirmed` through a parent other than its
 * first, and publication order (first parents first, DESIGN §7) folds that first parent's
 * history before everything published.
 *
 * Judged where `confirmed` leaves the tip's first-parent chain, by that merge's first parent:
 * - it holds none of the ops that were synced: a rival (a parentless lane_propose would take
 *   the Lane). Answered like a rewrite, ours first; `continued` is where the remote went on
 *   from what was synced (the wrapped value, its own wraps unwrapped), which the answer folds
 *   before our local ops and the rival's: an answer of ours first and then every remote op by
 *   Lamport folded the rival's op (Lamport 1) before a claim the remote had published on top of
 *   what this clone last synced, and that order, pushed and merged back after a deletion, was
 *   taken by the clone that had published the claim (the property test, seed 999792686).
 * - it is an older value on the first-parent chain of what was synced (published before it):
 *   the merge folds what was published after that value as a side, by Lamport, interleaved
 *   with whatever else the side brings (a forged claim dated to sort first). No merge zz makes
 *   has that shape (a sync's merge has the remote's value first, which a side holding what
 *   was synced reaches; an answer to a rewrite has the answerer's history first, with the
 *   remote's continuation of what it synced, above), so unless its order keeps what was synced
 *   as a prefix it is refused, not answered: answered ours first, a clone that took it as a
 *   fast-forward (one that synced only the older value) answers back the same way, for ever.
 * - it holds ops that were synced and others: taken as a restoration, accepted. After a remote
 *   ref was deleted or rewound, an honest replica's answer (ours first, the remote's after)
 *   reorders what the replica that recreated it had confirmed, and that one answering back the
 *   same way made the two ping-pong for ever (the property test found it in 4 runs). What this
 *   leaves open: a rival forked after a shared commit, whose later ops (a claim) fold before
 *   published ones — after a deletion only each clone's memory knows who published first, and
 *   a tie-break from the DAG alone can be forged by anyone who can push.
 * `history`: every commit `theirs` reaches.
 */
export function wrapsRival(
  history: readonly CommitRecord[],
  confirmed: string,
  theirs: string,
): Wrap | null {
  const byOid = new Map(history.map((c) => [c.revision, c]));
  const parentsOf = (o: string) => byOid.get(o)?.parents ?? [];
  const below = closure([confirmed], parentsOf);
  const synced = new Set([...below].filter((oid) => (byOid.get(oid)?.ops.length ?? 0) > 0));
  if (synced.size === 0) return null;
  // The commits that reach `confirmed`: its descendants, through the child links.
  const children = new Map<string, string[]>();
  for (const c of history) {
    for (const p of c.parents) children.set(p, [...(children.get(p) ?? []), c.revision]);
  }
  const reaches = closure([confirmed], (o) => children.get(o) ?? []);
  // What was published before `confirmed`, in its order: its first-parent chain.
  const published = new Set<string>();
  for (
    let o: string | undefined = confirmed;
    o !== undefined && byOid.has(o);
    o = parentsOf(o)[0]
  ) {
    published.add(o);
  }
  /** The first merge down `tip`'s first parents whose first parent leaves `confirmed`'s line. */
  const leaves = (tip: string): { merge: string; base: string; onward: string } | null => {
    for (let cur = tip; cur !== confirmed;) {
      const [first, ...rest] = parentsOf(cur);
      if (first === undefined) return null;
      if (reaches.has(first)) {
        cur = first;
        continue;
      }
      const onward = rest.find((p) => reaches.has(p));
      return onward === undefined ? null : { merge: cur, base: first, onward };
    }
    return null;
  };
  const rivalAt = (tip: string) => {
    const at = leaves(tip);
    if (at === null) return null;
    if (published.has(at.base)) return { ...at, rival: false };
    for (const oid of closure([at.base], parentsOf)) if (synced.has(oid)) return null;
    return { ...at, rival: true };
  };
  const top = rivalAt(theirs);
  if (top === null) return null;
  if (!top.rival) {
    const ids = (tip: string) => publicationOrder(history, tip).map((o) => o.op.id);
    const before = ids(confirmed);
    const after = ids(theirs);
    if (before.every((id, i) => after[i] === id)) return null;
    return {
      kind: 'reorders',
      commit: theirs,
      reason: `remote folds ops before what was synced at ${confirmed} (merge ${top.merge} takes it as a second parent over ${top.base}, older than it)`,
    };
  }
  // A wrap of a wrap: the rival's own merge may wrap another rival around what was synced.
  let continued = top.onward;
  for (let next = rivalAt(continued); next?.rival; next = rivalAt(continued)) {
    continued = next.onward;
  }
  return {
    kind: 'rival',
    continued,
    commit: theirs,
    reason: `remote folds a rival history before what was synced at ${confirmed} (merge ${top.merge} has it as a second parent, and a first that holds none of its ops)`,
  };
}

/** The commits (oid → parents, closed under parents) that `tip` reaches. */
export function reachable(
  parentsOf: ReadonlyMap<string, readonly string[]>,
  tip: string,
): Set<string> {
  return closure([tip], (o) => parentsOf.get(o) ?? []);
}

/** Every oid reachable from `start` through `next`, `start` included. */
function closure(start: readonly string[], next: (oid: string) => readonly string[]): Set<string> {
  const seen = new Set<string>();
  const stack = [...start];
  while (stack.length > 0) {
    const oid = stack.pop()!;
    if (seen.has(oid)) continue;
    seen.add(oid);
    for (const n of next(oid)) if (!seen.has(n)) stack.push(n);
  }
  return seen;
}

/**
 * Ops whose recorded time a guard reads to grant something: a claim is judged at its time (a
 * later one lapses every lease before it, and dates its own lease's end), and the roles and a
 * Lane's coordinators over time come from refs/zz/config's ops and lane_propose/lane_grant
 * (role-timeline.ts, ladder-roles.ts). Any other op's time is only shown (posted_at, the order
 * of an events page), and the roles at a future time are the newest ones, which grant nothing
 * more: judging those too froze a Lane for everyone while one machine's clock ran ahead (its
 * every op quarantined on import), though dating them ahead wins nothing.
 */
export function timeJudged(ref: string, op: string): boolean {
  return ref === CONFIG_REF || op === 'ask_claim' || op === 'lane_propose' || op === 'lane_grant';
}

/** A history refused for an op dated ahead: it passes by itself once the clock reaches `until`. */
export interface DatedAhead extends Invalid {
  /** When the last of its ops dated ahead comes within MAX_CLOCK_SKEW_MS of this clock. */
  until: string;
}

/**
 * The first op of `incoming` (a time-judged one, see timeJudged) dated past `nowMs` plus
 * MAX_CLOCK_SKEW_MS. Ops dated before their parents are let through: a commit's date is as
 * much the writer's word as an op's, and an op dated early only weakens itself (its claim
 * lapses sooner, a lease is judged lapsed only at or after its end).
 *
 * Judged on import (such a tip is quarantined) and on push (held back: every other machine
 * would quarantine it). No rule can tell this machine that its own clock runs ahead — its ops
 * are dated by it, and the ops of others may be old — so a clock ahead is caught on push only
 * once it has been set right (DESIGN §7).
 */
export function datedAhead(
  ref: string,
  history: readonly ParsedCommit[],
  incoming: ReadonlySet<string>,
  nowMs: number,
): DatedAhead | null {
  const limit = nowMs + MAX_CLOCK_SKEW_MS;
  let first: Invalid | null = null;
  let latest = -Infinity;
  for (const c of history) {
    if (!incoming.has(c.revision)) continue;
    for (const op of c.ops) {
      const t = Date.parse(op.time);
      if (!timeJudged(ref, op.op) || !(t > limit)) continue;
      latest = Math.max(latest, t);
      first ??= {
        commit: c.revision,
        reason: `op ${op.id} (${op.op}) is dated ${op.time.slice(0, 40)}, past this machine's clock by more than ${MAX_CLOCK_SKEW_MS / 60_000} min`,
      };
    }
  }
  return first && { ...first, until: new Date(latest - MAX_CLOCK_SKEW_MS).toISOString() };
}
