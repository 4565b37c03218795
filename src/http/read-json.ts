import { ZzError } from '../errors.js';
import { jsonDeeperThan, MAX_JSON_DEPTH } from '../schema/json-depth.js';
import { asRequest, readBodyOf, type AppRequest } from './known-bodies.js';

// Request bodies: bounded while read, checked for nesting depth before JSON.parse (whose
// recursion a 20k-deep `[[[[…` would otherwise turn into a stack overflow), and required to
// be a JSON object.

const tooLarge = (limit: number) =>
  new ZzError('payload_too_large', `request body is larger than ${limit} bytes`, {
    limit_bytes: limit,
  });

/** The whole body, or a 413 as soon as `limit` is passed (the rest is never read). */
export async function readBody(req: AppRequest, limit: number): Promise<Uint8Array> {
  const declared = req.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  const known = readBodyOf(req);
  if (known !== undefined) {
    if (known.byteLength > limit) throw tooLarge(limit);
    return known;
  }
  const stream = asRequest(req).body;
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    let r: Awaited<ReturnType<typeof reader.read>>;
    try {
      r = await reader.read();
    } catch (e) {
      if (e instanceof ZzError) throw e;
      throw new ZzError('invalid_argument', 'the request body could not be read');
    }
    if (r.done) break;
    size += r.value.byteLength;
    if (size > limit) {
      reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(r.value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** Refuses JSON nested deeper than maxDepth (the one depth rule, schema/json-depth.ts). */
export function assertJsonDepth(text: string, maxDepth = MAX_JSON_DEPTH): void {
  if (jsonDeeperThan(text, maxDepth)) {
    throw new ZzError('invalid_argument', `request body is nested deeper than ${maxDepth} levels`);
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as a JSON object of arguments; an empty body is `{}`. */
export function parseJsonObject(bytes: Uint8Array): Record<string, unknown> {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new ZzError('invalid_argument', 'request body is not valid UTF-8');
  }
  if (text.trim() === '') return {};
  assertJsonDepth(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new ZzError(
      'invalid_argument',
      `request body is not valid JSON: ${(e as Error).message.slice(0, 200)}`,
    );
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ZzError('invalid_argument', 'request body must be a JSON object of arguments');
  }
  return value as Record<string, unknown>;
}

/** True when a Content-Type names JSON (application/json, or any +json type). */
export function isJsonContentType(value: string): boolean {
  const type = value.split(';', 1)[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}
