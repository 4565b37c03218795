import { cmp } from './ask-order.js';
import { firstOf } from './paging.js';
import { readHeldBack, type HeldBack } from './sync/held-back.js';
import { trackingConfigs, unrelatedRemotes } from './sync/run.js';
import { CONFIG_REF, type ZzRepo } from './zz-repo.js';

// The repository's health: what syncing will not bring in (repo_state.quarantined and
// sync_refused) or take out (held_back). None of it is a commit on refs/zz/*, so nothing on the commit stream says
// when it changes — a refused sync, a ref kept aside by a `zz sync` run elsewhere, a `git fetch`
// bringing another project's config — and a dashboard that re-read it only with Lane commits
// showed a warning late or never. watchHealth tells listeners (the events stream) when it
// changes.

export type RepoHealth = {
  /**
   * Values fetched from a remote that failed validation and were kept aside (zz sync): the
   * first PAGE.maxListedProblems by quarantine ref (a hostile remote can bring any number).
   */
  quarantined: Array<{ remote: string; ref: string; commit: string }>;
  /** How many more are kept aside. */
  quarantined_more: number;
  /**
   * Refs of ours the last sync with the authoritative remote did not push, with why: every
   * other clone would refuse what they bring (an unsigned owner-level op, say), and nothing
   * written after it on that ref is pushed either (sync/held-back.ts).
   */
  held_back: HeldBack[];
  /** How many more were held back. */
  held_back_more: number;
  /**
   * Remotes whose zz state belongs to another project (their config names other root
   * commits): sync refuses them until `zz sync <remote> --allow-unrelated`.
   */
  sync_refused: Array<{
    remote: string;
    local_roots: readonly string[];
    remote_roots: readonly string[];
    message: string;
  }>;
};

const QUARANTINE_PREFIX = 'refs/zz-quarantine/';

export async function repoHealth(repo: ZzRepo, initialised: boolean): Promise<RepoHealth> {
  const kept = [...(await repo.store.listRefs(QUARANTINE_PREFIX))].sort(([x], [y]) => cmp(x, y));
  const { shown, more } = firstOf(kept);
  return {
    quarantined: shown.map(([ref, commit]) => {
      const [remote = '', ...rest] = ref.slice(QUARANTINE_PREFIX.length).split('/');
      return { remote, ref: `refs/zz/${rest.join('/')}`, commit };
    }),
    quarantined_more: more,
    ...(await readHeldBack(repo)),
    sync_refused: initialised ? await unrelatedRemotes(repo) : [],
  };
}

/**
 * What health is made of, cheaply: the refs kept aside, the remotes' tracking configs (which
 * decide sync_refused), refs/zz/config (the local roots) and the held-back record (one small
 * file read). Health is worked out
 * again only when this moved.
 */
async function healthRefs(repo: ZzRepo): Promise<string> {
  // Only the remotes' configs: every sync moves their Lane refs, which say nothing of health.
  const [quarantined, configs, config, held] = await Promise.all([
    repo.store.listRefs(QUARANTINE_PREFIX),
    trackingConfigs(repo),
    repo.store.head(CONFIG_REF),
    readHeldBack(repo),
  ]);
  return JSON.stringify([[...quarantined].sort(), configs, config, held]);
}

/** How often a watched repository's health refs are read (a few ref listings, no git process). */
export const HEALTH_WATCH_MS = 2_000;

interface Watch {
  listeners: Set<() => void>;
  timer: NodeJS.Timeout;
}

const watches = new WeakMap<ZzRepo, Watch>();

/**
 * Calls `listener` whenever the repository's health (repoHealth) changes, from whatever wrote
 * it: this process's syncs, another zz process, git itself. One poll per repository, every
 * `everyMs` while anyone listens, whoever asked first setting the pace; returns the unsubscribe
 * function. A change made before the first poll finishes is not reported: read the health
 * after subscribing.
 */
export function watchHealth(
  repo: ZzRepo,
  listener: () => void,
  everyMs: number = HEALTH_WATCH_MS,
): () => void {
  let w = watches.get(repo);
  if (!w) {
    const listeners = new Set<() => void>();
    let refs: string | null = null;
    let health: string | null = null;
    let busy = false;
    const check = async (): Promise<void> => {
      const now = await healthRefs(repo);
      if (now === refs) return;
      const initialised = !!(await repo.config.read()).state.config;
      const was = health;
      health = JSON.stringify(await repoHealth(repo, initialised));
      refs = now;
      if (was !== null && was !== health) for (const l of [...listeners]) l();
    };
    const timer = setInterval(() => {
      if (busy) return;
      busy = true;
      // A read that fails (a ref being rewritten) is tried again on the next tick.
      check()
        .catch(() => {})
        .finally(() => (busy = false));
    }, everyMs);
    timer.unref();
    w = { listeners, timer };
    watches.set(repo, w);
    busy = true;
    check()
      .catch(() => {})
      .finally(() => (busy = false));
  }
  const watch = w;
  watch.listeners.add(listener);
  return () => {
    watch.listeners.delete(listener);
    if (watch.listeners.size > 0 || watches.get(repo) !== watch) return;
    clearInterval(watch.timer);
    watches.delete(repo);
  };
}
