import { CONFIG_REF } from './roles-at.js';
import type { SyncLocal } from './ports.js';

// Whether a sync round judges again the refs it holds quarantined whose remote tip did not
// move (engine.ts skips those otherwise: 20,000 pushed junk refs were re-walked every round).

/**
 * How often a clone judges again the refs it holds quarantined whose remote tip has not moved
 * (a verdict can change without it: an op dated ahead of this clock passes once the clock
 * reaches it). A move of refs/zz/config (roles, keys) has them judged again at once.
 */
const REJUDGE_QUARANTINED_MS = 15 * 60_000;
/** Per clone and remote: when its unchanged quarantined refs were last judged again. */
const lastRejudged = new Map<string, number>();

export function rejudgeQuarantined(
  local: SyncLocal,
  remoteName: string,
  locals: ReadonlyMap<string, string>,
  remotes: ReadonlyMap<string, string>,
  nowMs: number,
): boolean {
  if ((locals.get(CONFIG_REF) ?? null) !== (remotes.get(CONFIG_REF) ?? null)) return true;
  const key = `${local.replica ?? ''}\0${remoteName}`;
  const last = lastRejudged.get(key);
  // Not on a process's first round: a `zz sync` from the shell is always one, and paid the
  // whole judgement every time.
  if (last === undefined || nowMs - last < REJUDGE_QUARANTINED_MS) {
    if (last === undefined) lastRejudged.set(key, nowMs);
    return false;
  }
  lastRejudged.set(key, nowMs);
  return true;
}
