import { runGit } from './native-git.js';

// Which commits a rebase (or a deleted branch) left behind: `zz ladder build` removes the rungs
// anchored to them (DESIGN §6). The hazard is deleting what is merely not known here yet, so
// the answer errs towards keeping:
// - a commit this repository does not hold (synced from another machine's Ladder and not
//   fetched yet, a single-branch clone) is never "dropped": absence proves nothing;
// - a shallow clone answers nothing at all: its history is cut at the boundary, so commits it
//   still holds from before it was made shallow would pass for unreachable;
// - reachability counts every ref (`--all`: branches, tags, remote-tracking refs, zz's own
//   changeset refs, a stash) and every worktree's HEAD (a detached rebase in progress). Only
//   reflogs are left out, or nothing would end for 90 days.

const OID_ANY = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export type DroppedCommits =
  | { dropped: Set<string> }
  /** Not known: a shallow clone, or a history git could not walk (an ancestor missing). */
  | { dropped: null; reason: 'shallow' | 'incomplete' };

/**
 * Of `oids`, the commits this repository holds that no ref and no worktree's HEAD reaches.
 * No git call without candidates; else a shallow check and an object check side by side, then
 * one rev-list walk, whatever the count.
 */
export async function droppedCommits(
  gitdir: string,
  oids: Iterable<string>,
): Promise<DroppedCommits> {
  const want = [...new Set([...oids].filter((o) => OID_ANY.test(o)))];
  if (want.length === 0) return { dropped: new Set() };
  // Replacement refs are ignored: they rewrite the view, not what the refs hold.
  const base = ['--no-replace-objects', '--git-dir', gitdir];
  const [shallow, check] = await Promise.all([
    runGit([...base, 'rev-parse', '--is-shallow-repository'], { cwd: gitdir }),
    // Which of them are commits held here. GIT_NO_LAZY_FETCH: a partial clone must not go to
    // its promisor remote for a commit it lacks (a missing one is kept anyway).
    runGit([...base, 'cat-file', '--batch-check=%(objectname) %(objecttype)'], {
      cwd: gitdir,
      input: want.join('\n') + '\n',
      env: { GIT_NO_LAZY_FETCH: '1' },
    }),
  ]);
  if (shallow.stdout.toString('utf8').trim() === 'true')
    return { dropped: null, reason: 'shallow' };
  const held: string[] = [];
  for (const line of check.stdout.toString('utf8').split('\n')) {
    const [oid, type] = line.split(' ');
    if (oid && type === 'commit' && OID_ANY.test(oid)) held.push(oid);
  }
  if (held.length === 0) return { dropped: new Set() };
  // Commits reachable from the held ones and from no ref: the walk stops where the histories
  // meet. A `--not` on the command line before --stdin does not negate what stdin gives (git's
  // documented rule; 2.39 already behaved so).
  // A held commit whose history is not all here (an ancestor missing: a commit fetched alone)
  // stops the walk: then nothing is known, and nothing pruned, rather than the build failing.
  const r = await runGit([...base, 'rev-list', '--not', '--all', '--stdin', '--'], {
    cwd: gitdir,
    input: held.join('\n') + '\n',
    okCodes: [128],
  });
  if (r.code !== 0) return { dropped: null, reason: 'incomplete' };
  const unreachable = new Set(r.stdout.toString('utf8').split('\n'));
  return { dropped: new Set(held.filter((o) => unreachable.has(o))) };
}
