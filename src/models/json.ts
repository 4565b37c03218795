import { z } from 'zod';
import { jsonDeeperThan, MAX_JSON_DEPTH } from '../schema/json-depth.js';

// JSON helpers the adapters share: zod → JSON Schema for the wire, a strict-mode check, tool
// arguments that may arrive as a string, and the JSON inside a model's prose answer.

/** `io: 'input'` for what a caller may send (tool arguments), 'output' for what must come back. */
export function jsonSchemaOf(
  schema: z.ZodType,
  io: 'input' | 'output' = 'output',
): Record<string, unknown> {
  const js = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  // Endpoints differ on `$schema`; none needs it.
  delete js.$schema;
  return js;
}

/** True when OpenAI's strict mode accepts the schema: every object closed, every key required. */
export function strictCompatible(schema: unknown): boolean {
  if (Array.isArray(schema)) return schema.every(strictCompatible);
  if (!schema || typeof schema !== 'object') return true;
  const s = schema as Record<string, unknown>;
  if (s.type === 'object' || s.properties) {
    const props = Object.keys((s.properties as object | undefined) ?? {});
    const req = new Set((s.required as string[] | undefined) ?? []);
    if (s.additionalProperties !== false || props.some((p) => !req.has(p))) return false;
  }
  return Object.values(s).every(strictCompatible);
}

/** A token count from an endpoint's usage: a finite count, else nothing (0), never its text. */
export const tokenCount = (v: unknown): number =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.round(v) : 0;

/** An endpoint's answer is untrusted JSON: an object, or nothing to read fields from. */
export const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The most a tool call's arguments may be: well above any call a tool accepts (an ask_post's
 * body and payload are 64 KiB each), far below what a model may send. A call's arguments stay
 * in the conversation and are re-sent every turn, so 25 MB of them made each request of a run
 * larger than the last (175 MB, 1.6 GB resident). Over the cap, or nested deeper than an op's
 * args may be (schema/json-depth.ts), the call keeps `{}` and the loop answers it as an error.
 */
export const MAX_ARGUMENT_BYTES = 256 * 1024;
const MAX_ARGUMENT_DEPTH = MAX_JSON_DEPTH - 1;

const tooBig = (bytes: number) =>
  `arguments of ${bytes} bytes are refused: the limit is ${MAX_ARGUMENT_BYTES / 1024} KiB`;
const tooDeep = `arguments nested deeper than ${MAX_ARGUMENT_DEPTH} levels are refused`;

/** Tool-call arguments as an object; a parse failure or an over-cap call is kept for the loop. */
export function parseArguments(raw: unknown): {
  arguments: Record<string, unknown>;
  parse_error?: string;
} {
  let v = raw;
  if (typeof raw === 'string') {
    if (raw.trim() === '') return { arguments: {} };
    const bytes = Buffer.byteLength(raw);
    if (bytes > MAX_ARGUMENT_BYTES) return { arguments: {}, parse_error: tooBig(bytes) };
    if (jsonDeeperThan(raw, MAX_ARGUMENT_DEPTH)) return { arguments: {}, parse_error: tooDeep };
    try {
      v = JSON.parse(raw);
    } catch (e) {
      return { arguments: {}, parse_error: `arguments are not JSON: ${(e as Error).message}` };
    }
  } else if (v !== null && typeof v === 'object') {
    // Already parsed with the whole answer (Anthropic's input, some OpenAI-compatible servers):
    // depth first, iteratively, since serialising a very deep value overflows the stack.
    if (valueDeeperThan(v, MAX_ARGUMENT_DEPTH)) return { arguments: {}, parse_error: tooDeep };
    const bytes = Buffer.byteLength(JSON.stringify(v));
    if (bytes > MAX_ARGUMENT_BYTES) return { arguments: {}, parse_error: tooBig(bytes) };
  }
  if (v === undefined || v === null) return { arguments: {} };
  if (typeof v !== 'object' || Array.isArray(v)) {
    return { arguments: {}, parse_error: 'arguments must be a JSON object' };
  }
  return { arguments: v as Record<string, unknown> };
}

/** jsonDeeperThan for a parsed value, without recursion (the value may be 200,000 deep). */
function valueDeeperThan(value: object, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (depth > maxDepth) return true;
    for (const child of Object.values(v)) stack.push([child, depth + 1]);
  }
  return false;
}

/**
 * The JSON value in a model's text answer: the whole text, else a fenced ```json block, else
 * the span from the first `{` to the last `}` (models like to wrap JSON in prose).
 */
export function extractJson(text: string): unknown {
  const attempts = [text.trim()];
  const fence = /```(?:json)?\s*\n([\s\S]*?)```/.exec(text);
  if (fence) attempts.push(fence[1]!.trim());
  const first = text.indexOf('{');
  const last = text.lastIndexOf('}');
  if (first >= 0 && last > first) attempts.push(text.slice(first, last + 1));
  for (const a of attempts) {
    try {
      return JSON.parse(a) as unknown;
    } catch {
      /* next candidate */
    }
  }
  throw new SyntaxError('the answer contains no JSON object');
}
