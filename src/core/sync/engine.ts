import { ZzError } from '../../errors.js';
import { RefCasError, TransportError, type PushUpdate, type RefUpdate } from '../../git/index.js';
import { publicationOrder } from '../../store/index.js';
import type { RoleSource } from '../lane-state.js';
import { syncCodecFor, type Rejection } from './codecs.js';
import { emptyReport, reportRefusals, type SyncReport } from './report.js';
import { answerBase, planMerge } from './merge.js';
import { datedAhead, reachable, wrapsRival, rewrittenBehind } from './history-checks.js';
import { pushGateProblem } from './push-gate.js';
import { rejudgeQuarantined } from './quarantine-rejudge.js';
import {
  confirmedPrefix,
  confirmPushed,
  LOCAL_PREFIX,
  quarantinePrefix,
  strip,
  trackingPrefix,
} from './sync-refs.js';
import { CONFIG_REF, LANES_REF_PREFIX, ladderRolesAt, ownersAt, rolesAt } from './roles-at.js';
import { unrelatedError, unrelatedRemote } from './project-identity.js';
import { laneRejectionsUnder, ownNewlyRefused } from './refusals.js';
import { nameTakenBy, namesOutsideLayout } from './remote-names.js';
import type { AuthChecker } from './authenticity.js';
import type { SyncCommit, SyncLocal, SyncRemote } from './ports.js';
import {
  formatMergeMessage,
  layoutProblem,
  parseZzCommit,
  validateIncoming,
  type Invalid,
  type ParsedCommit,
} from './validate.js';

// One `zz sync` against one remote (DESIGN §7): fetch → validate what arrived → merge each
// diverged entity → move local refs in one transaction with old values → push atomically with a
// lease per ref → on a lost race back off with jitter and start again. Never forces over remote
// work: every push names the exact remote value it replaces (or "must not exist").

export {
  confirmedPrefix,
  confirmPushed,
  LOCAL_PREFIX,
  quarantinePrefix,
  trackingPrefix,
} from './sync-refs.js';

export interface SyncOptions {
  authoritative?: boolean;
  maxAttempts?: number;
  /** Waits before retry `attempt` (1-based); tests pass one that does not sleep. */
  backoff?: (attempt: number) => Promise<void>;
  /**
   * Checks beyond the message format (signatures), made fresh for each round: a problem
   * quarantines the ref.
   */
  checker?: (local: SyncLocal, remote: string) => AuthChecker;
  /**
   * Merge with a remote whose config names another project's root commits (`zz sync
   * --allow-unrelated`): refused otherwise, before anything moves (project-identity.ts).
   */
  allowUnrelated?: boolean;
  /** This machine's clock (ms), which ops are judged against (history-checks.ts datedAhead). */
  now?: () => number;
}

export function defaultBackoff(attempt: number): Promise<void> {
  // 0.5 s doubling to 8 s, each with full jitter, so racing replicas spread out.
  const cap = Math.min(8000, 500 * 2 ** (attempt - 1));
  return new Promise((r) => setTimeout(r, cap / 2 + Math.random() * (cap / 2)));
}

export async function syncWith(
  local: SyncLocal,
  remote: SyncRemote,
  opts: SyncOptions = {},
): Promise<SyncReport> {
  const authoritative = opts.authoritative ?? true;
  const maxAttempts = opts.maxAttempts ?? 8;
  const backoff = opts.backoff ?? defaultBackoff;
  let lastRace = '';
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (attempt > 1) await backoff(attempt - 1);
    const report = emptyReport(remote.name, authoritative);
    report.attempts = attempt;
    let listed: ReadonlyMap<string, string>;
    try {
      listed = await remote.fetch();
    } catch (e) {
      if (e instanceof TransportError && e.failure.kind === 'offline') {
        report.offline = e.message;
        return report;
      }
      throw e;
    }
    // Before any local ref moves (the fetch moved only refs/zz-remotes/<remote>/*, the
    // remote's mirror) and before any push: is this the same project? Asked every round, as
    // the remote may have changed since the last.
    if (!opts.allowUnrelated) {
      const unrelated = await unrelatedRemote(local, remote.name);
      if (unrelated) throw unrelatedError(unrelated);
    }
    let pushes: PushUpdate[];
    try {
      pushes = await reconcile(local, remote.name, report, authoritative, opts, listed);
    } catch (e) {
      // A local writer (the daemon) moved a ref between our read and the transaction.
      if (e instanceof RefCasError) {
        lastRace = e.message;
        continue;
      }
      throw e;
    }
    if (!authoritative || pushes.length === 0) return report;
    const outcome = await remote.push(pushes);
    if (outcome.kind === 'ok') {
      report.pushed = pushes.map((p) => p.ref);
      await confirmPushed(local, remote.name, pushes);
      return report;
    }
    if (outcome.kind === 'offline') {
      report.offline = outcome.message;
      return report;
    }
    if (outcome.kind === 'fatal') {
      const why =
        outcome.reason === 'permission'
          ? `you may not push refs/zz/* to ${remote.name}`
          : outcome.reason === 'hidden_ref'
            ? `${remote.name} hides refs/zz/* from pushes (receive.hideRefs)`
            : outcome.reason === 'declined'
              ? `${remote.name} declined the push`
              : `pushing to ${remote.name} failed`;
      throw new ZzError('forbidden', `${why}: ${outcome.message}`, { reason: outcome.reason });
    }
    lastRace = `${outcome.reason}: ${outcome.message}`;
  }
  throw new ZzError(
    'conflict',
    `zz sync kept losing races with other pushers to ${remote.name} after ${maxAttempts} attempts (${lastRace}); nothing was lost, run it again`,
  );
}

/**
 * What was fetched into `refs/zz-remotes/<remote>/*` by someone else (`zz init`'s fetch, a
 * `git pull` with zz's refspec, before the hooks run): validated and checked like a sync round,
 * then adopted or fast-forwarded; a bad ref is quarantined, a diverged one left for `zz sync`.
 * Nothing is merged, nothing pushed. Moving refs/zz/* to the fetched values unchecked made a
 * forged owner grant that every sync quarantined an owner on each new clone and after each pull.
 */
export async function importFetched(
  local: SyncLocal,
  remoteName: string,
  opts: Pick<SyncOptions, 'checker' | 'now'> = {},
): Promise<SyncReport> {
  let lastRace = '';
  for (let attempt = 1; attempt <= 4; attempt++) {
    const report = emptyReport(remoteName, false);
    report.attempts = attempt;
    try {
      await reconcile(local, remoteName, report, false, opts, null);
      return report;
    } catch (e) {
      // The daemon moved a ref between our read and the transaction: read again.
      if (!(e instanceof RefCasError)) throw e;
      lastRace = e.message;
    }
  }
  throw new ZzError(
    'conflict',
    `zz state from ${remoteName} kept racing local writes (${lastRace}); nothing was lost, run zz sync`,
  );
}

/**
 * Plans and applies one round locally; returns what to push. `listed`: every name the remote
 * holds under refs/zz/, as this round's fetch listed it; null on import (of what someone
 * else's fetch left), where only what came from the remote moves local refs (adopted,
 * fast-forwarded or quarantined): local-only work and diverged entities are left for a sync,
 * which merges and pushes them.
 */
async function reconcile(
  local: SyncLocal,
  remoteName: string,
  report: SyncReport,
  authoritative: boolean,
  opts: Pick<SyncOptions, 'checker' | 'now'>,
  listed: ReadonlyMap<string, string> | null,
): Promise<PushUpdate[]> {
  const importing = listed === null;
  const tPrefix = trackingPrefix(remoteName);
  const cPrefix = confirmedPrefix(remoteName);
  const qPrefix = quarantinePrefix(remoteName);
  const [locals, tracked, confirmed, quarantined] = await Promise.all([
    local.listRefs(LOCAL_PREFIX),
    strip(local.listRefs(tPrefix), tPrefix),
    strip(local.listRefs(cPrefix), cPrefix),
    strip(local.listRefs(qPrefix), qPrefix),
  ]);
  // Names outside zz's layout are reported and never kept (remote-names.ts); on import they
  // may be in the tracking refs, fetched by a `git pull` with zz's refspec.
  const outside = namesOutsideLayout(listed ?? tracked);
  for (const o of outside.shown) report.quarantined.push({ ...o, kept: false });
  if (outside.count > 0) {
    report.outside_layout = {
      count: outside.count,
      shown: outside.shown.length,
      truncated: outside.count > outside.shown.length,
    };
  }
  const remotes = listed === null ? outside.inside : namesOutsideLayout(tracked).inside;
  const updates: RefUpdate[] = [];
  const pushes: PushUpdate[] = [];
  // A quarantined ref the remote no longer has (an owner deleted the junk) is no longer the
  // remote's: its quarantine goes, or health and repo_state reported it for ever. In a
  // transaction of its own: one of a name an older zz kept (`lanes/web/x`) would conflict
  // with a quarantine of `lanes/web` made in the same one.
  const gone: RefUpdate[] = [];
  for (const [ref, q] of quarantined) {
    if (!remotes.has(ref)) {
      gone.push({ ref: qPrefix + ref.slice(LOCAL_PREFIX.length), old: q, new: null });
      quarantined.delete(ref);
    }
  }
  await local.update(gone);
  /** Queues a push unless the remote holds a name git cannot hold beside `ref`. */
  const push = (ref: string, expected: string | null, next: string): boolean => {
    const taken = authoritative && listed ? nameTakenBy(ref, listed) : null;
    if (taken !== null) report.not_pushed.push({ ref, commit: next, name_taken_by: taken });
    else pushes.push({ ref, expected, next });
    return taken === null;
  };
  const checker = opts.checker?.(local, remoteName);
  const nowMs = (opts.now ?? Date.now)();
  const { rejudge, mark } = await rejudgeQuarantined(local, remoteName, locals, nowMs);
  // What we would push is checked as the remote's next reader will check it (see held_back).
  const heldBack = async (ref: string, mine: string, theirs: string | null): Promise<boolean> => {
    if (!authoritative) return false;
    const bad = await pushGateProblem(local, ref, mine, theirs, checker, nowMs);
    if (bad) report.held_back.push({ ref, ...bad });
    return bad !== null;
  };
  const names = new Set([...locals.keys(), ...remotes.keys()]);
  // A remote ref may name any object: only a commit is a history (one batch-check, no read).
  const types = await local.objectTypes(
    [...remotes].filter(([ref, oid]) => locals.get(ref) !== oid).map(([, oid]) => oid),
  );
  // refs/zz/config sorts before every Lane: by the time a Lane merges, configTip is the value
  // this round leaves it at, and Lane ops are judged against those roles (lane-state.ts).
  let configTip = locals.get(CONFIG_REF) ?? null;
  /** Set when this round quarantined the remote's config (it sorts before every entity). */
  let configRefused = false;
  let roles: Promise<RoleSource> | null = null;
  let oldRoles: Promise<RoleSource> | null = null;
  // Every ref's value as this round leaves it so far (the Ladder's merge reads Lanes' tips).
  const tips = new Map(locals);
  const setTip = (ref: string, oid: string | null): void => {
    if (ref === CONFIG_REF) configTip = oid;
    if (oid === null) tips.delete(ref);
    else tips.set(ref, oid);
  };
  // A Lane that only we wrote is pushed as it is, but when this round brought a new config
  // (a revocation, say) the fold may now refuse some of our ops: say which, as a merge would.
  const refusedByNewRoles = async (
    ref: string,
    mine: string,
    theirs: string | null,
    walked?: readonly SyncCommit[],
  ) => {
    if (!ref.startsWith(LANES_REF_PREFIX) || configTip === (locals.get(CONFIG_REF) ?? null)) {
      return;
    }
    const history = (walked ?? (await local.commits([mine], []))).map((c) => parseZzCommit(c, ref));
    const remote =
      theirs === null
        ? new Set<string>()
        : reachable(new Map(history.map((h) => [h.revision, h.parents])), theirs);
    const ours = new Set(
      history.filter((c) => !remote.has(c.revision)).flatMap((c) => c.ops.map((o) => o.id)),
    );
    // What the fold refuses under the new roles and did not under the old ones.
    const ops = publicationOrder(history, mine).map((o) => o.op);
    oldRoles ??= rolesAt(local, locals.get(CONFIG_REF) ?? null);
    const before = new Set(laneRejectionsUnder(ops, await oldRoles).map((r) => r.op_id));
    for (const r of laneRejectionsUnder(ops, await (roles ??= rolesAt(local, configTip)))) {
      if (ours.has(r.op_id) && !before.has(r.op_id)) report.rejected.push({ ...r, ref });
    }
  };
  /** This clone's ops accepted at `mine` and refused where the round leaves `ref` (newly_refused). */
  const newlyRefused = async (
    ref: string,
    [mine, all, fromMine]: [string, readonly ParsedCommit[], ReadonlySet<string>],
    after: () => Promise<Iterable<Rejection>>,
    reported: ReadonlySet<string> = new Set(),
  ): Promise<void> => {
    if (!ref.startsWith(LANES_REF_PREFIX)) return;
    const history = all.filter((c) => fromMine.has(c.revision));
    const rolesBefore = () => (oldRoles ??= rolesAt(local, locals.get(CONFIG_REF) ?? null));
    const refused = await ownNewlyRefused(
      local.replica,
      history,
      mine,
      after,
      rolesBefore,
      reported,
    );
    for (const r of refused) report.newly_refused.push({ ...r, ref });
  };
  /** Keeps the remote's `theirs` aside as refs/zz-quarantine/<remote>/…, reported, not adopted. */
  const quarantine = (
    ref: string,
    mine: string | null,
    theirs: string,
    bad: Invalid,
    fromTheirs: ReadonlySet<string> = new Set(),
  ): void => {
    if (ref === CONFIG_REF) configRefused = true;
    setTip(ref, mine);
    report.quarantined.push({ ref, commit: bad.commit, reason: bad.reason });
    const q = quarantined.get(ref) ?? null;
    const name = qPrefix + ref.slice(LOCAL_PREFIX.length);
    if (q !== theirs) updates.push({ ref: name, old: q, new: theirs });
    // Local work the remote lacks cannot go over a tip we refused (pushing it would carry
    // that tip along or force over it): say so, or the Lane freezes silently.
    if (authoritative && mine !== null && !fromTheirs.has(mine)) {
      report.not_pushed.push({ ref, commit: mine, quarantined: theirs });
    }
  };
  // The Ladder after every Lane: its fold judges writes by the cited Lanes' coordinators as
  // this round leaves them (ladder-guards.ts).
  const order = [...names]
    .sort()
    .sort((a, b) => Number(a === LADDER_REF) - Number(b === LADDER_REF));
  for (const ref of order) {
    const rest = ref.slice(LOCAL_PREFIX.length);
    const mine = locals.get(ref) ?? null;
    const theirs = remotes.get(ref) ?? null;
    // The last value confirmed on the remote follows what was fetched, once it is accepted and
    // only forwards: a quarantined tip, a rewind, or a rewrite not yet answered by our merge
    // leaves it where it was, so the rewrite is judged against what was synced
    // (history-checks.ts) until our merge is pushed (confirmPushed moves it then). Moved to a
    // rival tip at once (by the import of a `git pull`'s hook, or a round whose push lost a
    // race), it made the next round merge the rival's ops first (found in review).
    const conf = confirmed.get(ref) ?? null;
    const accept = (advance: boolean): void => {
      if (advance && theirs !== null && conf !== theirs) {
        updates.push({ ref: cPrefix + rest, old: conf, new: theirs });
      }
      // Whatever was quarantined is no longer the remote's (an owner replaced it, say).
      const q = quarantined.get(ref);
      if (q !== undefined) updates.push({ ref: qPrefix + rest, old: q, new: null });
    };
    if (mine === theirs) {
      accept(true);
      continue;
    }
    if (importing && theirs === null) continue;
    // Only zz's own layout, and only commits, come in; a local ref outside it is not spread.
    if (layoutProblem(ref) !== null) continue;
    if (theirs !== null && types.get(theirs) !== 'commit') {
      const what = types.get(theirs) ?? 'missing object';
      quarantine(ref, mine, theirs, {
        commit: theirs,
        reason: `the ref names a ${what}, not a commit`,
      });
      continue;
    }
    // Unchanged since refused: the remote's tip is the one quarantined here already, and no
    // local work waits on it. Judged again it was a full history walk and parse a ref, every
    // round: 1,500 refs pushed by anyone at the main branch's tip cost every clone ~20 s of CPU
    // and 1,500 report lines a round (hostile review H4). Config and Ladder are always judged.
    if (
      !rejudge &&
      mine === null &&
      ref !== CONFIG_REF &&
      ref !== LADDER_REF &&
      quarantined.get(ref) === theirs
    ) {
      setTip(ref, mine);
      report.still_quarantined++;
      continue;
    }
    if (theirs === null) {
      // Absent on the remote: a new ref, or one deleted there. Absence is never a deletion
      // (deletions are ops), so it goes back, with a lease that it must still not exist.
      if ((await heldBack(ref, mine!, null)) || !push(ref, null, mine!)) continue;
      if (conf !== null) report.recreated.push(ref);
      await refusedByNewRoles(ref, mine!, null);
      continue;
    }
    // Only we moved (a few local commits on top of what the remote holds): push. A short walk
    // through cat-file says so without a spawn; past it, the full walk below decides.
    if (mine !== null && (await local.reachesWithin(mine, theirs, NEAR_ANCESTOR_WALK))) {
      // Not known to be ahead of the confirmed value (a rewind?): the push confirms ours.
      accept(false);
      if (importing || (await heldBack(ref, mine, theirs)) || !push(ref, theirs, mine)) continue;
      await refusedByNewRoles(ref, mine, theirs);
      continue;
    }
    // Both sides' histories in one walk (one git call; reading them once per question cost
    // seconds on a 1,000-op divergence); who reaches what is answered in memory.
    const raw = await local.commits(mine === null ? [theirs] : [theirs, mine], []);
    const parentsOf = new Map(raw.map((c) => [c.oid, c.parents]));
    const fromTheirs = reachable(parentsOf, theirs);
    const fromMine = mine === null ? new Set<string>() : reachable(parentsOf, mine);
    if (mine !== null && fromMine.has(theirs)) {
      accept(conf === null || fromTheirs.has(conf));
      if (importing || (await heldBack(ref, mine, theirs)) || !push(ref, theirs, mine)) continue;
      await refusedByNewRoles(ref, mine, theirs, raw);
      continue;
    }
    // A new ref whose tip is no zz commit (a plain code commit, say: anyone can push
    // thousands at the main branch's tip) is refused on that one commit, before the whole
    // history is parsed: it was every commit of the code branch, a ref (hostile review H4).
    if (mine === null && syncCodecFor(ref)) {
      const tip = raw.find((c) => c.oid === theirs);
      const problem = tip ? parseZzCommit(tip, ref).problem : null;
      if (problem) {
        quarantine(ref, mine, theirs, { commit: theirs, reason: problem });
        continue;
      }
    }
    // Only what arrived goes through the entity's typed op parser here: what we hold was
    // judged when it came (or written here), and the merge's fold parses every op it applies.
    const all = raw.map((c) => parseZzCommit(c, fromMine.has(c.oid) ? undefined : ref));
    const history = all.filter((c) => fromTheirs.has(c.revision));
    const incomingSet = new Set(
      history.filter((c) => !fromMine.has(c.revision)).map((c) => c.revision),
    );
    const codec = syncCodecFor(ref);
    // A remote that no longer holds what was synced there (a rival history force-pushed, or a
    // ref deleted and made again from an older copy), or folds a rival before it (wrapped in a
    // merge whose first parent it is), merges the other way round when ours still holds it: what was
    // published keeps its place, the remote's own ops come after. Without that copy here it is
    // refused.
    const wrapped =
      codec && conf !== null && conf !== theirs && fromTheirs.has(conf)
        ? wrapsRival(history, conf, theirs)
        : null;
    const rewritten = conf !== null && (!fromTheirs.has(conf) || wrapped?.kind === 'rival');
    // A merge that folds what was synced as a side of an older value it was published on is
    // refused, with or without our copy: answered, it is answered back for ever (wrapsRival).
    let bad: Invalid | null =
      wrapped?.kind === 'reorders'
        ? wrapped
        : rewritten && !fromMine.has(conf)
          ? (wrapped ?? rewrittenBehind(conf, theirs, fromTheirs))
          : null;
    if (!bad && codec) bad = validateIncoming(ref, history, incomingSet);
    if (!bad && codec) bad = datedAhead(ref, history, incomingSet, nowMs);
    if (!bad && checker) {
      bad = await checker.check(ref, history, incomingSet);
    }
    if (!bad && codec && configRefused && configTip === null) {
      // With no config to judge them against, roles and signatures would pass unchecked.
      bad = {
        commit: theirs,
        reason: 'refs/zz/config, which its ops are judged against, is quarantined',
      };
    }
    if (bad) {
      quarantine(ref, mine, theirs, bad, fromTheirs);
      continue;
    }
    accept(!rewritten);
    if (mine === null) {
      setTip(ref, theirs);
      updates.push({ ref, old: null, new: theirs });
      report.adopted.push(ref);
      continue;
    }
    if (fromTheirs.has(mine) && !rewritten) {
      setTip(ref, theirs);
      updates.push({ ref, old: mine, new: theirs });
      report.fast_forwarded.push(ref);
      await newlyRefused(ref, [mine, all, fromMine], async () =>
        laneRejectionsUnder(
          publicationOrder(history, theirs).map((o) => o.op),
          await (roles ??= rolesAt(local, configTip)),
        ),
      );
      continue;
    }
    if (!codec || importing) {
      report.diverged.push(ref);
      continue;
    }
    const localOnly = all.filter((c) => fromMine.has(c.revision) && !fromTheirs.has(c.revision));
    const merging = ref.startsWith(LANES_REF_PREFIX)
      ? (syncCodecFor(ref, await (roles ??= rolesAt(local, configTip))) ?? codec)
      : ref === LADDER_REF
        ? (syncCodecFor(
            ref,
            undefined,
            await ladderRolesAt(local, all, tips, await (roles ??= rolesAt(local, configTip))),
          ) ?? codec)
        : codec;
    // Publication order follows first parents (publicationOrder): the first is the base. After
    // a rewrite it is ours, on the remote's continuation of what was synced when it has one.
    // A codec with files (the Ladder) rewrites every file of the first parent's tree that
    // differs from the fold (merge.ts).
    const filesOf = merging.codec.files ? (oid: string) => local.files?.(oid) : undefined;
    const base = rewritten
      ? await answerBase(
          merging,
          mine,
          wrapped?.continued ?? null,
          all,
          (parents, p) =>
            local.writeMerge({
              parents,
              changes: p.changes,
              message: formatMergeMessage(`Merge ${remoteName}'s ${rest} as synced`, p.lamport),
            }),
          filesOf,
        )
      : null;
    const fromBase = new Set(base?.commits.map((c) => c.revision));
    const baseFiles = await filesOf?.(base ? base.tip : theirs);
    const plan = base
      ? planMerge(
          merging,
          base.tip,
          base.commits,
          theirs,
          history.filter((c) => !fromBase.has(c.revision)),
          baseFiles,
        )
      : planMerge(merging, theirs, history, mine, localOnly, baseFiles);
    const commit = await local.writeMerge({
      parents: base ? [base.tip, theirs] : [theirs, mine],
      changes: plan.changes,
      message: formatMergeMessage(
        rewritten
          ? `Merge ${remoteName}'s rewritten ${rest} after what was synced`
          : `Merge ${remoteName} into ${rest}`,
        plan.lamport,
      ),
    });
    setTip(ref, commit);
    updates.push({ ref, old: mine, new: commit });
    report.merged.push({
      ref,
      commit,
      local_ops: base ? (base.plan?.localOps.length ?? 0) : plan.localOps.length,
      ...(rewritten
        ? {
            rewritten: {
              synced: conf,
              remote_ops: plan.localOps.length,
              ...(wrapped ? { wrapped: true as const } : {}),
            },
          }
        : {}),
    });
    // After a rewritten remote the ops the merge applied, and refused, are the remote's (ours
    // merged onto the remote's continuation are ours).
    reportRefusals(report, ref, base?.plan?.rejected ?? [], undefined);
    reportRefusals(report, ref, plan.rejected, rewritten ? 'remote' : undefined);
    const reported = new Set(
      [...(base?.plan?.rejected ?? []), ...plan.rejected].map((r) => r.op_id),
    );
    await newlyRefused(ref, [mine, all, fromMine], async () => plan.refusals, reported);
    if (authoritative && !(await heldBack(ref, mine, theirs))) push(ref, theirs, commit);
  }
  const configBefore = locals.get(CONFIG_REF) ?? null;
  if (configBefore !== null && configTip !== configBefore) {
    const [before, after] = await Promise.all([
      ownersAt(local, configBefore),
      ownersAt(local, configTip),
    ]);
    const actors = before.filter((o) => !after.includes(o));
    if (actors.length > 0) {
      const merged = report.merged.some((m) => m.ref === CONFIG_REF);
      report.owners_lost = { actors, owners: after, merged };
    }
  }
  if (mark) updates.push(mark);
  await local.update(updates);
  return pushes;
}

const LADDER_REF = 'refs/zz/ladder';
/** Commits the cheap "only we moved" walk reads before leaving it to the full walk. */
const NEAR_ANCESTOR_WALK = 32;

export type { SyncCommit };
