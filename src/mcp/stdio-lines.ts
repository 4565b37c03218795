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
}

/**
 * Returns the function that takes each chunk read from stdin, and `end`, called once stdin has
 * ended: a last line without its newline (`printf '{…}' | zz mcp`) is still a line, as
 * readline has it, not bytes dropped without an answer.
 */
export function lineGate(opts: LineGateOptions): {
  take: (chunk: Buffer) => void;
  end: () => void;
} {
  let parts: Buffer[] = [];
  let size = 0;
  let skipping = false;
  const end = (): void => {
    if (!skipping && size > 0) takeLine(Buffer.concat(parts, size), opts);
    parts = [];
    size = 0;
  };
  const take = (chunk: Buffer): void => {
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl;
      if (!skipping) {
        if (size + end - start > opts.maxBytes) {
          skipping = true;
          parts = [];
          size = 0;
          opts.refuse(
            null,
            INVALID_REQUEST,
            `Invalid Request: a message longer than ${opts.maxBytes} bytes; it was skipped`,
          );
        } else {
          parts.push(chunk.subarray(start, end));
          size += end - start;
        }
      }
      if (nl < 0) return;
      if (!skipping) {
        const line = Buffer.concat(parts, size);
        parts = [];
        size = 0;
        takeLine(line, opts);
      }
      skipping = false;
      start = nl + 1;
    }
  };
  return { take, end };
}

function takeLine(line: Buffer, opts: LineGateOptions): void {
  // A CR before the LF (Windows) and a UTF-8 BOM (some Windows tools) only frame the text.
  const text = line
    .toString('utf8')
    .replace(/\r$/, '')
    .replace(/^\uFEFF/, '');
  if (text.trim() === '') return;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return opts.refuse(null, PARSE_ERROR, bounded(`Parse error: ${(e as Error).message}`));
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return opts.refuse(
      null,
      INVALID_REQUEST,
      Array.isArray(value)
        ? 'Invalid Request: a batch (JSON array) is not supported; send one message per line'
        : 'Invalid Request: a message must be a JSON object',
    );
  }
  let message: JSONRPCMessage;
  try {
    message = parseJSONRPCMessage(value);
  } catch (e) {
    const id = (value as { id?: unknown }).id;
    return opts.refuse(
      typeof id === 'string' || typeof id === 'number' ? id : null,
      INVALID_REQUEST,
      bounded(`Invalid Request: ${firstProblem(e)}`),
    );
  }
  opts.deliver(message);
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
