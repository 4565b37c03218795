import type { RefUpdate } from '../../git/index.js';
import { CONFIG_REF } from './roles-at.js';
import type { SyncLocal } from './ports.js';

// Whether a sync round judges again the refs it holds quarantined whose remote tip did not
// move (engine.ts skips those otherwise: 20,000 pushed junk refs were re-walked every round).

/**
 * How often a clone judges again the refs it holds quarantined whose remote tip has not moved
 * (a verdict can change without it: an op dated ahead of this clock passes once the clock
 * reaches it). A move of this clone's refs/zz/config (roles, keys) has them judged again at once.
 */
const REJUDGE_QUARANTINED_MS = 15 * 60_000;
/** Per clone and remote: when its unchanged quarantined refs were last judged again. */
const lastRejudged = new Map<string, number>();

/**
 * The config commit this clone's quarantine from `remote` was last judged under, kept as a ref
 * so that a `zz sync` from the shell (every round its process's first) sees a config that moved
 * since, however it moved (a daemon's round, a hook's import). Keyed on the LOCAL config only:
 * comparing with the remote's, which anyone who can push can set to a bogus commit, re-armed
 * the whole judgement every round for whoever pushed the spam too (whole-diff review).
 */
export const judgedRef = (remote: string): string => `refs/zz-judged/${remote}`;

export async function rejudgeQuarantined(
  local: SyncLocal,
  remoteName: string,
  locals: ReadonlyMap<string, string>,
  nowMs: number,
): Promise<{ rejudge: boolean; mark: RefUpdate | null }> {
  const config = locals.get(CONFIG_REF) ?? null;
  // No config here yet: everything is held back for want of one to judge by, and judged whole
  // each round until one is adopted (a fresh clone holds few quarantined refs of its own).
  if (config === null) return { rejudge: true, mark: null };
  const ref = judgedRef(remoteName);
  const judged = (await local.listRefs('refs/zz-judged/')).get(ref) ?? null;
  const key = `${local.replica ?? ''}\0${remoteName}`;
  const last = lastRejudged.get(key);
  if (config !== judged) {
    lastRejudged.set(key, nowMs);
    // Moved with the round's own updates (one transaction): a round that fails judges again.
    return { rejudge: true, mark: { ref, old: judged, new: config } };
  }
  // Otherwise not on a process's first round: a `zz sync` from the shell is always one, and
  // paid the whole judgement every time.
  if (last === undefined || nowMs - last < REJUDGE_QUARANTINED_MS) {
    if (last === undefined) lastRejudged.set(key, nowMs);
    return { rejudge: false, mark: null };
  }
  lastRejudged.set(key, nowMs);
  return { rejudge: true, mark: null };
}
