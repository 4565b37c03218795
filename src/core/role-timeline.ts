import type { ConfigDoc } from '../schema/config.js';
import type { ConfigOp } from '../schema/config-ops.js';
import { configCodec } from './config-state.js';
import type { RoleSource } from './lane-state.js';

// The repository's roles over time, for the guarded fold of Lane ops (DESIGN §7: "roles as they
// stood at that point of the log").
//
// The rule. A Lane op is judged against refs/zz/config folded (in the config's own publication
// order) over exactly the config ops whose recorded time is at or before the Lane op's recorded
// time. An op recorded before every config op is judged against the config its repo_init made
// (nothing precedes the init). Why time: the Lane and the config are two logs with no common
// order, and an op does not record which config it was decided against — and if it did, a
// replica that never saw a revocation would name the old config and keep writing as if still
// entitled, which is exactly what must not count. Recorded times are in every op, identical on
// every replica, so every replica reaches the same verdict from the same two histories.
//
// Hazards. (1) Clock skew: a replica whose clock runs behind a grant's clock acts "before" the
// grant and is refused until its clock passes it; one running ahead of a revocation's clock is
// refused sooner. (2) Times are claims: a writer can back-date its ops (a signature proves who,
// not when). Within one Lane, roles (coordinators, maintainers) are judged in publication order
// instead, which neither hazard touches. (3) The verdict can change when a config op with an
// earlier time arrives later (an offline owner's revocation): what an op was granted is then
// re-decided on every replica alike, as the revocation says.

const NO_ROLES: RoleSource = { at: () => null, now: () => null };

/** `ops`: refs/zz/config's ops in publication order (its Entity's log). */
export function roleTimeline(ops: readonly ConfigOp[]): RoleSource {
  if (ops.length === 0) return NO_ROLES;
  const times = ops.map((o) => Date.parse(o.time));
  // The config after each prefix of the log, and the first one that has a config at all.
  const states: Array<ConfigDoc | null> = [];
  const s = configCodec.empty();
  for (const op of ops) {
    configCodec.apply(s, op);
    states.push(s.config);
  }
  const initial = states.find((c) => c !== null) ?? null;
  const sorted = times.every((t, i) => i === 0 || times[i - 1]! <= t);
  const cache = new Map<string, ConfigDoc | null>();
  const at = (time: string): ConfigDoc | null => {
    const t = Date.parse(time);
    if (Number.isNaN(t)) return initial;
    if (sorted) {
      // The last prefix whose op is at or before t (binary search: Lanes hold thousands of ops).
      let lo = 0;
      let hi = times.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (times[mid]! <= t) lo = mid + 1;
        else hi = mid;
      }
      return (lo === 0 ? null : states[lo - 1]) ?? initial;
    }
    // Times out of publication order (an offline replica's ops merged in): fold the subset.
    const hit = cache.get(time);
    if (hit !== undefined) return hit;
    const sub = configCodec.empty();
    for (let i = 0; i < ops.length; i++) if (times[i]! <= t) configCodec.apply(sub, ops[i]!);
    const out = sub.config ?? initial;
    if (cache.size < 4096) cache.set(time, out);
    return out;
  };
  const now = states[states.length - 1] ?? initial;
  return { at, now: () => now };
}
