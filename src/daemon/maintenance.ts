import type { ZzRepo } from '../core/index.js';
import { fullGcDue, gcAuto, gcFull, repackGeometric } from '../git/index.js';

// Background maintenance of every served repository: the packs zz's writes leave are rolled
// up geometrically after every `everyPacks` of them (git/maintenance.ts repackGeometric: the
// small packs are merged, the repository's own large pack is left alone), and `git gc --auto`
// runs after every `everyCommits` zz commits and on a slow timer when the repository had any
// since the last run; on that timer, once a day, a full gc instead prunes what is unreachable
// and old (gcFull: the roll-ups leave gc --auto nothing to do, so nothing else would). One run per repository at a time; a failure is logged and retried on
// the next occasion. Never blocks a request: writes go on while git packs beside them
// (git/ref-store.ts copes with a concurrent pack-refs, and neither run prunes fresh objects).

/** git's default gc.autoPackLimit: gc --auto rewrites every pack when more than this are present. */
const GIT_AUTO_PACK_LIMIT = 50;

export interface MaintenanceOptions {
  /** Commits between runs (default 1,000: a few thousand loose objects). */
  everyCommits?: number;
  /**
   * Packs written between roll-ups (default 51, one past git's gc.autoPackLimit: the packs
   * stay below the count at which a gc --auto of the user's own would rewrite the whole
   * repository). A commit of many objects is one pack (git/pack-writer.ts), and every read
   * searches each pack. Each run is a process spawned from the event loop (milliseconds of
   * it) and a git start-up on a CPU the daemon shares: under a 32-writer storm on a Lane of
   * thousands of Asks every group commit leaves a pack (past small-packs' merge size), and a
   * run every 10 packs (the default before) was one or two spawns a second, all but one in
   * five of them no-ops: ~160 ms of loop time in a 10 s storm profile (bench/load.ts).
   */
  everyPacks?: number;
  /** At most this often otherwise, when a repository saw writes (default 10 minutes). */
  everyMs?: number;
  /**
   * A full gc (git/maintenance.ts gcFull: unreachable objects pruned) at most this often, on
   * the timer, when a repository saw writes (default a day; kept on disk across restarts).
   */
  fullEveryMs?: number;
  log: (line: string) => void;
}

export interface Maintenance {
  /** Resolves when no run is in progress (tests, shutdown). */
  idle(): Promise<void>;
  /** Stops scheduling; waits for a running gc. */
  close(): Promise<void>;
}

export function startMaintenance(
  repos: ReadonlyMap<string, ZzRepo>,
  opts: MaintenanceOptions,
): Maintenance {
  const everyCommits = opts.everyCommits ?? 1_000;
  const everyPacks = opts.everyPacks ?? GIT_AUTO_PACK_LIMIT + 1;
  const fullEveryMs = opts.fullEveryMs ?? 24 * 60 * 60_000;
  const packsAt = new Map<string, number>();
  const packsSince = (repo: ZzRepo) =>
    (repo.git?.objects.packsWritten ?? 0) - (packsAt.get(repo.key) ?? 0);
  const running = new Map<string, Promise<void>>();
  const since = new Map<string, number>();
  let closed = false;

  // Three kinds of run, one at a time per repository. Packs past everyPacks are rolled up
  // geometrically (repackGeometric: only the small ones are rewritten); commits past
  // everyCommits and the timer run gc --auto (loose objects, refs, reflogs, and the pruning of
  // what is unreachable and old), after a roll-up whenever packs were written since the last
  // run, so that gc --auto does not find more than gc.autoPackLimit packs and rewrite the
  // whole repository instead: it counts every pack there (what earlier roll-ups left, too),
  // so fewer than everyPacks new ones can be enough.
  // A full gc (the timer's, once a day) packs everything anew and prunes: neither a roll-up
  // nor gc --auto is needed beside it. One that answers 'off' leaves the run as any other.
  const run = (repo: ZzRepo, gc: boolean, full = false): void => {
    const gitdir = repo.git?.gitdir;
    if (closed || !gitdir || running.has(repo.key)) return;
    const rollUp = !gc || packsSince(repo) > 0;
    packsAt.set(repo.key, repo.git?.objects.packsWritten ?? 0);
    if (gc) since.set(repo.key, 0);
    // Merges of small packs delete nothing while git runs (maintain in git/maintenance.ts).
    const smallPacks = repo.git?.objects.small;
    const p = (async () => {
      // 'off' for gc.autoPackLimit ≤ 0 too, where gc --auto still packs loose objects past
      // gc.auto, and for a mark that cannot be set, where gc --auto still counts packs: the
      // run goes on as on any tick, roll-up first (the mark is not set, so this is asked
      // every tick).
      if (full && (await gcFull(gitdir, { smallPacks })) === 'done') return;
      // git < 2.32 has no geometric repack (and some fail it in a partial clone): gc --auto as
      // before. So does a roll-up that failed (logged): packs would otherwise pile up, and a
      // gc --auto due now would be skipped.
      let fallback = false;
      if (rollUp) {
        try {
          fallback = (await repackGeometric(gitdir, { smallPacks })) === 'unsupported';
        } catch (e) {
          opts.log(`maintenance ${repo.key}: roll-up: ${(e as Error).message}`);
          fallback = true;
        }
      }
      if (gc || fallback) await gcAuto(gitdir, { smallPacks });
    })()
      .catch((e: unknown) => opts.log(`maintenance ${repo.key}: ${(e as Error).message}`))
      .finally(() => {
        running.delete(repo.key);
        // Commits and packs that arrived while git ran count toward the next run.
        const gcDue = (since.get(repo.key) ?? 0) >= everyCommits;
        if (gcDue || packsSince(repo) >= everyPacks) run(repo, gcDue);
      });
    running.set(repo.key, p);
  };

  // Commit listeners run inside the writer's group commit, before its callers are answered:
  // the spawn waits for a later turn of the loop instead.
  const soon = new Set<string>();
  const runSoon = (repo: ZzRepo): void => {
    if (soon.has(repo.key)) return;
    soon.add(repo.key);
    setImmediate(() => {
      soon.delete(repo.key);
      run(repo, (since.get(repo.key) ?? 0) >= everyCommits);
    });
  };

  const offs = [...repos.values()].map((repo) =>
    repo.onCommit(() => {
      const n = (since.get(repo.key) ?? 0) + 1;
      since.set(repo.key, n);
      if (n >= everyCommits || packsSince(repo) >= everyPacks) runSoon(repo);
    }),
  );
  const timer = setInterval(
    () => {
      for (const repo of repos.values()) {
        const gitdir = repo.git?.gitdir;
        if (!gitdir || (since.get(repo.key) ?? 0) === 0 || running.has(repo.key)) continue;
        let full = false;
        try {
          full = fullGcDue(gitdir, fullEveryMs);
        } catch (e) {
          opts.log(`maintenance ${repo.key}: ${(e as Error).message}`);
        }
        run(repo, true, full);
      }
    },
    opts.everyMs ?? 10 * 60_000,
  );
  timer.unref();

  const idle = async () => {
    while (running.size > 0 || soon.size > 0) {
      if (running.size > 0) await Promise.all(running.values());
      else await new Promise((r) => setImmediate(r));
    }
  };
  return {
    idle,
    async close() {
      closed = true;
      clearInterval(timer);
      for (const off of offs) off();
      await idle();
    },
  };
}
