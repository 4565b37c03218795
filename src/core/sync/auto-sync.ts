import { listRemotes, authoritativeRemote, killRunningGit } from '../../git/index.js';
import type { LoggedOp } from '../../store/index.js';
import type { ZzRepo } from '../zz-repo.js';
import { moreQuarantined, QUARANTINED_SHOWN } from '../../schema/quarantine-shown.js';
import type { SyncReport } from './report.js';
import { ownersLostNotices, syncRepo } from './run.js';

// The daemon syncing by itself (DESIGN §7): on a timer with jitter, and soon after
// refs/zz-remotes/* move (a plain `git fetch` or `git pull` is enough to bring work in). After
// a round that changed refs, listeners wake (long-polls, the events stream); a claim this
// replica lost reaches its agent as a `claim_lost` event on the stream, with the winner (or,
// `reason: lane_closed`, who closed the Lane before the claim arrived).

export interface AutoSyncOptions {
  /** Mean time between syncs; each wait is drawn from [0.5, 1.5] × this. */
  intervalMs?: number;
  /** How often refs/zz-remotes/* are checked for outside moves. */
  watchMs?: number;
  log?: (line: string) => void;
  /** Each finished round (tests wait on it). */
  onReport?: (repo: ZzRepo, report: SyncReport) => void;
  /** Each round that failed or was refused (tests wait on it). */
  onError?: (repo: ZzRepo, error: Error) => void;
}

export interface AutoSync {
  /** Resolves once the tracking refs' starting values are recorded (moves after it count). */
  ready: Promise<void>;
  /** Runs one round on every repo now (what the timer does). */
  syncNow(): Promise<void>;
  close(): Promise<void>;
}

export const CLAIM_LOST_EVENT = 'claim_lost';

/** How long close() waits for a round in flight before killing its git runs. */
const CLOSE_WAIT_MS = 3_000;

export function startAutoSync(
  repos: ReadonlyMap<string, ZzRepo>,
  opts: AutoSyncOptions = {},
): AutoSync {
  const interval = opts.intervalMs ?? 60_000;
  const watchMs = opts.watchMs ?? 3_000;
  const log = opts.log ?? (() => {});
  let closed = false;
  const running = new Map<ZzRepo, Promise<void>>();
  const lastTracking = new Map<ZzRepo, string>();
  const lastOffline = new Map<ZzRepo, boolean>();
  const lastError = new Map<ZzRepo, string>();
  const lastProblems = new Map<ZzRepo, string>();

  const fingerprint = async (repo: ZzRepo): Promise<string> => {
    const refs = await repo.store.listRefs('refs/zz-remotes/');
    return [...refs]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map((e) => e.join(' '))
      .join('\n');
  };

  const round = (repo: ZzRepo): Promise<void> => {
    const busy = running.get(repo);
    if (busy) return busy;
    const p = (async () => {
      const g = repo.git;
      if (!g || closed) return;
      const remotes = await listRemotes(g.gitdir);
      if (!remotes.includes(await authoritativeRemote(g.gitdir))) return;
      let report: SyncReport;
      try {
        report = await syncRepo(repo);
      } catch (e) {
        // A refusal (the remote holds another project's zz state, say) stands until a person
        // acts, and each round meets it again: said once, and again only when it changes.
        // Nothing was merged; repo_state shows it meanwhile (sync_refused).
        const message = (e as Error).message;
        if (lastError.get(repo) !== message) log(`zz sync ${repo.key}: ${message}`);
        lastError.set(repo, message);
        // The tracking refs this round's own fetch moved are no outside move to sync after:
        // without this the watcher would start the same refused round again at once.
        lastTracking.set(repo, await fingerprint(repo).catch(() => ''));
        opts.onError?.(repo, e as Error);
        return;
      }
      if (lastError.delete(repo)) log(`zz sync ${repo.key}: synced again`);
      const offline = report.offline !== null;
      if (offline !== (lastOffline.get(repo) ?? false)) {
        log(
          offline
            ? `zz sync ${repo.key}: offline (${report.offline}); will retry`
            : `zz sync ${repo.key}: back online`,
        );
      }
      lastOffline.set(repo, offline);
      for (const line of ownersLostNotices(repo.key, report)) log(`zz sync ${repo.key}: ${line}`);
      // Said when it happens: the next round folds the same and finds nothing new to say.
      for (const x of report.newly_refused) {
        log(
          `zz sync ${repo.key}: ${x.ref.replace(/^refs\/zz\//, '')}: op ${x.op_id} (${x.op} by ${x.actor}), written here and accepted before, is now refused (${x.reason}) after syncing with ${report.remote}`,
        );
      }
      // What was quarantined or held back is said once when it changes, not every minute:
      // without a line the person behind the daemon never learns their work is not shared.
      const problems = [
        ...report.quarantined
          .slice(0, QUARANTINED_SHOWN)
          .map(
            (q) =>
              `zz sync ${repo.key}: quarantined ${q.ref} from ${report.remote} (commit ${q.commit.slice(0, 10)}: ${q.reason})`,
          ),
        ...[moreQuarantined(report)]
          .filter((m) => m !== null)
          .map((m) => `zz sync ${repo.key}: ${m}`),
        ...(report.still_quarantined > 0
          ? [
              `zz sync ${repo.key}: ${report.still_quarantined} ref(s) still quarantined, unchanged on ${report.remote}`,
            ]
          : []),
        ...(report.outside_layout?.truncated
          ? [
              `zz sync ${repo.key}: ${report.remote} holds ${report.outside_layout.count} names outside zz's layout under refs/zz/ (the first ${report.outside_layout.shown} above); an owner deletes each: git push ${report.remote} :<ref>`,
            ]
          : []),
        ...report.held_back.map(
          (h) =>
            `zz sync ${repo.key}: not pushing ${h.ref} (commit ${h.commit.slice(0, 10)}: ${h.reason}); every other machine would quarantine it`,
        ),
      ];
      if (!offline && problems.join('\n') !== (lastProblems.get(repo) ?? '')) {
        for (const line of problems) log(line);
        lastProblems.set(repo, problems.join('\n'));
      }
      lastTracking.set(repo, await fingerprint(repo));
      announce(repo, report);
      opts.onReport?.(repo, report);
    })().finally(() => running.delete(repo));
    running.set(repo, p);
    return p;
  };

  const timers: NodeJS.Timeout[] = [];
  const schedule = (repo: ZzRepo) => {
    if (closed) return;
    const t = setTimeout(
      () => {
        void round(repo).finally(() => schedule(repo));
      },
      interval * (0.5 + Math.random()),
    );
    t.unref();
    timers.push(t);
  };
  for (const repo of repos.values()) schedule(repo);

  const ready = Promise.all(
    [...repos.values()].map(async (repo) => {
      lastTracking.set(repo, await fingerprint(repo).catch(() => ''));
    }),
  ).then(() => {});
  // Outside moves of the tracking refs (git fetch, git pull): sync soon after.
  const watcher = setInterval(() => {
    for (const repo of repos.values()) {
      if (running.has(repo)) continue;
      void fingerprint(repo)
        .then((fp) => {
          const prev = lastTracking.get(repo);
          lastTracking.set(repo, fp);
          if (prev !== undefined && prev !== fp) return round(repo);
        })
        .catch(() => {});
    }
  }, watchMs);
  watcher.unref();

  return {
    ready,
    async syncNow() {
      await Promise.all([...repos.values()].map((r) => round(r)));
    },
    async close() {
      closed = true;
      clearInterval(watcher);
      for (const t of timers) clearTimeout(t);
      // A round stuck on a remote is not waited for past a bound: its git runs are killed (the
      // round then fails as any failed sync does, nothing half-written: refs move in one
      // transaction) and shutdown goes on.
      const rounds = Promise.allSettled([...running.values()]);
      let bound: NodeJS.Timeout | undefined;
      const late = await Promise.race([
        rounds.then(() => false),
        new Promise<boolean>((r) => (bound = setTimeout(() => r(true), CLOSE_WAIT_MS))),
      ]);
      clearTimeout(bound);
      if (late) {
        killRunningGit();
        await rounds;
      }
    },
  };
}

/** Wakes listeners for every ref the round moved; tells losers of claims. */
function announce(repo: ZzRepo, r: SyncReport): void {
  const time = new Date().toISOString();
  for (const ref of [...r.adopted, ...r.fast_forwarded]) void wake(repo, ref);
  for (const m of r.merged) {
    const lost: LoggedOp[] = r.claims_lost
      .filter((c) => c.ref === m.ref)
      .map((c) => ({
        id: `lost-${c.op_id}`,
        op: CLAIM_LOST_EVENT,
        actor: c.loser,
        lamport: 0,
        time,
        args: {
          ask_id: c.ask_id,
          winner: c.winner,
          claim_op_id: c.op_id,
          reason: c.reason,
          ...(c.closed_by === undefined ? {} : { closed_by: c.closed_by }),
          ...(c.blocked_by === undefined ? {} : { blocked_by: c.blocked_by }),
        },
        revision: m.commit,
      }));
    repo.emitFor(m.ref, m.commit, lost);
  }
}

async function wake(repo: ZzRepo, ref: string): Promise<void> {
  const revision = await repo.store.head(ref);
  if (revision) repo.emitFor(ref, revision, []);
}
