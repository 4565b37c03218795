import {
  CONFIG_REF,
  decodeCursor,
  headCursor,
  laneEvents,
  type Positions,
  LANES_PREFIX,
  laneRef,
  type Caller,
  type CommitEvent,
  type ZzRepo,
  watchHealth,
} from '../core/index.js';
import { ZzError } from '../errors.js';
import { HELD } from '../schema/limits.js';

// Server-sent events of commits on refs/zz/*. Each Lane event carries as its id the same
// cursor `lane_events` takes (ops seen per Lane), so a client that reconnects with
// Last-Event-ID (or ?cursor=) first receives what it missed, then the live stream. A `health`
// event (no id, data `{}`) says repo_state's health (quarantined, sync_refused) changed: read
// it again. It has no commit of its own to follow (core/health.ts).

export interface EventStreamOptions {
  cursor: string | null;
  heartbeatMs: number;
  /** Reports a failure while catching up (the stream then ends; the client reconnects). */
  onError: (e: unknown) => void;
  /** Called once when the stream ends, whoever ended it. */
  onClose?: () => void;
  /**
   * Whether the caller may still read (its token or dashboard session not revoked), asked
   * before anything is sent after the first pull: a revoked caller's open stream ends instead
   * of carrying on with what others write.
   */
  stillAuthorized?: () => Promise<boolean>;
}

/**
 * HELD.streamBacklogBytes: what a client may fall behind by before it is dropped. Each chunk
 * counts at least CHUNK_WEIGHT, so no more than ~1,000 small ones (pings, notices) queue
 * either. A chunk larger than the bound (a Ladder write near the body limit) is queued when
 * nothing else is: a client that keeps up must get it.
 */
export const MAX_BACKLOG_BYTES = HELD.streamBacklogBytes;
const CHUNK_WEIGHT = 8 * 1024;
const queuing: QueuingStrategy<Uint8Array> = {
  highWaterMark: 0,
  size: (chunk) => Math.max(chunk.byteLength, CHUNK_WEIGHT),
};

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

type Page = Awaited<ReturnType<typeof laneEvents>>;

/**
 * One lane_events pull per cursor per commit for every stream of a repository. Streams that
 * are caught up all sit at the same cursor, so a Lane commit used to cost one pull per stream
 * (400 streams: 400 reads of the Lane's log a commit). A pull's answer depends only on the
 * cursor and the refs (not on the caller, whose right to read each stream checks on its own),
 * so the first stream to ask pulls and the rest share its answer until the next commit.
 */
interface SharedPulls {
  pages: Map<string, Promise<Page>>;
  users: number;
  off: () => void;
}
const sharedPulls = new WeakMap<ZzRepo, SharedPulls>();

function joinShared(repo: ZzRepo): {
  pull: (cursor: string, caller: Caller) => Promise<Page>;
  leave: () => void;
} {
  let shared = sharedPulls.get(repo);
  if (!shared) {
    const made: SharedPulls = { pages: new Map(), users: 0, off: () => {} };
    // Any commit may change any answer: forget them all (listeners run in order of
    // subscription, this one before the streams', whose pulls start later anyway).
    made.off = repo.onCommit(() => made.pages.clear());
    sharedPulls.set(repo, (shared = made));
  }
  const s = shared;
  s.users++;
  let left = false;
  return {
    pull(cursor, caller) {
      let page = s.pages.get(cursor);
      if (!page) {
        const pages = s.pages;
        page = laneEvents(repo, caller, { cursor, limit: 1000 });
        pages.set(cursor, page);
        // A failure is not shared with streams that ask later.
        page.catch(() => pages.get(cursor) === page && pages.delete(cursor));
      }
      return page;
    },
    leave() {
      if (left) return;
      left = true;
      if (--s.users > 0) return;
      s.off();
      sharedPulls.delete(repo);
    },
  };
}

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
  /** What this client has been sent (a lane_events cursor); set once catching up starts. */
  let cursor: string | null = opts.cursor;
  /** Pulls run one after another: each starts from the cursor the previous one left. */
  let chain: Promise<void> = Promise.resolve();
  const shared = joinShared(repo);

  const write = (s: string) => {
    if (closed) return;
    const chunk = enc.encode(s);
    // desiredSize is highWaterMark (0) less what is queued and not yet taken by the socket.
    const queued = -(controller.desiredSize ?? 0);
    if (queued > 0 && queued + queuing.size!(chunk) > MAX_BACKLOG_BYTES) {
      // Dropped, its backlog discarded at once (not sent first: the client is not reading);
      // the adapter cuts the connection and the client reconnects from its Last-Event-ID.
      close(new ZzError('unavailable', 'event stream client fell too far behind'));
      return;
    }
    controller.enqueue(chunk);
  };
  const send = (e: CommitEvent | { ref: string; revision: string; ops: unknown[] }, id?: string) =>
    write(
      `${id ? `id: ${id}\n` : ''}event: commit\ndata: ${JSON.stringify({ ref: e.ref, revision: e.revision, ops: e.ops })}\n\n`,
    );

  // Lane ops are not forwarded from the commit notice: every Lane commit triggers a pull of
  // lane_events from this client's cursor, so a sync merge that puts remote ops ahead of ones
  // already sent neither skips nor repeats anything (see core/events.ts).
  const authorized = async (): Promise<boolean> => {
    if (closed) return false;
    if (!opts.stillAuthorized || (await opts.stillAuthorized())) return true;
    close();
    return false;
  };

  async function pull(): Promise<void> {
    if (!(await authorized())) return;
    if (cursor === null) cursor = await headCursor(repo);
    for (;;) {
      if (closed) return;
      const page = await shared.pull(cursor, caller);
      if (page.events.length === 0) {
        cursor = page.next_cursor;
        return;
      }
      // Group the page back into commits: consecutive events of one revision. Only the last
      // carries the cursor as its id (a reconnect may repeat part of a page, never skip).
      let i = 0;
      while (i < page.events.length) {
        const first = page.events[i]!;
        const ops = [];
        while (i < page.events.length && page.events[i]!.revision === first.revision) {
          const { lane_id: _l, ask_id: _a, ...op } = page.events[i]!;
          ops.push({ ...op, out: op.out ?? undefined });
          i++;
        }
        send(
          { ref: laneRef(first.lane_id), revision: first.revision, ops },
          i === page.events.length ? page.next_cursor : undefined,
        );
      }
      cursor = page.next_cursor;
    }
  }
  const schedule = () => {
    chain = chain.then(pull).catch((e: unknown) => {
      opts.onError(e);
      close();
    });
  };

  /** Sends in line with the pulls, after the same check. */
  const inLine = (f: () => void): void => {
    chain = chain
      .then(async () => {
        if (await authorized()) f();
      })
      .catch((err: unknown) => {
        opts.onError(err);
        close();
      });
  };
  const off = repo.onCommit((e) => {
    if (laneOf(e.ref) === null) {
      inLine(() => send(e));
      // A config change can refuse Lane ops already sent: lane_events says which (core/events.ts).
      if (e.ref === CONFIG_REF) schedule();
      return;
    }
    // The claim_lost notices auto-sync adds are not forwarded: the pull delivers the same
    // notice (lane_events re-bases the cursor and reports seen ops the merge refused).
    schedule();
  });
  const offHealth = watchHealth(repo, () => inLine(() => write('event: health\ndata: {}\n\n')));
  // The ping re-checks the caller too: a revoked token's stream ends within a heartbeat even
  // when nothing is committed.
  const heartbeat = setInterval(() => inLine(() => write(': ping\n\n')), opts.heartbeatMs);
  heartbeat.unref();

  /** Ends the stream; with `failed`, what is queued is discarded and the connection cut. */
  function close(failed?: Error): void {
    if (closed) return;
    closed = true;
    off();
    offHealth();
    shared.leave();
    clearInterval(heartbeat);
    opts.onClose?.();
    try {
      if (failed) controller.error(failed);
      else controller.close();
    } catch {
      /* already closed or errored */
    }
  }

  const body = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        c.enqueue(enc.encode(`retry: 2000\n: connected to ${repo.key}\n\n`));
      },
      cancel() {
        close();
      },
    },
    queuing,
  );
  schedule();
  // Not `close` itself: an abort listener would hand it an Event as the failure.
  return { body, close: () => close() };
}
