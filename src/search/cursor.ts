import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ZzError } from '../errors.js';
import { cursorCodec } from '../schema/cursor.js';

// The opaque paging cursor of ladder search: an offset bound to the query it was issued for
// (a tag of the planned query), so a cursor passed with another query or filter is refused
// instead of silently paging something else.

const cursorTag = (key: string): string =>
  createHash('sha256').update(key).digest('base64url').slice(0, 16);

const codec = cursorCodec(
  'ladder_search',
  z.strictObject({ o: z.number().int().min(0), q: z.string().length(16) }),
  { maxLength: 200 },
);

export function encodeCursor(offset: number, key: string): string {
  return codec.encode({ o: offset, q: cursorTag(key) });
}

export function decodeCursor(cursor: unknown, key: string, maxOffset: number): number {
  const c = codec.decode(cursor);
  if (c.o > maxOffset) {
    throw new ZzError('invalid_argument', 'cursor is past the last result; start again', {
      field: 'cursor',
    });
  }
  if (c.q !== cursorTag(key)) {
    throw new ZzError(
      'invalid_argument',
      'cursor belongs to a different query or filter; pass back next_cursor with the same query',
      { field: 'cursor' },
    );
  }
  return c.o;
}
