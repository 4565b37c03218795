import { runGit } from './native-git.js';
import type { SmallPacks } from './small-packs.js';

// Housekeeping of the user's repository. zz writes every op as loose objects; left alone a busy
// daemon leaves tens of thousands of them (13,000 after one load test), and every git command
// slows down. `git gc --auto` packs them only once git's own threshold is passed (gc.auto,
// 6,700 loose objects by default) and is a no-op otherwise.
//
// Hazard: never `--prune=now`. zz (and git) write an object before the ref that reaches it; an
// immediate prune would delete objects a concurrent writer has written but not yet referenced.
// gc --auto prunes only unreachable objects older than gc.pruneExpire (two weeks).

/**
 * Runs `git gc --auto --quiet` in the foreground (never detached: the caller waits for it).
 * With `smallPacks` (this process's writer of the repository), its merges delete no pack while
 * the gc runs: a pack deleted under gc's pack-objects fails the run (small-packs.ts,
 * holdDeletes).
 */
export async function gcAuto(
  gitdir: string,
  opts: { timeoutMs?: number; smallPacks?: SmallPacks } = {},
): Promise<void> {
  const release = opts.smallPacks ? await opts.smallPacks.holdDeletes() : () => {};
  try {
    await runGit(['--git-dir', gitdir, '-c', 'gc.autoDetach=false', 'gc', '--auto', '--quiet'], {
      cwd: gitdir,
      timeoutMs: opts.timeoutMs ?? 10 * 60_000,
    });
  } finally {
    release();
  }
}

export interface ObjectCounts {
  /** Loose objects. */
  count: number;
  /** Objects in packs. */
  inPack: number;
  packs: number;
}

/** `git count-objects -v`, parsed. */
export async function countObjects(gitdir: string): Promise<ObjectCounts> {
  const r = await runGit(['--git-dir', gitdir, 'count-objects', '-v'], { cwd: gitdir });
  const v = new Map<string, number>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const m = /^([a-z-]+): (\d+)$/.exec(line.trim());
    if (m) v.set(m[1]!, Number(m[2]));
  }
  return { count: v.get('count') ?? 0, inPack: v.get('in-pack') ?? 0, packs: v.get('packs') ?? 0 };
}
