import { ZzError } from '../../errors.js';
import { RefCasError, TransportError, type RefUpdate } from '../../git/index.js';
import { LANE_ID_RE } from '../../schema/ids.js';
import { commitLamports, formatOpMessage, publicationOrder } from '../../store/index.js';
import type { ZzRepo } from '../zz-repo.js';
import { authChecker, type AuthChecker } from './authenticity.js';
import { syncCodecFor } from './codecs.js';
import { confirmedPrefix, confirmPushed, quarantinePrefix, trackingPrefix } from './engine.js';
import { GitSyncLocal, GitSyncRemote } from './git-ports.js';
import { forgetHeldBack } from './held-back.js';
import { datedAhead, reachable } from './history-checks.js';
import { unrelatedError, unrelatedRemote } from './project-identity.js';
import { isDatedProblem, pushGateProblem } from './push-gate.js';
import { CONFIG_REF, LANES_REF_PREFIX, rolesAt } from './roles-at.js';
import { syncTarget } from './run.js';
import { parseZzCommit, validateIncoming, type ParsedCommit } from './validate.js';

// `zz sync --drop-held <ref>`: the way out for a clone whose own commits on a ref are held
// back from every push (held-back.ts). Such a ref stays stuck for good otherwise: every later
// op on it rides behind the refused commit, and the push gate holds back all of them.
//
// What it does, one ref only, against the authoritative remote:
// 1. fetch, and refuse unless the remote's tip of the ref is a commit that passes the import
//    checks (validated, not quarantined, not rewritten behind what was synced) and our ref is
//    held back there for a reason that will not pass by itself (a date does). A ref deleted on
//    the remote is rebuilt on the value last confirmed there, and pushed back with a
//    must-not-exist lease (as a sync round recreates it); one never synced there is refused;
// 2. our ops = those reachable from the local tip and not from that base, in publication
//    order; each is re-applied as a new commit on the remote's tip when the push gate (the very
//    check every other clone makes on import) passes it as this process signs it, else dropped
//    and reported (actor, op, id). A re-applied op keeps its id, arguments, result, time and
//    idempotency key (a retry of its request is answered from the log, not written twice);
//    only its clock changes (one above its new parent, as validation requires);
// 3. the old local tip is kept as refs/zz-dropped/<ref path>/<time>-<oid> (the last
//    DROPPED_KEPT per ref; never fetched or pushed), and the ref and that backup move in one
//    transaction against the tip read in step 1: a write that landed meanwhile fails it, and
//    then no ref has moved;
// 4. the ref alone is pushed with a lease on the remote's tip. A push that loses a race leaves
//    the rebuilt ref here: it is signable now, so the next `zz sync` merges and pushes it.

/** Backups kept per ref under refs/zz-dropped/ (the oldest beyond it are deleted). */
export const DROPPED_KEPT = 10;
/** Ops one drop re-applies at most (each is a signature, a commit and a gate check). */
export const MAX_DROP_OPS = 1000;
export const DROPPED_PREFIX = 'refs/zz-dropped/';

export interface DroppedOp {
  id: string;
  op: string;
  actor: string;
  reason: string;
}

export interface ReappliedOp {
  id: string;
  op: string;
  actor: string;
  /** The op's idempotency key, kept. */
  key?: string;
  /** Set when the fold refuses it on the remote's state (kept in the log, as a merge keeps it). */
  refused?: string;
}

export interface DropHeldReport {
  remote: string;
  ref: string;
  /** The local tip before: kept under `backup`. */
  old_tip: string;
  /** The remote's tip (null: the ref was deleted there, and the push made it again). */
  remote_tip: string | null;
  /** What the ops were re-applied on: the remote's tip, else the value last synced there. */
  base: string;
  /** The local tip after. */
  new_tip: string;
  backup: string;
  /** Older backups of this ref deleted to keep DROPPED_KEPT. */
  backups_removed: string[];
  /** Why the ref was held back before. */
  held_back_reason: string;
  reapplied: ReappliedOp[];
  dropped: DroppedOp[];
  pushed: boolean;
  /** Why the push did not happen (the local drop stands; `zz sync` pushes it later). */
  push_problem: string | null;
}

export interface DropHeldOptions {
  /** This machine's clock (ms); tests may fix it. */
  now?: () => number;
  /** Runs just before the refs move (tests write to the ref here to prove the CAS). */
  beforeMove?: () => Promise<void>;
}

/** `lanes/<id>`, `config`, or their full refs/zz/ names; anything else is refused. */
export function heldRefName(arg: string): string {
  const rest = arg.startsWith('refs/zz/') ? arg.slice('refs/zz/'.length) : arg;
  if (rest === 'config') return CONFIG_REF;
  const lane = rest.startsWith('lanes/') ? rest.slice('lanes/'.length) : null;
  if (lane !== null && LANE_ID_RE.test(lane)) return LANES_REF_PREFIX + lane;
  throw new ZzError(
    'invalid_argument',
    `--drop-held takes a ref zz holds back: config or lanes/<lane id> (got ${JSON.stringify(arg.slice(0, 200))})`,
  );
}

export async function dropHeld(
  repo: ZzRepo,
  refArg: string,
  opts: DropHeldOptions = {},
): Promise<DropHeldReport> {
  const ref = heldRefName(refArg);
  const rest = ref.slice('refs/zz/'.length);
  const { g, store, main } = await syncTarget(repo);
  const local = new GitSyncLocal(g, store);
  const remote = new GitSyncRemote(g, main);
  const refuse = (why: string): ZzError => refusal(rest, why);
  try {
    await remote.fetch();
  } catch (e) {
    if (e instanceof TransportError && e.failure.kind === 'offline') {
      throw new ZzError(
        'unavailable',
        `cannot reach ${main} (${e.message}); nothing changed: the remote's tip must be known to re-apply ops on it, run it again when ${main} is reachable`,
      );
    }
    throw e;
  }
  const unrelated = await unrelatedRemote(local, main);
  if (unrelated) throw unrelatedError(unrelated);
  const nowMs = (opts.now ?? (() => repo.clock().getTime()))();
  const refs = await local.listRefs('refs/z');
  const mine = refs.get(ref) ?? null;
  if (mine === null) throw new ZzError('not_found', `this clone has no ${ref}`);
  const theirs = refs.get(trackingPrefix(main) + rest) ?? null;
  const confirmed = refs.get(confirmedPrefix(main) + rest) ?? null;
  const checker = authChecker(local, main);
  // A Lane is judged against the config every other clone holds: the remote's (ours may be
  // held back too, and a key it registers counts nowhere else). Checking the remote's config
  // first makes the checker judge by it (authenticity.ts, as a sync round does).
  const remoteConfig = refs.get(trackingPrefix(main) + 'config') ?? null;
  if (ref !== CONFIG_REF && remoteConfig !== null) {
    const ownConfig = refs.get(CONFIG_REF) ?? null;
    const all = await parsed(local, ref, [remoteConfig], [], CONFIG_REF);
    const fresh = await parsed(
      local,
      ref,
      [remoteConfig],
      ownConfig ? [ownConfig] : [],
      CONFIG_REF,
    );
    const bad = await checker.check(CONFIG_REF, all, new Set(fresh.map((c) => c.revision)));
    if (bad) throw refuse(`${main}'s refs/zz/config fails the import checks: ${bad.reason}`);
  }
  // What the ops are re-applied on: the remote's tip, once it passes what a sync round checks
  // on import; or, when the ref was deleted there, the value last confirmed there (published
  // and accepted then), which the push makes again with a must-not-exist lease, as a sync
  // round recreates a ref deleted on the remote.
  let base: string;
  if (theirs === null) {
    if ((await pushGateProblem(local, ref, mine, null, checker, nowMs)) === null) {
      throw refuse('it is not held back: zz sync pushes it as it is');
    }
    const mineReaches = confirmed === null ? false : await reaches(local, mine, confirmed);
    if (confirmed === null || !mineReaches) {
      throw refuse(
        `${main} does not hold it and it was never synced there from this clone, so there is nothing published to re-apply this clone's ops on`,
      );
    }
    base = confirmed;
  } else {
    await assertBuildable(
      local,
      ref,
      rest,
      main,
      refs,
      { mine, theirs, confirmed },
      checker,
      nowMs,
    );
    base = theirs;
  }
  const held = await pushGateProblem(local, ref, mine, base, checker, nowMs);
  if (held === null) {
    throw refuse('it is not held back: zz sync pushes it as it is');
  }
  if (isDatedProblem(held.reason)) {
    throw refuse(
      `it is held back only because ${held.reason}; it is pushed once this machine's clock reaches that date, nothing needs dropping`,
    );
  }

  // Our ops, in the order this clone's fold applied them.
  const oursCommits = await parsed(local, ref, [mine], [base]);
  // An op this zz cannot read (a newer format, a broken message) would vanish unreported.
  const unreadable = oursCommits.find((c) => c.problem !== null);
  if (unreadable) {
    throw refuse(
      `commit ${unreadable.revision.slice(0, 10)} of this clone cannot be read (${unreadable.problem}); a newer zz may drop it`,
    );
  }
  const ours = new Set(oursCommits.map((c) => c.revision));
  const mineHistory = await parsed(local, ref, [mine], []);
  const summaries = await summaryLines(local, mine, base);
  const ordered = publicationOrder(mineHistory, mine).filter((o) => ours.has(o.revision));
  if (ordered.length > MAX_DROP_OPS) {
    throw refuse(
      `${ordered.length} ops of this clone are on it, more than the ${MAX_DROP_OPS} one drop re-applies`,
    );
  }

  // The entity's state at the remote's tip; each op re-applied goes through the same guarded
  // fold a merge runs (a claim lost meanwhile is kept in the log and refused, as a merge keeps
  // it), and its commit's tree is that tip's with just the paths it touched rewritten.
  const sc =
    ref === CONFIG_REF
      ? syncCodecFor(ref)!
      : syncCodecFor(ref, await rolesAt(local, remoteConfig ?? refs.get(CONFIG_REF) ?? null))!;
  const baseHistory = await parsed(local, ref, [base], []);
  const state = sc.codec.empty();
  for (const { op } of publicationOrder(baseHistory, base)) {
    const p = sc.codec.parse(op);
    if (p.ok) sc.codec.apply(state, p.op);
  }
  let lamport = commitLamports(baseHistory).get(base) ?? 0;
  let tip = base;
  const reapplied: ReappliedOp[] = [];
  const dropped: DroppedOp[] = [];
  try {
    for (const { op, revision } of ordered) {
      const next = { ...op, lamport: lamport + 1 };
      const message = formatOpMessage(summaries.get(revision) ?? op.op, [next]);
      const who = { id: op.id, op: op.op, actor: op.actor };
      const parsedOp = sc.codec.parse(next);
      if (!parsedOp.ok) {
        dropped.push({ ...who, reason: parsedOp.error });
        continue;
      }
      // The gate judges a commit's message and signature, never its tree: a probe with the
      // parent's tree says whether this op, signed as this process signs it, passes, before
      // the fold's state (which cannot be rolled back) takes it.
      const probe = await local.writeOpCommit({
        parent: tip,
        changes: new Map(),
        author: op.actor,
        message,
      });
      const bad = await pushGateProblem(local, ref, probe, tip, checker, nowMs);
      if (bad && isDatedProblem(bad.reason)) {
        // Not one it cannot sign: one that passes once this clock reaches its date.
        throw refuse(`${bad.reason}; run it again once this machine's clock reaches that date`);
      }
      if (bad) {
        dropped.push({ ...who, reason: bad.reason });
        continue;
      }
      const before = sc.rejections?.(state).length ?? 0;
      const changes = new Map<string, string | null>();
      for (const path of sc.codec.apply(state, parsedOp.op)) {
        changes.set(path, sc.codec.file(state, path));
      }
      tip = await local.writeOpCommit({ parent: tip, changes, author: op.actor, message });
      lamport += 1;
      const refused = sc.rejections?.(state).slice(before)[0];
      reapplied.push({
        ...who,
        ...(op.key === undefined ? {} : { key: op.key }),
        ...(refused ? { refused: refused.reason } : {}),
      });
    }
    // The whole rebuilt history, as the push will carry it: it must pass, or nothing moves.
    const still =
      tip === base ? null : await pushGateProblem(local, ref, tip, base, checker, nowMs);
    if (still) {
      throw new ZzError(
        'internal',
        `the rebuilt ${rest} would still be held back (${still.reason}); nothing moved`,
      );
    }
    const backups = [...(await local.listRefs(`${DROPPED_PREFIX}${rest}/`))].sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    const backup = `${DROPPED_PREFIX}${rest}/${stamp(nowMs)}-${mine.slice(0, 12)}`;
    const removed = backups.slice(0, Math.max(0, backups.length + 1 - DROPPED_KEPT));
    const updates: RefUpdate[] = [
      { ref, old: mine, new: tip },
      { ref: backup, old: null, new: mine },
      ...removed.map(([name, oid]) => ({ ref: name, old: oid, new: null })),
    ];
    await opts.beforeMove?.();
    try {
      await local.update(updates);
    } catch (e) {
      // Another writer moved the ref (RefCasError) or holds its lock right now (ref_locked).
      if (!(e instanceof RefCasError) && !(e instanceof ZzError && e.code === 'ref_locked')) {
        throw e;
      }
      throw new ZzError(
        'conflict',
        `${rest} moved while its ops were being re-applied (a write landed meanwhile); nothing moved: run zz sync --drop-held ${rest} again`,
      );
    }
    await forgetHeldBack(repo, ref);
    const report: DropHeldReport = {
      remote: main,
      ref,
      old_tip: mine,
      remote_tip: theirs,
      base,
      new_tip: tip,
      backup,
      backups_removed: removed.map(([name]) => name),
      held_back_reason: held.reason,
      reapplied,
      dropped,
      pushed: false,
      push_problem: null,
    };
    if (tip === theirs) return { ...report, pushed: true };
    const push = [{ ref, expected: theirs, next: tip }];
    const outcome = await remote.push(push);
    if (outcome.kind === 'ok') {
      await confirmPushed(local, main, push);
      return { ...report, pushed: true };
    }
    return { ...report, push_problem: outcome.message };
  } finally {
    // Probes and anything written for a drop that did not move the ref: let their packs go.
    local.releaseUnnamed();
  }
}

/**
 * Refuses a remote tip no sync round would take: not a commit, quarantined here, no longer
 * holding what was synced there (rewritten), or failing the import checks.
 */
async function assertBuildable(
  local: GitSyncLocal,
  ref: string,
  rest: string,
  main: string,
  refs: ReadonlyMap<string, string>,
  tips: { mine: string; theirs: string; confirmed: string | null },
  checker: AuthChecker,
  nowMs: number,
): Promise<void> {
  const { mine, theirs, confirmed } = tips;
  const refuse = (why: string): ZzError => refusal(rest, why);
  if ((await local.objectTypes([theirs])).get(theirs) !== 'commit') {
    throw refuse(`${main}'s tip ${theirs.slice(0, 10)} is not a commit`);
  }
  if (refs.get(quarantinePrefix(main) + rest) === theirs) {
    throw refuse(
      `${main}'s tip ${theirs.slice(0, 10)} is quarantined here; an owner replaces it first (README, "A quarantined ref")`,
    );
  }
  const history = await parsed(local, ref, [theirs], []);
  if (confirmed !== null && !(await reaches(local, theirs, confirmed))) {
    throw refuse(
      `${main}'s tip no longer holds what was synced there (${confirmed.slice(0, 10)}); run zz sync first`,
    );
  }
  const known = await parsed(local, ref, [theirs], [mine, ...(confirmed ? [confirmed] : [])]);
  const incoming = new Set(known.map((c) => c.revision));
  const bad =
    validateIncoming(ref, history, incoming) ??
    datedAhead(ref, history, incoming, nowMs) ??
    (await checker.check(ref, history, incoming));
  if (bad) {
    throw refuse(`${main}'s tip fails the import checks (${bad.reason}); zz sync quarantines it`);
  }
}

/** Why nothing was dropped on `rest` (exit 6: nothing moved). */
const refusal = (rest: string, why: string): ZzError =>
  new ZzError('precondition_failed', `cannot drop what is held back on ${rest}: ${why}`);

/** Whether `ancestor` is in `tip`'s history. */
async function reaches(local: GitSyncLocal, tip: string, ancestor: string): Promise<boolean> {
  const history = await local.commits([tip], []);
  return reachable(new Map(history.map((c) => [c.oid, c.parents])), tip).has(ancestor);
}

/** `local.commits` parsed as `ref`'s entity (`as`: another entity's ref, the config). */
async function parsed(
  local: GitSyncLocal,
  ref: string,
  include: string[],
  exclude: string[],
  as: string = ref,
): Promise<ParsedCommit[]> {
  return (await local.commits(include, exclude)).map((c) => parseZzCommit(c, as));
}

/** Each of our commits' summary line, which its re-applied ops carry on. */
async function summaryLines(
  local: GitSyncLocal,
  mine: string,
  theirs: string,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const c of await local.commits([mine], [theirs])) {
    out.set(c.oid, c.message.split('\n', 1)[0] ?? '');
  }
  return out;
}

/** `20261203T140501Z`: sorts as it happened, and is a valid ref component. */
function stamp(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
}
