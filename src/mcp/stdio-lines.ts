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

export interface LineGateOptions {
  /** Longest line taken; a longer one is answered and skipped (the SDK's bound: 10 MiB). */
  maxBytes: number;
  /** A well-formed message. */
  deliver: (message: JSONRPCMessage) => void;
  /** Answers a bad line with this error object, and tells the log. */
  refuse: (id: RequestId | null, code: number, message: string) => void;
  /**
   * True while no line may be taken: the answers written have not drained. The gate then keeps
   * the rest of what it was given until pump(); the caller stops reading meanwhile.
   */
  full: () => boolean;
  /** False while this message must wait (too many calls running); pump() offers it again. */
  admit: (message: JSONRPCMessage) => boolean;
}

export interface LineGate {
  /** Takes a chunk read from stdin; false when some of it is held (stop reading until pump()). */
  take: (chunk: Buffer) => boolean;
  /** Takes what is held, as far as full() and admit() allow; true once nothing is held. */
  pump: () => boolean;
  /**
   * stdin has ended. Resolves once every line held has been taken, the last one without its
   * newline included (`printf '{…}' | zz mcp`: a line, as readline has it, not bytes dropped
   * without an answer).
   */
  end: () => Promise<void>;
}

/**
 * Frames chunks of stdin into lines, each answered or delivered in order. A client that writes
 * and never reads would otherwise have every answer queued in this process, without bound: the
 * gate takes no line while full(), and a request admit() refuses waits for pump(), so what is
 * queued is one pipe buffer of answers plus those of the calls admitted.
 */
export function lineGate(opts: LineGateOptions): LineGate {
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  // What take() was given and has not framed yet: held[0] from offset on, then the rest.
  const held: Buffer[] = [];
  let offset = 0;
  let waiting: JSONRPCMessage | null = null;
  let ended = false;
  let finished!: () => void;
  const done = new Promise<void>((resolve) => (finished = resolve));
  const takeLine = (line: Buffer): void => {
    const message = parseLine(line, opts);
    if (!message) return;
    if (opts.admit(message)) opts.deliver(message);
    else waiting = message;
  };
  const pump = (): boolean => {
    if (waiting) {
      if (!opts.admit(waiting)) return false;
      const message = waiting;
      waiting = null;
      opts.deliver(message);
    }
    while (held.length > 0) {
      if (waiting || opts.full()) return false;
      const chunk = held[0]!;
      const nl = chunk.indexOf(0x0a, offset);
      const end = nl < 0 ? chunk.length : nl;
      if (!skipping) {
        if (size + end - offset > opts.maxBytes) {
          skipping = true;
          parts = [];
          size = 0;
          opts.refuse(
            null,
            INVALID_REQUEST,
            `Invalid Request: a message longer than ${opts.maxBytes} bytes; it was skipped`,
          );
        } else {
          parts.push(chunk.subarray(offset, end));
          size += end - offset;
        }
      }
      if (nl < 0) {
        held.shift();
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
    }
    if (!ended) return true;
    if (!skipping && size > 0) {
      if (opts.full()) return false;
      const last = Buffer.concat(parts, size);
      parts = [];
      size = 0;
      takeLine(last);
      if (waiting) return false;
    }
    finished();
    return true;
  };
  return {
    take: (chunk) => {
      if (chunk.length > 0) held.push(chunk);
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

/** The message a line holds, or null once refuse() has answered it (or it is blank). */
function parseLine(line: Buffer, opts: LineGateOptions): JSONRPCMessage | null {
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
    opts.refuse(null, PARSE_ERROR, bounded(`Parse error: ${(e as Error).message}`));
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    opts.refuse(
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
    opts.refuse(
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
