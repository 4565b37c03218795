import { ZzError } from '../errors.js';
import { requireCaller, type Caller } from './access.js';
import { readLane, readLanes } from './lanes.js';
import { historyEntry } from './views.js';
import type { ZzRepo } from './zz-repo.js';

// Events after a cursor. The cursor records how many ops of each Lane the caller has seen, so
// it survives daemon restarts and needs no global sequence; a long-poll waits for the next
// commit (or notices another process's commit on a short re-check) up to wait_ms.

export type LaneEvent = {
  lane_id: string;
  revision: string;
  op: string;
  actor: string;
  time: string;
  lamport: number;
  ask_id: string | null;
  args: Record<string, unknown>;
  out: Record<string, unknown> | null;
};

export type LaneEventsArgs = {
  lane_id?: string;
  cursor?: string;
  wait_ms?: number;
  limit?: number;
};

export type Positions = Record<string, number>;

export function decodeCursor(c: string | undefined): Positions {
  if (c === undefined) return {};
  try {
    const v = JSON.parse(Buffer.from(c, 'base64url').toString('utf8')) as unknown;
    if (
      v &&
      typeof v === 'object' &&
      !Array.isArray(v) &&
      Object.values(v).every((n) => Number.isInteger(n) && (n as number) >= 0)
    ) {
      return v as Positions;
    }
  } catch {
    /* fall through */
  }
  throw new ZzError('invalid_argument', 'cursor is not a cursor this server issued');
}

export const encodeCursor = (p: Positions): string =>
  Buffer.from(JSON.stringify(p)).toString('base64url');

async function collect(repo: ZzRepo, args: LaneEventsArgs, pos: Positions, limit: number) {
  // Across Lanes, a Lane that cannot be read (reported by lane_list and repo_state) is
  // skipped; asked for by name, it is an error.
  const snaps = args.lane_id
    ? [{ id: args.lane_id, snap: await readLane(repo, args.lane_id) }]
    : (await readLanes(repo)).lanes;
  const ids = snaps.map((x) => x.id);
  const events: LaneEvent[] = [];
  const next: Positions = { ...pos };
  for (const { id, snap } of snaps) {
    const from = pos[id] ?? 0;
    for (let i = from; i < snap.log.length; i++) {
      const op = snap.log[i]!;
      events.push({ lane_id: id, ...historyEntry(op), revision: op.revision });
    }
    next[id] = snap.log.length;
  }
  events.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : a.lamport - b.lamport));
  if (events.length > limit) {
    // Hand out only `limit` events and advance each Lane's position by what was handed out.
    const page = events.slice(0, limit);
    const taken: Positions = {};
    for (const e of page) taken[e.lane_id] = (taken[e.lane_id] ?? 0) + 1;
    const partial: Positions = { ...pos };
    for (const id of ids) partial[id] = (pos[id] ?? 0) + (taken[id] ?? 0);
    return { events: page, next: partial };
  }
  return { events, next };
}

export async function laneEvents(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: LaneEventsArgs,
  signal?: AbortSignal,
): Promise<{ events: LaneEvent[]; next_cursor: string }> {
  requireCaller(callerIn);
  const pos = decodeCursor(args.cursor);
  const limit = args.limit ?? 500;
  const deadline = Date.now() + (args.wait_ms ?? 0);
  for (;;) {
    const { events, next } = await collect(repo, args, pos, limit);
    if (events.length > 0 || Date.now() >= deadline || signal?.aborted) {
      return { events, next_cursor: encodeCursor(next) };
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, Math.min(250, Math.max(0, deadline - Date.now())));
      const off = repo.onCommit(() => done());
      const onAbort = () => done();
      signal?.addEventListener('abort', onAbort, { once: true });
      function done() {
        clearTimeout(timer);
        off();
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }
    });
  }
}
