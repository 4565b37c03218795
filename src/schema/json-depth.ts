// How deep JSON may nest, wherever it comes from: a request body (http/read-json.ts) and an op
// read from a commit (store/op-message.ts), which may be another machine's. JSON.parse in V8 is
// iterative, but JSON.stringify, zod and every recursive walk of the value are not: a
// 100,000-deep `{"a":{"a":…` overflows the stack in whoever touches it next (a sync, a read of
// the Lane). So depth is refused on the text, before any value exists.

/** The deepest a request body, or an op's args or out, may nest (objects and arrays). */
export const MAX_JSON_DEPTH = 64;

/**
 * The deepest an op's args or out may nest when read from a commit (store/op-message.ts): more
 * lenient than what is written, as STORED_LIMITS are. Until 3 December only HTTP bodies were
 * depth-checked, and MCP wrote payloads as deep as JSON.stringify could take: a Lane holding one
 * deeper than 64 must stay readable after the upgrade. 1,000 levels are safe on Node's default
 * stack for every recursive reader (JSON.stringify, paging's jsonBytes, json-text):
 * test/sync/hostile-refs reads a Lane at this depth warm and cold.
 */
export const MAX_STORED_JSON_DEPTH = 1_000;

const OPEN_OBJ = 0x7b;
const OPEN_ARR = 0x5b;
const CLOSE_OBJ = 0x7d;
const CLOSE_ARR = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * True when the JSON text nests objects and arrays deeper than `maxDepth`. Scans UTF-16 code
 * units: brackets and quotes are ASCII, which no other code unit (a surrogate included) equals,
 * so brackets inside strings are the only ones to skip. Invalid JSON is JSON.parse's to refuse.
 */
export function jsonDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_OBJ || c === OPEN_ARR) {
      if (++depth > maxDepth) return true;
    } else if (c === CLOSE_OBJ || c === CLOSE_ARR) {
      depth--;
    }
  }
  return false;
}
