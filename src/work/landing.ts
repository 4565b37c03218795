import { LANDING_KINDS } from '../core/kinds.js';
import type { CallTool } from './types.js';

// zz work claims only what it can finish. A submit_changeset or resolve_conflict Ask is finished
// by commit_changeset, which the daemon takes only from a coordinator an owner stands behind
// (core/access.ts isRootedCoordinator). Claimed anyway, the landing was refused 403, the Ask
// given back and claimed again until parked after 8 tries, and nobody who could land it was
// told. So before claiming, the worker reads whom the daemon lets land (the Lane view's
// rooted_coordinators, listed by that same predicate) and, if it is not among them, passes
// over those kinds (ask_claim_next's exclude_kinds), saying once why and what an owner runs.
// Read at the first claim and again after each idle wait, not before every claim (one more
// call per Ask): a grant or revocation is a Lane event, which ends an idle wait, so a grant made
// while the worker runs lets it land once it next waits; one made while it is busy with other
// work waits until then (a revocation meanwhile: the landing is refused and given back, as
// before).

const NONE: ReadonlySet<string> = new Set();

export class LandingCheck {
  /** Whether the last check passed over the landing kinds (said once per change). */
  private passing = false;
  /** The last check's answer, until forget(). */
  private known: ReadonlySet<string> | null = null;

  constructor(
    private readonly call: CallTool,
    private readonly laneId: string,
    private readonly actor: string | null,
    private readonly kinds: readonly string[] | undefined,
  ) {}

  /**
   * The kinds to pass over at this claim: the landing kinds when the daemon would refuse this
   * worker's landing, else none. `onPass` gets the reason when the worker starts passing over.
   */
  async skipKinds(onPass: (kinds: string[], reason: string) => void): Promise<ReadonlySet<string>> {
    this.known ??= await this.check(onPass);
    return this.known;
  }

  /** Reads whom the daemon lets land again at the next claim (after an idle wait). */
  forget(): void {
    this.known = null;
  }

  private async check(
    onPass: (kinds: string[], reason: string) => void,
  ): Promise<ReadonlySet<string>> {
    // Without its actor the worker cannot tell (the daemon then answers a landing as before);
    // with --kinds that name no landing kind there is nothing to pass over and nothing to read.
    if (this.actor === null) return NONE;
    if (this.kinds?.length && !this.kinds.some((k) => LANDING_KINDS.has(k))) return NONE;
    const r = await this.call('lane_get', {
      lane_id: this.laneId,
      asks_limit: 1,
      include_history: false,
    });
    const lane = r.lane as { coordinators?: unknown; rooted_coordinators?: unknown } | undefined;
    const rooted = Array.isArray(lane?.rooted_coordinators) ? lane.rooted_coordinators : [];
    if (rooted.includes(this.actor)) {
      this.passing = false;
      return NONE;
    }
    // Not a coordinator at all: the daemon hands it no landing Ask anyway (their scope), so
    // passing over them changes nothing and there is nothing to say.
    const coordinates = Array.isArray(lane?.coordinators) && lane.coordinators.includes(this.actor);
    if (coordinates && !this.passing) {
      const id = this.laneId;
      onPass(
        [...LANDING_KINDS],
        `${this.actor} coordinates lane ${id} by a role no owner stands behind, so the daemon would refuse its landing (commit_changeset); not claimed. An owner runs \`zz lane grant --lane-id ${id} --grantee '${this.actor}' --role coordinator\` to let this worker land them`,
      );
    }
    this.passing = coordinates;
    return LANDING_KINDS;
  }
}
