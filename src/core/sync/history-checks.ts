import type { CommitRecord } from '../../store/index.js';
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
 * Whether the remote's tip `theirs`, which still reaches the value last confirmed there, folds
 * a rival history before it: a merge whose parents are [rival, confirmed] reaches it, and
 * publication order (first parents first, DESIGN §7) would fold the rival's ops before
 * everything published — a rival lane_propose would take the Lane. Such a tip is answered like
 * a rewrite: merged with ours as the first parent, the rival's ops after.
 *
 * Judged where `confirmed` leaves the tip's first-parent chain: the history below that merge's
 * first parent folds first, and it is a rival when it holds none of the ops that were synced.
 * Not "the synced ops must fold first in their order": after a remote ref was deleted or
 * rewound, an honest replica's answer (ours first, the remote's after) reorders what the
 * replica that recreated it had confirmed, and that one answering back the same way made the
 * two ping-pong for ever (the property test found it in 4 runs). Every honest history of a
 * Lane shares its first commit, so an honest answer always holds some of what was synced.
 * What this leaves open: a rival forked after a shared commit, whose later ops (a claim) fold
 * before published ones. `history`: every commit `theirs` reaches.
 */
export function wrapsRival(
  history: readonly CommitRecord[],
  confirmed: string,
  theirs: string,
): Invalid | null {
  const byOid = new Map(history.map((c) => [c.revision, c]));
  const synced = new Set<string>();
  for (const oid of closure([confirmed], (o) => byOid.get(o)?.parents ?? [])) {
    if ((byOid.get(oid)?.ops.length ?? 0) > 0) synced.add(oid);
  }
  if (synced.size === 0) return null;
  // The commits that reach `confirmed`: its descendants, through the child links.
  const children = new Map<string, string[]>();
  for (const c of history) {
    for (const p of c.parents) children.set(p, [...(children.get(p) ?? []), c.revision]);
  }
  const reaches = closure([confirmed], (o) => children.get(o) ?? []);
  for (let cur = theirs; cur !== confirmed;) {
    const first = byOid.get(cur)?.parents[0];
    if (first === undefined) return null;
    if (reaches.has(first)) {
      cur = first;
      continue;
    }
    for (const oid of closure([first], (o) => byOid.get(o)?.parents ?? [])) {
      if (synced.has(oid)) return null;
    }
    return {
      commit: theirs,
      reason: `remote folds a rival history before what was synced at ${confirmed} (merge ${cur} has it as a second parent, and a first that holds none of its ops)`,
    };
  }
  return null;
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
