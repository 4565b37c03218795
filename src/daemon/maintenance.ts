import type { ZzRepo } from '../core/index.js';
import { gcAuto } from '../git/index.js';

// Background `git gc --auto` for every served repository, now and then: after every
// `everyCommits` zz commits to it, and on a slow timer when it has had any since the last run.
// One run per repository at a time; a failure is logged and retried on the next occasion.
// Never blocks a request: writes go on while git packs beside them (git/ref-store.ts copes
// with a concurrent pack-refs, and gc --auto never prunes fresh objects).

/** git's default gc.autoPackLimit: gc --auto repacks when more packs than this are present. */
const GIT_AUTO_PACK_LIMIT = 50;

export interface MaintenanceOptions {
  /** Commits between runs (default 1,000: a few thousand loose objects). */
  everyCommits?: number;
  /**
   * Packs written between runs (default 51: one past git's gc.autoPackLimit, the least that
   * makes a run do something after the last one left one pack). A commit of many objects is one pack
   * (git/pack-writer.ts), and every read searches each pack: gc --auto consolidates them once
   * there are more than git's gc.autoPackLimit (50), and is a no-op below that — but not a
   * free one: each run is a process spawned from the event loop (milliseconds of it) and a
   * git start-up on a CPU the daemon shares. Under a 32-writer storm on a Lane of thousands of
   * Asks every group commit leaves a pack for gc (past small-packs' merge size), and a run
   * every 10 packs (the default before) was one or two spawns a second, all but one in five
   * of them no-ops: ~160 ms of loop time in a 10 s storm profile (bench/load.ts).
   */
  everyPacks?: number;
  /** At most this often otherwise, when a repository saw writes (default 10 minutes). */
  everyMs?: number;
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
  const packsAt = new Map<string, number>();
  const packsSince = (repo: ZzRepo) =>
    (repo.git?.objects.packsWritten ?? 0) - (packsAt.get(repo.key) ?? 0);
  const running = new Map<string, Promise<void>>();
  const since = new Map<string, number>();
  let closed = false;

  const run = (repo: ZzRepo): void => {
    const gitdir = repo.git?.gitdir;
    if (closed || !gitdir || running.has(repo.key)) return;
    since.set(repo.key, 0);
    packsAt.set(repo.key, repo.git?.objects.packsWritten ?? 0);
    // Merges of small packs delete nothing while this gc runs (gcAuto's smallPacks).
    const p = gcAuto(gitdir, { smallPacks: repo.git?.objects.small })
      .catch((e: unknown) => opts.log(`gc --auto ${repo.key}: ${(e as Error).message}`))
      .finally(() => {
        running.delete(repo.key);
        // Commits that arrived while git was packing count toward the next run.
        if ((since.get(repo.key) ?? 0) >= everyCommits || packsSince(repo) >= everyPacks) run(repo);
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
      run(repo);
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
      for (const repo of repos.values()) if ((since.get(repo.key) ?? 0) > 0) run(repo);
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
