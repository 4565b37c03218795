// Reading a Lane in pages: the page never asks for a whole large Lane in one response.
import { call } from './api.js';

export const FIRST_PAGE = 200;
export const PAGE = 1000;

// lane_get pages by offset (next_asks_offset) on newer daemons and by cursor on older ones;
// `next` is whichever the daemon gave, passed back the same way. A page may also end early
// (the daemon caps a response's size), so always follow `next` rather than counting.
const nextOf = (offset, cursor) =>
  typeof offset === 'number' ? offset : typeof cursor === 'string' ? cursor : null;
const pageArg = (name, next) =>
  next === null || next === undefined
    ? {}
    : typeof next === 'number'
      ? { [`${name}_offset`]: next }
      : { [`${name}_cursor`]: next };

/** One page of a Lane's Asks (no history): {lane, asks, next} where next is null at the end. */
export async function askPage(laneId, next, limit) {
  const r = await call('lane_get', {
    lane_id: laneId,
    include_history: false,
    asks_limit: limit,
    ...pageArg('asks', next),
  });
  return { lane: r.lane, asks: r.asks, next: nextOf(r.next_asks_offset, r.next_asks_cursor) };
}

/** Calls onPage for each page of Asks, the first one small so the first screen comes fast. */
export async function eachAskPage(laneId, onPage, isCancelled = () => false) {
  let next = null;
  let first = true;
  do {
    const page = await askPage(laneId, next, first ? FIRST_PAGE : PAGE);
    if (isCancelled()) return;
    onPage(page, first);
    first = false;
    next = page.next;
  } while (next);
}

/** Whether a claimed Ask's lease has run out by `now` (the daemon's word, or the clock's). */
export const leaseOver = (a, now) =>
  a.lease_expired || (a.lease_expires_at !== null && Date.parse(a.lease_expires_at) <= now);

/**
 * An Ask's column on the board: a claim whose lease ran out is open again (anyone may claim
 * it), also when it ran out while the page was open; a cancelled Ask is done with, beside the
 * answered ones (its card says cancelled). A state this page does not know (a newer daemon)
 * also lands there rather than breaking the board.
 */
export function columnOf(a, now = Date.now()) {
  if (a.state === 'claimed') return leaseOver(a, now) ? 'open' : 'claimed';
  return a.state === 'open' ? 'open' : 'answered';
}

export const byPriorityThenAge = (x, y) =>
  x.priority - y.priority || (x.posted_at < y.posted_at ? -1 : x.posted_at > y.posted_at ? 1 : 0);
