import { createHash } from 'node:crypto';
import { ZzError } from '../errors.js';

// The opaque paging cursor of ladder search: an offset bound to the query it was issued for
// (a tag of the planned query), so a cursor passed with another query or filter is refused
// instead of silently paging something else.

const cursorTag = (key: string): string =>
  createHash('sha256').update(key).digest('base64url').slice(0, 16);

export function encodeCursor(offset: number, key: string): string {
  return Buffer.from(JSON.stringify({ v: 1, o: offset, q: cursorTag(key) })).toString('base64url');
}

export function decodeCursor(cursor: unknown, key: string, maxOffset: number): number {
  const bad = (why: string) =>
    new ZzError('invalid_argument', `cursor ${why}; pass back next_cursor unchanged`, {
      field: 'cursor',
    });
  if (
    typeof cursor !== 'string' ||
    cursor.length === 0 ||
    cursor.length > 200 ||
    !/^[A-Za-z0-9_-]+$/.test(cursor)
  ) {
    throw bad('is malformed');
  }
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw bad('is malformed');
  }
  const o = (c as { o?: unknown })?.o;
  if (
    (c as { v?: unknown })?.v !== 1 ||
    !Number.isInteger(o) ||
    (o as number) < 0 ||
    (o as number) > maxOffset
  ) {
    throw bad('is malformed');
  }
  if ((c as { q?: unknown }).q !== cursorTag(key))
    throw bad('belongs to a different query or filter');
  return o as number;
}
