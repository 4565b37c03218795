// Every bound on a stored field, in one place. Tool inputs refuse values past these (400 naming
// the field) and the op schemas refuse them on read, so nothing unbounded reaches a ref, a
// response or the daemon's memory. Stored bounds are looser than input bounds where the server
// composes a field from several inputs (a follow-up's title and body).

export const LIMITS = {
  /** Lane and Ask titles, in characters. */
  title: 300,
  /** A Lane's description, in characters. */
  description: 20_000,
  /** An Ask's body, in UTF-8 bytes. */
  body: 64 * 1024,
  /** An answer's result, in UTF-8 bytes. */
  result: 256 * 1024,
  /** An Ask's payload, as JSON, in UTF-8 bytes. */
  payload: 64 * 1024,
  /** A changeset's commit message, in characters. */
  commitMessage: 20_000,
  /** A repository path, in UTF-8 bytes. */
  path: 4096,
  /** Files in one changeset. */
  changesetFiles: 2_000,
  /**
   * depends_on, maintainers, related_lanes, kinds filters; a Lane's coordinators and
   * maintainers and its related_lanes as lane_grant and lane_add_related grow them, which
   * refuse the next both locally and in the guarded fold (lane-guards.ts), from anywhere.
   */
  list: 100,
  /** Custom Ask kinds on a Lane or the repo (lane_propose's input; the op schemas, stored). */
  askKinds: 100,
  /** A cancel or close reason, in characters. */
  reason: 2_000,
  /**
   * Ask ids one ask_claim_next may pass over (`exclude`): the Asks a worker gave back and waits
   * to retry. Not stored, only hashed into the idempotency key's request; a worker keeps at most
   * this many waiting (src/work/worker.ts), so its list always fits.
   */
  claimExclude: 100,
  /**
   * The longest lease one ask_claim may take, in seconds (7 days). The guarded fold derives a
   * claim's end from its time and min(lease_seconds, this) and refuses a claim whose recorded
   * end says otherwise (`lease_mismatch`, lane-guards.ts), from anywhere.
   */
  leaseSeconds: 7 * 24 * 3600,
  /**
   * Signing keys one actor may have allowed (key_add refuses the next): key_list answers each
   * actor's keys whole, and an actor may add its own. Held in the config's guarded fold too
   * (config-state.ts): a key_add from anywhere (another clone, an older zz) past it changes
   * nothing and is listed as refused (`keys_per_actor`), alike on every replica. Hazard: a
   * page of key_list is up to 500 actors × this many keys of up to 8 KiB each.
   */
  keysPerActor: 100,
  /**
   * Rungs one ladder_write_rung may write (its input refuses more). The Ladder's guarded fold
   * (core/ladder/ladder-guards.ts) refuses a write of more from anywhere (`rungs_per_op`).
   */
  rungsPerWrite: 200,
  /**
   * Rungs the Ladder may hold. zz's own build writes about 2,200; a 100,000-file monorepo
   * about 110,000 (its files and folders). A write or build that would pass it is refused
   * locally (payload_too_large) and by the guarded fold from anywhere (`ladder_full`): the
   * fold holds every rung in memory. Also the most one ladder_build may upsert or remove.
   */
  ladderRungs: 500_000,
  /**
   * Asks one Lane holds, whoever posted them (ask_post, and the follow-ups and resolve_conflict
   * Asks the workflow posts): a Lane's state is folded and held whole in memory, and no Ask is
   * ever deleted. Far above real use (the benches make Lanes of 5,000 and 8,000). Held in the
   * guarded fold too (lane-guards.ts, `lane_full`): ops from anywhere past it change nothing.
   */
  asksPerLane: 100_000,
  /**
   * Lanes one repository holds (lane_propose refuses the next). Local only: each Lane is its
   * own ref and fold, and no one order of Lanes made on several machines exists to keep a
   * deterministic subset of, so sync does not hold other machines' Lanes to it.
   */
  lanesPerRepo: 10_000,
  /**
   * Owners of a repository (role_grant refuses the next), locally and in the config's guarded
   * fold (config-state.ts, `owners_full`): refs/zz/config is read whole on every check.
   */
  owners: 100,
} as const;

/**
 * Stored text may be longer than what one input allows: the server builds follow-up titles
 * ("Review: " + title) and bodies (work body + review) from inputs. Reads refuse only what no
 * zz ever wrote.
 */
export const STORED_LIMITS = {
  title: 4 * LIMITS.title,
  description: LIMITS.description,
  body: LIMITS.body + LIMITS.result + 4 * 1024,
  result: LIMITS.result + 4 * 1024,
  payload: LIMITS.payload + 4 * 1024,
  commitMessage: LIMITS.commitMessage,
  path: LIMITS.path,
  changesetFiles: LIMITS.changesetFiles,
  list: 10 * LIMITS.list,
  // Bounded on read only since the change that bounded lane_propose's input (which took any
  // number before): looser, so a Lane an older zz stored with a few more still reads.
  askKinds: 10 * LIMITS.askKinds,
  reason: LIMITS.reason,
} as const;

/** Pages of lists: default and largest page, and the most one page may hold. */
export const PAGE = {
  defaultLimit: 100,
  maxLimit: 1_000,
  /**
   * A page stops early once its items (Asks, history entries, rungs of ladder_tree) reach about
   * this many bytes of JSON.
   */
  maxBytes: 4 * 1024 * 1024,
  /**
   * Most entries of a list of problems an answer names (unreadable Lane refs, quarantined refs),
   * the rest only counted (`corrupt_more`, `quarantined_more`): a remote that brings 100,000 bad
   * refs must not make every lane_list page megabytes long. 50 say what is wrong; fixing them
   * shows the next.
   */
  maxListedProblems: 50,
} as const;

/**
 * What one client may hold open in the daemon. A person counts with their agents
 * (`alice@x[claude]` is alice@x): sixteen agent names of one person filled the per-actor
 * total. Past a bound, a 429 that says which.
 */
export const HELD = {
  /** Event streams (GET …/events) open per person and repository, and in all. */
  streamsPerPerson: 64,
  streams: 512,
  /**
   * lane_events calls waiting (wait_ms) at once per person and repository, as many as streams: a waiting
   * call wakes on every commit and re-reads the Lanes (300 open from one token kept an idle
   * daemon at ~15% of a core when each also re-read every 250 ms).
   */
  longPollsPerPerson: 64,
  /**
   * Bytes an event stream's client may fall behind by before it is dropped (it reconnects
   * and resumes by its Last-Event-ID). One Ladder write of up to ~8 MiB is one chunk to every
   * stream: the 1,000 chunks once allowed let one client that stopped reading hold ~8 GB.
   */
  streamBacklogBytes: 8 * 1024 * 1024,
} as const;

export const utf8Bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

/**
 * `s` cut to at most `maxBytes` bytes of UTF-8, at a character boundary. Hazard: a limit the
 * daemon checks in bytes is not met by `s.slice(0, n)`: n UTF-16 units of CJK text are 3n bytes.
 */
export function clipUtf8(s: string, maxBytes: number): string {
  // Fast path: at most 3 bytes per UTF-16 unit (a surrogate pair is 4 bytes for 2 units).
  if (s.length * 3 <= maxBytes) return s;
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= maxBytes) return s;
  let end = maxBytes;
  // Back off continuation bytes (10xxxxxx) so no character is split.
  while (end > 0 && (buf[end]! & 0xc0) === 0x80) end--;
  return buf.subarray(0, end).toString('utf8');
}
