import {
  decodeCursor,
  encodeCursor,
  laneEvents,
  type Positions,
  LANES_PREFIX,
  laneRef,
  type Caller,
  type CommitEvent,
  type ZzRepo,
} from '../core/index.js';
import { ZzError } from '../errors.js';

// Server-sent events of commits on refs/zz/*. Each Lane event carries as its id the same
// cursor `lane_events` takes (ops seen per Lane), so a client that reconnects with
// Last-Event-ID (or ?cursor=) first receives what it missed, then the live stream.

export interface EventStreamOptions {
  cursor: string | null;
  heartbeatMs: number;
  /** Reports a failure while catching up (the stream then ends; the client reconnects). */
  onError: (e: unknown) => void;
  /** Called once when the stream ends, whoever ended it. */
  onClose?: () => void;
}

/** Queued chunks a client may fall behind by before it is dropped (it resumes by cursor). */
const MAX_BACKLOG = 1000;

// The same codec as lane_events, with a message that names both ways a cursor arrives.
export function decodePositions(cursor: string): Positions {
  try {
    return decodeCursor(cursor);
  } catch {
    throw new ZzError(
      'invalid_argument',
      'cursor (or Last-Event-ID) is not a cursor this server issued',
    );
  }
}

const encodePositions = encodeCursor;

const laneOf = (ref: string): string | null =>
  ref.startsWith(LANES_PREFIX) ? ref.slice(LANES_PREFIX.length) : null;

/** An SSE body plus a close() for shutdown. Validate the cursor before calling. */
export function openEventStream(
  repo: ZzRepo,
  caller: Caller,
  opts: EventStreamOptions,
): { body: ReadableStream<Uint8Array>; close: () => void } {
  const enc = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let ready = false;
  const buffered: CommitEvent[] = [];
  let positions: Positions = {};
  /** Revisions already sent while catching up, so the live buffer does not repeat them. */
  const sent = new Set<string>();
  /** Without a cursor, the logs the starting positions were counted from. */
  const logsAtStart = new Map<string, ReadonlyArray<{ revision: string }>>();

  const write = (s: string) => {
    if (closed) return;
    if ((controller.desiredSize ?? 0) < -MAX_BACKLOG) {
      close();
      return;
    }
    controller.enqueue(enc.encode(s));
  };
  const sendCommit = (e: CommitEvent, counted: boolean) => {
    const lane = laneOf(e.ref);
    let id = '';
    if (lane !== null) {
      // Notices sync adds (claim_lost) are not ops of the log: they move no position.
      if (!counted)
        positions[lane] =
          (positions[lane] ?? 0) + e.ops.filter((o) => o.op !== 'claim_lost').length;
      id = `id: ${encodePositions(positions)}\n`;
    }
    write(
      `${id}event: commit\ndata: ${JSON.stringify({ ref: e.ref, revision: e.revision, ops: e.ops })}\n\n`,
    );
  };

  const off = repo.onCommit((e) => {
    if (ready) sendCommit(e, false);
    else buffered.push(e);
  });
  const heartbeat = setInterval(() => write(': ping\n\n'), opts.heartbeatMs);
  heartbeat.unref();

  function close(): void {
    if (closed) return;
    closed = true;
    off();
    clearInterval(heartbeat);
    opts.onClose?.();
    try {
      controller.close();
    } catch {
      /* already closed or errored */
    }
  }

  async function catchUp(): Promise<void> {
    if (opts.cursor !== null) {
      positions = decodePositions(opts.cursor);
      let cursor = opts.cursor;
      for (;;) {
        const page = await laneEvents(repo, caller, { cursor, limit: 1000 });
        if (page.events.length === 0 || closed) break;
        // Group the page back into commits: consecutive events of one revision.
        let i = 0;
        while (i < page.events.length) {
          const first = page.events[i]!;
          const ops = [];
          while (i < page.events.length && page.events[i]!.revision === first.revision) {
            const { lane_id: _l, ask_id: _a, ...op } = page.events[i]!;
            ops.push({ ...op, out: op.out ?? undefined });
            i++;
          }
          sent.add(first.revision);
          sendCommit(
            {
              ref: laneRef(first.lane_id),
              revision: first.revision,
              // as unknown as: history entries carry `op` as a string; they were typed ops when logged.
              ops: ops as unknown as CommitEvent['ops'],
            },
            false,
          );
        }
        cursor = page.next_cursor;
      }
    } else {
      for (const id of await repo.laneIds()) {
        const { log } = await repo.lane(id).read();
        positions[id] = log.length;
        logsAtStart.set(id, log);
      }
    }
    if (closed) return;
    for (const e of buffered) {
      if (sent.has(e.revision)) continue;
      const lane = laneOf(e.ref);
      // Live commits that happened while positions were read may already be counted.
      const counted =
        lane !== null && !!logsAtStart.get(lane)?.some((op) => op.revision === e.revision);
      sendCommit(e, counted);
    }
    buffered.length = 0;
    ready = true;
  }

  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      c.enqueue(enc.encode(`retry: 2000\n: connected to ${repo.key}\n\n`));
    },
    cancel() {
      close();
    },
  });
  catchUp().catch((e: unknown) => {
    opts.onError(e);
    close();
  });
  return { body, close };
}
