import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { encodeCursor, EVENTS_CURSOR_MAX_LENGTH, type Positions } from '../../src/core/events.js';
import { jsonClient, type JsonClient } from '../helpers/http-client.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';

// lane_events takes cursors up to 256 KiB (a position per Lane seen). A cursor comes back from
// the client, so it is input: a forged one as large as allowed must be refused after a look at
// its first bad entry, not after checking (and describing) every one of its thousands of
// entries on the daemon's event loop. The work is counted in regular-expression tests (what
// checking an id or a digest costs), not timed.

let d: TestDaemon;
let http: JsonClient;
beforeAll(async () => {
  d = await startTestDaemon({ prefix: 'zz-events-cursor-' });
  http = jsonClient(d.url, { token: await d.token('owner@example.com') });
}, 60_000);
afterAll(async () => {
  http?.close();
  await d?.close();
});
afterEach(() => vi.restoreAllMocks());

const forged = (payload: Record<string, unknown>, envelope = true) =>
  Buffer.from(JSON.stringify(envelope ? ['lane_events', 1, payload] : payload)).toString(
    'base64url',
  );

/** A payload of `n` entries, each made by `entry(i)`, whose encoding fits the cap. */
function many(n: number, entry: (i: number) => [string, unknown]): Record<string, unknown> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => entry(i)));
}

async function eventsWork(cursor: string) {
  expect(cursor.length).toBeLessThanOrEqual(EVENTS_CURSOR_MAX_LENGTH);
  const test = vi.spyOn(RegExp.prototype, 'test');
  const reply = await http.post(`/api/repos/${d.key}/tools/lane_events`, { cursor });
  const tests = test.mock.calls.length;
  test.mockRestore();
  return { reply, tests };
}

describe('lane_events cursors as large as allowed', () => {
  const cases: Array<[string, string]> = [
    ['every Lane id invalid', forged(many(15_000, (i) => [`L${i}`, 1]))],
    ['every position invalid', forged(many(4_000, (i) => [`l${i}`, [1, 'x', 'Q'.repeat(20)]]))],
    [
      'every position invalid, pre-codec form',
      forged(
        many(4_000, (i) => [`l${i}`, [1, 'x', 'Q'.repeat(20)]]),
        false,
      ),
    ],
  ];
  it.each(cases)('a forged cursor (%s) is refused after bounded work', async (_name, cursor) => {
    const { reply, tests } = await eventsWork(cursor);
    expect(reply.status).toBe(400);
    expect(reply.json.code).toBe('invalid_argument');
    // The request itself (routing, token, input schema) runs a few dozen; checking every entry
    // runs thousands.
    expect(tests).toBeLessThan(1_000);
  });

  it('a cursor naming 1,400 Lanes is still read', async () => {
    const d16 = '0123456789abcdef';
    const r = 'a'.repeat(40);
    const positions: Positions = {};
    for (let i = 0; i < 1_400; i++) {
      positions[`lane-${String(i).padStart(5, '0')}`] = { n: 1000, d: d16, r, s: [r, 5] };
    }
    const { reply } = await eventsWork(encodeCursor(positions));
    expect(reply.status).toBe(200);
    expect(reply.json.result.next_cursor).toEqual(expect.any(String));
  });
});
