import { mkdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ZzError } from '../errors.js';
import { readGitConfig } from './git-config.js';
import { runGit } from './native-git.js';
import type { SmallPacks } from './small-packs.js';

// Housekeeping of the user's repository. zz's writes leave packs (one a group commit past 32
// objects) and a few loose objects; left alone, every read searches more packs and every git
// command slows down. Three runs, all through maintain(): a roll-up of the small packs
// (repackGeometric), `git gc --auto` (gcAuto) and, seldom, a full gc that prunes (gcFull); the
// daemon's maintenance says when.
//
// Hazard: never `--prune=now`. zz (and git) write an object before the ref that reaches it; an
// immediate prune would delete objects a concurrent writer has written but not yet referenced.
// gc --auto prunes only unreachable objects older than gc.pruneExpire (two weeks).

/**
 * How much nicer than the daemon its maintenance runs. A roll-up or gc competes for the
 * machine's cores with the requests the daemon serves and with the agents calling it: under a
 * 32-writer storm the git children took ~1 s of CPU in a 4 s window, and two thirds of the
 * daemon's loop stalls of 10 ms or more were spent waiting for a core (bench/load,
 * ZZ_LOAD_TICKS=1). Niced by 10, git gets about a tenth of a contended core against a
 * process at the daemon's priority and all of an idle one; not 19, so that a gc on a machine
 * kept busy for long still finishes (small packs are not deleted while it runs).
 */
const MAINTENANCE_NICE = 10;

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
  await maintain(gitdir, ['-c', 'gc.autoDetach=false', 'gc', '--auto', '--quiet'], opts);
}

/**
 * Rolls the repository's small packs up into fewer, `git repack -d -l --geometric=2` (git ≥
 * 2.32): packs are merged only until each is at least twice the size of the next smaller one,
 * so the large pack that holds the repository's own history is left as it is. What zz's
 * writes leave behind is many small packs (a group commit past 32 objects is one, every one
 * left for gc: objects.ts isLarge); `git gc --auto` answers more than gc.autoPackLimit (50)
 * of them with `repack -A -d`, which walks every object reachable in the repository and
 * writes them all again: 0.49 s of CPU on git-bug's 35,000 objects (42 MiB) to absorb 52
 * packs of two objects, against 0.03 s this way, and a daemon under a writer storm reached
 * that limit every second or two (issue 17). Packs with a `.keep` (zz's in-flight packs,
 * small-packs.ts) are not rolled up; loose objects are, and are deleted only once their pack
 * is in place, as `git gc` does. Nothing unreachable is pruned here: gcFull, seldom, and the
 * user's `git gc` do that.
 *
 * Answers 'off', running nothing, when the user turned automatic gc off (`gc.auto` or
 * `gc.autoPackLimit` set to 0 or less: gc --auto would do nothing either), and 'unsupported'
 * when this git has no `--geometric` or the repository is a partial clone (configSays; the
 * caller falls back to gcAuto).
 */
export async function repackGeometric(
  gitdir: string,
  opts: { timeoutMs?: number; smallPacks?: SmallPacks } = {},
): Promise<'done' | 'off' | 'unsupported'> {
  const says = await configSays(gitdir);
  if (says === 'off' || says === 'unsupported') return says;
  try {
    // --no-write-bitmap-index: a user's repack.writeBitmaps (or pack.writeBitmaps) makes git
    // die on any incremental repack ("Incremental repacks are incompatible with bitmap
    // indexes"); a pack left alone keeps its bitmap, and a full gc of the user's writes one.
    await maintain(
      gitdir,
      ['repack', '-d', '-l', '-q', '--geometric=2', '--no-write-bitmap-index'],
      opts,
    );
    return 'done';
  } catch (e) {
    // git < 2.32: "error: unknown option `geometric=2'", usage, exit 129.
    const d = e instanceof ZzError ? (e.details as { code?: number } | undefined) : undefined;
    if (d?.code === 129) return 'unsupported';
    throw e;
  }
}

/**
 * Runs a full `git gc --quiet`: every reachable object in one pack again, and what is
 * unreachable and older than gc.pruneExpire (two weeks) pruned. The roll-ups keep the packs
 * below gc.autoPackLimit and pack the loose objects, so gc --auto no longer finds work, and
 * the unreachable objects zz leaves (a write that lost its compare-and-swap, a sync's pruned
 * history) were copied from pack to pack for good. It costs what a gc of the whole repository
 * costs, so the daemon runs it seldom (fullGcDue). Answers 'off', running nothing, when the
 * user turned automatic gc off (configSays) or its mark cannot be set.
 */
export async function gcFull(
  gitdir: string,
  opts: { timeoutMs?: number; smallPacks?: SmallPacks } = {},
): Promise<'done' | 'off'> {
  const says = await configSays(gitdir);
  if (says === 'off') return 'off';
  // Marked whatever the outcome: a gc that fails (a corrupt object, a full disk) is tried
  // again the next day, not on every tick of the daemon's 10-minute timer. A mark that cannot
  // be set (another user's file, chattr +i, a read-only mount) would leave it due on every
  // tick: no full gc then ('off': the daemon runs gc --auto as before), rather than one every
  // 10 minutes or, throwing here, no gc of any kind on the timer.
  try {
    markFullGc(gitdir);
  } catch {
    return 'off';
  }
  // Cruft packs (git ≥ 2.37; an older git ignores the key): the recent unreachable objects of
  // the packs rewritten stay in one pack with their times, where without them git writes each
  // out as a loose file until it expires (two weeks), undoing the roll-ups, and past gc.auto
  // (6,700) every gc --auto rewrites the whole repository again. Not in a partial clone
  // (configSays 'unsupported': its promisor packs), where git's default is kept, nor where the
  // user set gc.cruftPacks ('chosen').
  await maintain(gitdir, [...(says === null ? CRUFT : []), 'gc', '--quiet'], {
    ...opts,
    timeoutMs: opts.timeoutMs ?? 60 * 60_000,
  });
  return 'done';
}

const CRUFT = ['-c', 'gc.cruftPacks=true'];

/** When the last full gc ran: the time of this file (made the first time it is asked). */
const fullGcMark = (gitdir: string) => join(gitdir, 'zz', 'last-full-gc');

/**
 * Whether a full gc is due: `everyMs` since the last one, kept on disk so that a daemon
 * restarted more often than that still runs it. The first time zz asks in a repository the
 * mark is made and nothing is due: a new daemon does not start with a gc of the whole
 * repository.
 */
export function fullGcDue(gitdir: string, everyMs: number, now = Date.now()): boolean {
  const at = statSync(fullGcMark(gitdir), { throwIfNoEntry: false })?.mtimeMs;
  if (at === undefined) {
    markFullGc(gitdir);
    return false;
  }
  // A mark more than a period ahead was made while the clock was wrong (a VM that booted with
  // its clock ahead, then synced): due, rather than not before that date comes.
  return now - at >= everyMs || at - now > everyMs;
}

function markFullGc(gitdir: string): void {
  const mark = fullGcMark(gitdir);
  mkdirSync(dirname(mark), { recursive: true });
  const now = new Date();
  try {
    utimesSync(mark, now, now);
  } catch {
    writeFileSync(mark, '');
  }
}

/**
 * What the repository's config says of the roll-up: 'off' when `gc.auto` or `gc.autoPackLimit`
 * is 0 or less (git's gc --auto does nothing then: need_to_gc, too_many_packs), 'unsupported'
 * when a promisor remote is configured (a partial clone: git 2.39, and later ones before a
 * recent fix, dies in the roll-up every time, "cannot use internal rev list with
 * --stdin-packs"), else null.
 */
async function configSays(gitdir: string): Promise<'off' | 'unsupported' | 'chosen' | null> {
  // From the process's cached reading of git config (git-config.ts: re-read when any of its
  // files changed, checked with a few stats; its git runs started off the loop, as the
  // roll-up's: spawn-thread.ts): a `git config` spawn before every roll-up held
  // the event loop 7–15 ms while the child forked and exec'd on this 2-core VM (more under
  // load), and a roll-up runs every 51 packs, every second or two under a writer storm.
  // Keys come lowercased, each with its last value (the one git uses, as for `git config --get`);
  // a key set and not read here leaves git's defaults (gc.auto 6,700, gc.autoPackLimit 50).
  const last = new Map<string, string>();
  const keys =
    /^(gc\.(auto|autopacklimit|cruftpacks)|remote\..+\.promisor|extensions\.partialclone)$/;
  for (const [key, value] of (await readGitConfig(gitdir, undefined, true)).entries()) {
    if (keys.test(key)) last.set(key, value.trim());
  }
  // git's integers: an optional sign, digits, and a unit (k, m, g); anything else fails git's
  // own gc --auto and is left to it.
  const atMostZero = (v: string | undefined) =>
    v !== undefined && /^[-+]?\d+[kmg]?$/i.test(v) && Number.parseInt(v, 10) <= 0;
  if (atMostZero(last.get('gc.auto')) || atMostZero(last.get('gc.autopacklimit'))) return 'off';
  for (const [key, value] of last) {
    if (key === 'extensions.partialclone' && value !== '') return 'unsupported';
    if (key.endsWith('.promisor') && !/^(false|no|off|0)$/i.test(value)) return 'unsupported';
  }
  // The user chose about cruft packs: the full gc takes their choice, not CRUFT's.
  return last.has('gc.cruftpacks') ? 'chosen' : null;
}

/**
 * One maintenance run of git on the repository: niced (MAINTENANCE_NICE), in the foreground,
 * 10 minutes at most unless told, and with `smallPacks` (this process's writer) deleting no
 * pack meanwhile: a pack deleted under git's pack-objects fails the run (small-packs.ts,
 * holdDeletes).
 */
async function maintain(
  gitdir: string,
  args: readonly string[],
  opts: { timeoutMs?: number; smallPacks?: SmallPacks },
): Promise<void> {
  const release = opts.smallPacks ? await opts.smallPacks.holdDeletes() : () => {};
  try {
    await runGit(['--git-dir', gitdir, ...args], {
      cwd: gitdir,
      timeoutMs: opts.timeoutMs ?? 10 * 60_000,
      nice: MAINTENANCE_NICE,
      // The daemon's requests go on while the child starts (spawn-thread.ts).
      offLoop: true,
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
