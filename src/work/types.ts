import type { Model, Usage } from '../models/index.js';

// What the worker needs from the world, injected: a way to call tools (the daemon over HTTP,
// or in-process), a model, an optional local sandbox for --test-cmd, and a sink for events.

export type CallTool = (
  tool: string,
  args: Record<string, unknown>,
) => Promise<Record<string, unknown>>;

/** The Ask as tools return it (DESIGN §3 shape; other fields may be present). */
export interface AskView {
  ask_id: string;
  lane_id: string;
  kind: string;
  title: string;
  body: string;
  priority: number;
  state: string;
  holder: string | null;
  lease_expires_at: string | null;
  payload: Record<string, unknown>;
  answer: { outcome: string; result: string | null; changeset_id: string | null } | null;
  posted_by?: string;
  /** The Ask this one follows (a server follow-up names the answer that made it). */
  origin?: { ask_id: string; reason: string } | null;
}

export interface FileChange {
  path: string;
  content: string | null;
}

export interface TestRun {
  ok: boolean;
  exit_code: number | null;
  timed_out: boolean;
  /** The tail of stdout and stderr, bounded, for the model to read. */
  output: string;
}

/** Runs --test-cmd against base + files on this machine (run_in_sandbox). */
export interface Sandbox {
  test(base: string, message: string, files: FileChange[], signal: AbortSignal): Promise<TestRun>;
  close(): void;
}

/** Who closed a Lane, when, and why ('' when no reason was given): ask_claim_next's `lane_closed`. */
export interface LaneClosure {
  by: string;
  at: string;
  reason: string;
}

export type WorkEvent =
  | { type: 'start'; lane_id: string; actor: string | null; model: string; kinds: string[] | null }
  | { type: 'idle'; lane_id: string }
  | {
      type: 'claimed';
      ask_id: string;
      kind: string;
      title: string;
      lease_expires_at: string | null;
    }
  | { type: 'step'; ask_id: string; step: string; detail?: string }
  | { type: 'tool'; ask_id: string; tool: string; ok: boolean; detail?: string }
  | { type: 'model_retry'; attempt: number; delay_ms: number; reason: string }
  | {
      type: 'answered';
      ask_id: string;
      outcome: string;
      changeset_id: string | null;
      follow_ups: { ask_id: string; kind: string }[];
      ms: number;
    }
  | { type: 'released'; ask_id: string; reason: string }
  /** An Ask given back waits `ms` before this worker claims it again (other work goes on). */
  | { type: 'backoff'; ask_id: string; ms: number; failures: number; parked: boolean }
  | { type: 'error'; ask_id: string | null; message: string }
  /** Asks of these kinds are not claimed: the daemon would refuse this worker their landing. */
  | { type: 'passing_over'; lane_id: string; kinds: string[]; reason: string }
  /** The Lane is closed: it hands out no new work, so the worker stops (after the Ask in hand). */
  | ({ type: 'closed'; lane_id: string } & LaneClosure)
  | { type: 'done'; asks: number; answered: number; released: number; usage: Usage };

export interface WorkOptions {
  call: CallTool;
  model: Model;
  laneId: string;
  /** The repository worked on (owner/name): Ladder searches are confined to it. */
  repo?: string;
  /** The actor the token acts as (from repo_state), for prompts and output. */
  actor: string | null;
  kinds?: string[];
  /** Secret values (API keys in the environment) kept out of every text the worker stores. */
  secrets?: readonly string[];
  /** Model tokens (input + output, as reported) one Ask may spend; default 500,000. */
  maxTokensPerAsk?: number;
  /** Asks and Lanes one run may post in all (limits.ts); default DEFAULT_MAX_POSTS_PER_RUN. */
  maxPosts?: number;
  /** Turns of the open-ended loop per Ask; default 20. */
  maxTurns?: number;
  once?: boolean;
  sandbox?: Sandbox;
  /** Rounds of test → fix for a work Ask with a sandbox; default 3. */
  testRounds?: number;
  /** Lease asked for on claim and on each renewal; default 300 s, renewed every third. */
  leaseSeconds?: number;
  /**
   * Pause after an Ask is given back, doubled for each one given back in a row (up to 30 s)
   * and reset by an answer; the Ask itself is not claimed again for twice as long, doubled
   * for each time it is given back (up to 5 min), while other Asks are. Default 2 s. Not used
   * with `once`.
   */
  failureBackoffMs?: number;
  /**
   * How long one events long-poll waits before trying to claim again: 1 ms to 60 s (lane_events'
   * bound; runWorker refuses anything else before it starts), default 30 s.
   */
  idleWaitMs?: number;
  signal?: AbortSignal;
  onEvent?: (e: WorkEvent) => void;
}
