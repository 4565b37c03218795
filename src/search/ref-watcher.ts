import { resolve, sep } from 'node:path';
import { watch } from 'chokidar';

// Notices when the Ladder (or anything synced from a remote) may have moved in a clone, so the
// daemon can reindex without a restart: `git fetch`, `git pull`, `git update-ref`, `zz sync`
// and `git pack-refs` all end up touching one of the watched paths. The callback only says
// "look again"; the caller reads the ref and decides whether anything changed.

export interface WatchRefsOptions {
  /** Quiet period before onChange fires; a fetch moves many refs in a burst. */
  debounceMs?: number;
  onError?: (error: unknown, gitdir: string) => void;
}

/** Stops watching; `ready` resolves once the initial scan is done and changes are seen. */
export type RefWatcher = (() => Promise<void>) & { ready: Promise<void> };

/**
 * Watches `<gitdir>/refs/zz/ladder`, `<gitdir>/refs/zz/config` and `<gitdir>/refs/zz/lanes/**`
 * (the Ladder's fold judges rung writes by the roles they hold), `<gitdir>/packed-refs` and
 * `<gitdir>/refs/zz-remotes/**`
 * of each gitdir (the common dir of a clone) and calls onChange(gitdir) after each burst.
 */
export function watchRefs(
  gitdirs: readonly string[],
  onChange: (gitdir: string) => void,
  opts: WatchRefsOptions = {},
): RefWatcher {
  const debounceMs = opts.debounceMs ?? 150;
  const roots = [...new Set(gitdirs.map((g) => resolve(g)))];
  const timers = new Map<string, NodeJS.Timeout>();
  let closed = false;

  const ownerOf = (p: string): string | undefined =>
    roots.find((r) => p === r || p.startsWith(r + sep));

  // Paths below a gitdir that matter, and the directories that lead to them. Everything else
  // (objects/, logs/, the index, other refs) is not even watched: object stores are huge.
  const relevant = (p: string): boolean => {
    const root = ownerOf(p);
    if (root === undefined) return false;
    const rel = p
      .slice(root.length + 1)
      .split(sep)
      .join('/');
    if (
      rel === '' ||
      rel === 'packed-refs' ||
      rel === 'refs' ||
      rel === 'refs/zz' ||
      rel === 'refs/zz/ladder' ||
      rel === 'refs/zz/config'
    )
      return true;
    // The Lanes: the Ladder's fold judges rungs by their coordinator histories (a grant or a
    // revoke arriving by sync moves a Lane ref, neither the ladder's nor the config's).
    if (rel === 'refs/zz/lanes' || rel.startsWith('refs/zz/lanes/')) return true;
    return rel === 'refs/zz-remotes' || rel.startsWith('refs/zz-remotes/');
  };

  const fire = (root: string) => {
    if (closed) return;
    const t = timers.get(root);
    if (t) clearTimeout(t);
    timers.set(
      root,
      setTimeout(() => {
        timers.delete(root);
        if (!closed) onChange(root);
      }, debounceMs),
    );
  };

  const watcher = watch(roots, {
    ignoreInitial: true,
    depth: 8,
    ignored: (p: string) => !relevant(resolve(p)),
  });
  watcher.on('all', (_event, p) => {
    const abs = resolve(p);
    // A lock file is git mid-update; the rename that follows is the change.
    if (abs.endsWith('.lock')) return;
    const root = ownerOf(abs);
    if (root !== undefined && abs !== root && relevant(abs)) fire(root);
  });
  watcher.on('error', (e) => {
    opts.onError?.(e, roots[0] ?? '');
  });
  const ready = new Promise<void>((res) => watcher.once('ready', () => res()));

  const close = async () => {
    closed = true;
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
    await watcher.close();
  };
  return Object.assign(close, { ready });
}
