import { syncCodecFor } from './codecs.js';
import { datedAhead, type DatedAhead } from './history-checks.js';
import { CONFIG_REF } from './roles-at.js';
import type { AuthChecker } from './authenticity.js';
import type { SyncLocal } from './ports.js';
import { parseZzCommit, type Invalid } from './validate.js';

// The push gate (DESIGN §7, "held back"): what a push of `mine` over the remote's `theirs`
// would bring, checked as the remote's next reader will check it on import. Shared by the
// sync round (engine.ts: a ref that fails is held back) and `zz sync --drop-held`
// (drop-held.ts: each op it re-applies must pass, and so must the result as a whole), so the
// two can never disagree on what another clone refuses.

/**
 * Why the commits `mine` holds beyond `theirs` (null: the remote lacks the ref) would be
 * refused on import, or null when they pass (or carry no ops, or `ref` is no entity).
 */
export async function pushGateProblem(
  local: SyncLocal,
  ref: string,
  mine: string,
  theirs: string | null,
  checker: AuthChecker | undefined,
  nowMs: number,
): Promise<Invalid | DatedAhead | null> {
  if (!syncCodecFor(ref)) return null;
  const out = (await local.commits([mine], theirs === null ? [] : [theirs])).map((c) =>
    parseZzCommit(c, ref),
  );
  const withOps = new Set(out.filter((c) => c.ops.length > 0).map((c) => c.revision));
  if (withOps.size === 0) return null;
  // A clock set right after it ran ahead: what was dated by it waits until it is due.
  // A hold that clears by itself (`until`) only when nothing else holds the ref: a problem
  // that needs someone to act wins, or `zz sync` would say "nothing else to do" and exit 0
  // (and --drop-held refuse) for a ref that stays stuck once the clock catches up.
  const dated = datedAhead(ref, out, withOps, nowMs);
  if (!checker) return dated;
  // The config's owner-level ops and a Lane's lane_add_related are judged against the whole
  // log before them; signatures need only the outgoing commits.
  const whole =
    ref === CONFIG_REF || out.some((c) => c.ops.some((o) => o.op === 'lane_add_related'));
  const history = whole ? (await local.commits([mine], [])).map((c) => parseZzCommit(c, ref)) : out;
  return (await checker.check(ref, history, withOps, true)) ?? dated;
}

/** A gate problem that passes by itself once this machine's clock reaches an op's date. */
export const isDatedProblem = (reason: string): boolean => / is dated /.test(reason);
