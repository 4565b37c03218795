import {
  INVALID_REQUEST,
  PARSE_ERROR,
  parseJSONRPCMessage,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/server';

// The read side of `zz mcp`'s stdio: frames stdin into lines and turns each into a JSON-RPC
// message, or into a short JSON-RPC error answer. The SDK's StdioServerTransport skips a line
// that is not JSON without a word (the client's request then waits forever) and hands a line
// of the wrong shape to onerror as zod's whole union error (5 KiB on stderr, no answer); its
// read buffer, once past 10 MiB, closes the session. Here a bad line gets one answer naming its
// first problem (JSON-RPC 2.0 §5.1: -32700 for text that is not JSON, -32600 for a message of
// the wrong shape, id null when it cannot be told) and the session serves the next line.

/** Longest answer message: a client shows it, and it may quote the line. */
export const MAX_ERROR_MESSAGE = 300;

/**
 * Most lines held back at once (requests waiting for a slot, and any line whose answer waits for
 * stdout to drain), and most bytes of them: past either, the gate stops framing stdin (and the
 * caller stops reading) until one goes. While below, it reads on, so that a notification (a
 * cancellation above all) or a ping behind held requests is seen at once.
 */
export const MAX_HELD_LINES = 64;
export const MAX_HELD_BYTES = 1 << 20;

export interface LineGateOptions {
  /** Longest line taken; a longer one is answered and skipped (the SDK's bound: 10 MiB). */
  maxBytes: number;
  /** A well-formed message. */
  deliver: (message: JSONRPCMessage) => void;
  /** Answers a bad line with this error object, and tells the log. */
  refuse: (id: RequestId | null, code: number, message: string) => void;
  /**
   * True while nothing that is answered may go: the answers written have not drained. Requests
   * and bad lines are then held (up to MAX_HELD_LINES) until pump(); notifications still go.
   */
  full: () => boolean;
  /** False while this request must wait (too many calls running); pump() offers it again. */
  admit: (message: JSONRPCMessage) => boolean;
}

export interface LineGate {
  /** Takes a chunk read from stdin; false when some of it is held (stop reading until pump()). */
  take: (chunk: Buffer) => boolean;
  /** Lets go what may go now; true once every chunk given is framed (reading may go on). */
  pump: () => boolean;
  /**
   * stdin has ended. Resolves once every line held has gone, the last one without its newline
   * included (`printf '{…}' | zz mcp`: a line, as readline has it, not bytes dropped without an
   * answer).
   */
  end: () => Promise<void>;
}

type Request = JSONRPCMessage & { id: RequestId; method: string };

/** A line that gets an answer, held until it may go. */
type Held =
  | { request: Request; bytes: number }
  | { refusal: [RequestId | null, number, string]; bytes: number };

/**
 * Frames chunks of stdin into lines. A client that writes and never reads would otherwise have
 * every answer queued in this process, without bound: a line that is answered (a request, a bad
 * line) goes only while stdout is not full(), and a request admit() refuses waits for pump();
 * what is queued is one pipe buffer of answers plus those of the calls admitted.
 *
 * Lines that get no answer (notifications, the client's responses) go as soon as they are
 * framed, ahead of the held ones: a `notifications/cancelled` must reach the call it cancels
 * while later requests wait for that call's slot, and one for a request still held here drops
 * that request (it is never run, and gets no answer, as the spec has it). Held lines go in order
 * among themselves, but a ping, which needs no slot, and a bad line's answer pass requests
 * waiting for one. Only once MAX_HELD_LINES (or MAX_HELD_BYTES) are held does framing stop:
 * a notification behind those waits until one of them goes (a slot frees, stdout drains), and a
 * client that fills both its pipe to us and 64 held lines while not reading our answers has its
 * own writes blocked, cancellations included, until it reads.
 */
export function lineGate(opts: LineGateOptions): LineGate {
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  // What take() was given and has not framed yet: chunks[0] from offset on, then the rest.
  const chunks: Buffer[] = [];
  let offset = 0;
  const held: Held[] = [];
  let heldBytes = 0;
  let ended = false;
  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const hold = (h: Held): void => {
    held.push(h);
    heldBytes += h.bytes;
  };
  const takeLine = (line: Buffer): void => {
    const message = parseLine(line, (id, code, msg) =>
      hold({ refusal: [id, code, msg], bytes: msg.length }),
    );
    if (!message) return;
    if ('method' in message && 'id' in message && message.id !== undefined) {
      hold({ request: message as Request, bytes: line.length });
      return;
    }
    const m = message as { method?: string; params?: { requestId?: RequestId } };
    if (m.method === 'notifications/cancelled' && m.params?.requestId !== undefined) {
      const id = m.params.requestId;
      for (let i = held.length - 1; i >= 0; i--) {
        const h = held[i]!;
        if ('request' in h && h.request.id === id) {
          held.splice(i, 1);
          heldBytes -= h.bytes;
        }
      }
    }
    opts.deliver(message);
  };
  // Lets held lines go, in order, as far as full() and admit() allow: a request refused a slot
  // stays, and so does every later request (the slots go in order), but not a ping or a refusal.
  const release = (): void => {
    let slotWaiting = false;
    for (let i = 0; i < held.length && !opts.full();) {
      const h = held[i]!;
      if ('request' in h) {
        const isPing = h.request.method === 'ping';
        if ((!isPing && slotWaiting) || !opts.admit(h.request)) {
          if (!isPing) slotWaiting = true;
          i++;
          continue;
        }
        held.splice(i, 1);
        heldBytes -= h.bytes;
        opts.deliver(h.request);
      } else {
        held.splice(i, 1);
        heldBytes -= h.bytes;
        opts.refuse(...h.refusal);
      }
    }
  };
  const room = (): boolean => held.length < MAX_HELD_LINES && heldBytes < MAX_HELD_BYTES;
  const pump = (): boolean => {
    release();
    while (chunks.length > 0) {
      if (!room()) return false;
      const chunk = chunks[0]!;
      const nl = chunk.indexOf(0x0a, offset);
      const end = nl < 0 ? chunk.length : nl;
      if (!skipping) {
        if (size + end - offset > opts.maxBytes) {
          skipping = true;
          parts = [];
          size = 0;
          hold({
            refusal: [
              null,
              INVALID_REQUEST,
              `Invalid Request: a message longer than ${opts.maxBytes} bytes; it was skipped`,
            ],
            bytes: 0,
          });
        } else {
          parts.push(chunk.subarray(offset, end));
          size += end - offset;
        }
      }
      if (nl < 0) {
        chunks.shift();
        offset = 0;
        continue;
      }
      offset = nl + 1;
      if (!skipping) {
        const line = Buffer.concat(parts, size);
        parts = [];
        size = 0;
        takeLine(line);
      }
      skipping = false;
      release();
    }
    if (!ended) return true;
    if (!skipping && size > 0) {
      const last = Buffer.concat(parts, size);
      parts = [];
      size = 0;
      takeLine(last);
      release();
    }
    if (held.length === 0) finished();
    return true;
  };
  return {
    take: (chunk) => {
      if (chunk.length > 0) chunks.push(chunk);
      return pump();
    },
    pump,
    end: () => {
      ended = true;
      pump();
      return done;
    },
  };
}

/** The message a line holds, or null once refuse() has been given its answer (or it is blank). */
function parseLine(
  line: Buffer,
  refuse: (id: RequestId | null, code: number, message: string) => void,
): JSONRPCMessage | null {
  // A CR before the LF (Windows) and a UTF-8 BOM (some Windows tools) only frame the text.
  const text = line
    .toString('utf8')
    .replace(/\r$/, '')
    .replace(/^\uFEFF/, '');
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    refuse(null, PARSE_ERROR, bounded(`Parse error: ${(e as Error).message}`));
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    refuse(
      null,
      INVALID_REQUEST,
      Array.isArray(value)
        ? 'Invalid Request: a batch (JSON array) is not supported; send one message per line'
        : 'Invalid Request: a message must be a JSON object',
    );
    return null;
  }
  let message: JSONRPCMessage;
  try {
    message = parseJSONRPCMessage(value);
  } catch (e) {
    const id = (value as { id?: unknown }).id;
    refuse(
      typeof id === 'string' || typeof id === 'number' ? id : null,
      INVALID_REQUEST,
      bounded(`Invalid Request: ${firstProblem(e)}`),
    );
    return null;
  }
  return message;
}

interface Issue {
  code?: string;
  path?: PropertyKey[];
  message?: string;
  errors?: Issue[][];
}

/**
 * The first problem of a failed parse, with its path: of a union of message kinds (request,
 * notification, result, error), the kind that came closest — fewest problems — so that
 * `{"id":1,"method":5}` says `method: expected string`, not that it is no error response.
 */
function firstProblem(e: unknown): string {
  let issue = (e as { issues?: Issue[] }).issues?.[0];
  let path: PropertyKey[] = [];
  while (issue?.code === 'invalid_union' && issue.errors?.length) {
    path = [...path, ...(issue.path ?? [])];
    const closest = issue.errors.reduce((a, b) => (b.length < a.length ? b : a));
    issue = closest[0];
  }
  if (!issue) return String((e as Error)?.message ?? e);
  const at = [...path, ...(issue.path ?? [])].map(String).join('.');
  const what = (issue.message ?? 'invalid').replace(/^Invalid input: /, '');
  return at ? `${at}: ${what}` : what;
}

const bounded = (s: string): string =>
  s.length <= MAX_ERROR_MESSAGE ? s : `${s.slice(0, MAX_ERROR_MESSAGE - 1)}…`;
