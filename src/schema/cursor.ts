import { z } from 'zod';
import { ZzError } from '../errors.js';

// The one paging-cursor codec. A cursor zz hands out is base64url of the JSON
// [kind, version, payload]: opaque to clients, but it comes back from them, so it is input.
// decode() checks the length, the alphabet, the kind (a lane_get cursor passed to git_log is
// named as such), the version and the payload (zod) before any of it is used, and every
// failure is an invalid_argument (400) naming the field: a forged or garbled cursor is never
// a 500. What a payload names (a commit, an offset past the end) the caller still checks.
// Bump a kind's version when its payload changes; a cursor of another version is refused
// with a message that says to start again, unless the kind reads it through `legacy`.

const BASE64URL = /^[A-Za-z0-9_-]+$/;
const KIND = /^[a-z][a-z0-9_]{0,31}$/;

export interface CursorCodec<T> {
  readonly kind: string;
  encode(value: T): string;
  /** The payload of a cursor this kind issued, or an invalid_argument naming `field`. */
  decode(raw: unknown, field?: string): T;
}

export interface CursorOptions<T> {
  /** The payload's format version (default 1). */
  version?: number;
  /** Most characters an encoded cursor may have (default 1,024). */
  maxLength?: number;
  /**
   * Reads the JSON of a cursor from before this codec (or of an older version), for kinds a
   * client may keep across a daemon upgrade; undefined when it is not one.
   */
  legacy?: (json: unknown) => T | undefined;
}

export function cursorCodec<S extends z.ZodType>(
  kind: string,
  payload: S,
  opts: CursorOptions<z.output<S>> = {},
): CursorCodec<z.output<S>> {
  if (!KIND.test(kind)) throw new Error(`cursor kind ${kind} must match ${KIND}`);
  const version = opts.version ?? 1;
  const maxLength = opts.maxLength ?? 1024;
  const bad = (field: string, why: string) =>
    new ZzError('invalid_argument', `${field} ${why}`, { field });
  return {
    kind,
    encode: (value) =>
      Buffer.from(JSON.stringify([kind, version, value]), 'utf8').toString('base64url'),
    decode(raw, field = 'cursor') {
      const malformed = () =>
        bad(field, 'is not a cursor this server issued; pass back next_cursor unchanged');
      if (
        typeof raw !== 'string' ||
        raw.length === 0 ||
        raw.length > maxLength ||
        !BASE64URL.test(raw)
      ) {
        throw malformed();
      }
      let json: unknown;
      try {
        json = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
      } catch {
        throw malformed();
      }
      const env = envelopeOf(json);
      if (env && env[0] === kind && env[1] === version) {
        const p = payload.safeParse(env[2]);
        if (p.success) return p.data;
        throw malformed();
      }
      const old = opts.legacy?.(json);
      if (old !== undefined) return old;
      if (!env) throw malformed();
      // The kind is checked against the known pattern before it is echoed back.
      if (env[0] !== kind) {
        const other = KIND.test(env[0]) ? ` (it is a ${env[0]} cursor)` : '';
        throw bad(field, `is a cursor of another listing${other}, not of ${kind}`);
      }
      throw bad(field, 'was issued by another version of zz; start again without it');
    },
  };
}

function envelopeOf(json: unknown): [string, number, unknown] | null {
  if (!Array.isArray(json) || json.length !== 3) return null;
  const [k, v, p] = json as [unknown, unknown, unknown];
  return typeof k === 'string' && typeof v === 'number' && Number.isInteger(v) ? [k, v, p] : null;
}

/** Largest offset an offset cursor holds (no listing zz pages is longer). */
export const MAX_CURSOR_OFFSET = 1_000_000_000;

/** A cursor that is a position in a list (the next item's index). */
export const offsetCursor = (kind: string): CursorCodec<number> =>
  cursorCodec(kind, z.number().int().min(0).max(MAX_CURSOR_OFFSET));
