import { ZzError } from '../../errors.js';
import { publicationOrder } from '../../store/index.js';
import { configCodec } from '../config-state.js';
import type { SyncLocal } from './ports.js';
import { parseZzCommit } from './validate.js';

// Which project a remote's zz state belongs to, checked before sync moves anything (DESIGN §7).
// Singleton refs start from one deterministic root commit so that two `zz init`s of the same
// project share history; the price is that two *different* projects' configs merge just as
// well, so a remote URL that names another zz project's repository would have its config,
// Lanes and Ladder merged into ours and ours pushed into it. `zz init` records the root
// commits of the checkout's history in refs/zz/config (repo_init.project_roots, or
// repo_add_roots later); when both configs name roots and share none, the remote is refused
// before any local ref moves and before anything is pushed, unless the person says
// --allow-unrelated (git's word for the same decision). When either side names none (a
// config made before this check, or in a shallow clone) nothing can be told, and sync goes on
// as before.
//
// Hazards: the remote's config is untrusted. Its history is read like any fetched history and
// only ops that parse against their schema count (an oversized or malformed project_roots
// does not parse; the engine then quarantines that config as it would any other bad op).
// Signatures are not checked here: a forged root list can only make sync refuse, and the
// person can see why and override it.

const CONFIG_REF = 'refs/zz/config';
const trackingConfig = (remote: string): string => `refs/zz-remotes/${remote}/config`;

export interface UnrelatedProject {
  remote: string;
  local_roots: readonly string[];
  remote_roots: readonly string[];
}

/** The roots a config's history names at `tip` (what the config fold records). */
export async function configRootsAt(
  commits: SyncLocal['commits'],
  tip: string,
): Promise<readonly string[]> {
  const history = (await commits([tip], [])).map((c) => parseZzCommit(c, CONFIG_REF));
  const s = configCodec.empty();
  for (const { op } of publicationOrder(history, tip)) {
    const p = configCodec.parse(op);
    if (p.ok) configCodec.apply(s, p.op);
  }
  return s.roots;
}

// Commits never change, so the answer for a pair of config tips never does: a daemon asked
// for repo_state every few seconds folds each pair once.
const memo = new Map<string, Promise<UnrelatedProject | null>>();
const MEMO_MAX = 64;

/**
 * Whether the config fetched from `remote` (refs/zz-remotes/<remote>/config) belongs to
 * another project than ours: both name root commits and share none. Null when it does not,
 * or when that cannot be told. A remote history that cannot be read is left to the engine,
 * which meets it again and reports it as it always has.
 */
export async function unrelatedRemote(
  local: Pick<SyncLocal, 'listRefs' | 'commits'>,
  remote: string,
  /**
   * Our roots when we have no config yet (`zz init` knows the checkout's): a fresh clone
   * whose remote names another project does not adopt that project's state.
   */
  checkoutRoots?: readonly string[] | null,
): Promise<UnrelatedProject | null> {
  const [mine, theirs] = await Promise.all([
    local.listRefs(CONFIG_REF).then((m) => m.get(CONFIG_REF) ?? null),
    local.listRefs(trackingConfig(remote)).then((m) => m.get(trackingConfig(remote)) ?? null),
  ]);
  const ours = mine ?? (checkoutRoots?.length ? checkoutRoots : null);
  if (ours === null || theirs === null || mine === theirs) return null;
  const key = `${remote} ${typeof ours === 'string' ? ours : ours.join(',')} ${theirs}`;
  let answer = memo.get(key);
  if (!answer) {
    answer = compareRoots(local, remote, ours, theirs);
    memo.set(key, answer);
    answer.catch(() => memo.delete(key));
    if (memo.size > MEMO_MAX) memo.delete(memo.keys().next().value!);
  }
  return answer;
}

/** `ours`: our config's tip, or the roots themselves. */
async function compareRoots(
  local: Pick<SyncLocal, 'commits'>,
  remote: string,
  ours: string | readonly string[],
  theirs: string,
): Promise<UnrelatedProject | null> {
  const commits = local.commits.bind(local);
  const [localRoots, remoteRoots] = await Promise.all([
    typeof ours === 'string' ? configRootsAt(commits, ours) : ours,
    configRootsAt(commits, theirs).catch(() => [] as readonly string[]),
  ]);
  if (localRoots.length === 0 || remoteRoots.length === 0) return null;
  const known = new Set(localRoots);
  if (remoteRoots.some((r) => known.has(r))) return null;
  return { remote, local_roots: localRoots, remote_roots: remoteRoots };
}

const short = (roots: readonly string[]): string => {
  const shown = roots.slice(0, 4).map((r) => r.slice(0, 10));
  return shown.join(', ') + (roots.length > shown.length ? `, … (${roots.length})` : '');
};

/** What the person is told: which remote, both projects' roots, what to check, the override. */
export function unrelatedMessage(u: UnrelatedProject): string {
  return (
    `refused to sync with ${u.remote}: its zz state belongs to another project (its history ` +
    `starts at ${short(u.remote_roots)}, this one's at ${short(u.local_roots)}; no root commit ` +
    `in common). Nothing was merged or pushed. Check the remote's URL ` +
    `(git remote get-url ${u.remote}); if they are one project (history rewritten) or you mean ` +
    `to merge the two, run: zz sync ${u.remote} --allow-unrelated`
  );
}

export function unrelatedError(u: UnrelatedProject): ZzError {
  return new ZzError('precondition_failed', unrelatedMessage(u), {
    reason: 'unrelated_project',
    ...u,
  });
}
