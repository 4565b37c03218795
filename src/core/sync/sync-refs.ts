import { RefCasError, type PushUpdate, type RefUpdate } from '../../git/index.js';
import type { SyncLocal } from './ports.js';

// The ref namespaces a sync keeps per remote, and how the tracking and confirmed refs follow a
// push. LOCAL_PREFIX is the clone's own state; the others are per remote name.

export const LOCAL_PREFIX = 'refs/zz/';
export const trackingPrefix = (remote: string): string => `refs/zz-remotes/${remote}/`;
export const confirmedPrefix = (remote: string): string => `refs/zz-sync/${remote}/`;
export const quarantinePrefix = (remote: string): string => `refs/zz-quarantine/${remote}/`;

/** The refs under `prefix`, renamed to their local names (refs/zz/…). */
export async function strip(
  p: Promise<Map<string, string>>,
  prefix: string,
): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const [ref, oid] of await p) out.set(LOCAL_PREFIX + ref.slice(prefix.length), oid);
  return out;
}

/** After a push: the tracking and confirmed refs follow (a later fetch would anyway). */
export async function confirmPushed(
  local: SyncLocal,
  remoteName: string,
  pushes: readonly PushUpdate[],
): Promise<void> {
  const tPrefix = trackingPrefix(remoteName);
  const cPrefix = confirmedPrefix(remoteName);
  const [tracking, confirmed] = await Promise.all([
    local.listRefs(tPrefix),
    local.listRefs(cPrefix),
  ]);
  const updates: RefUpdate[] = [];
  for (const p of pushes) {
    const rest = p.ref.slice(LOCAL_PREFIX.length);
    for (const [prefix, map] of [
      [tPrefix, tracking],
      [cPrefix, confirmed],
    ] as const) {
      const cur = map.get(prefix + rest) ?? null;
      if (cur !== p.next) updates.push({ ref: prefix + rest, old: cur, new: p.next });
    }
  }
  try {
    await local.update(updates);
  } catch (e) {
    // Something fetched meanwhile; the next round reads the truth from the remote again.
    if (!(e instanceof RefCasError)) throw e;
  }
}
