import { request } from 'node:http';
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
}, 150_000);
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

/** The status and content type a GET of the event stream answers with (the stream is left). */
function openStream(path: string, headers: Record<string, string>) {
  const url = new URL(d.url);
  return new Promise<{ status: number; type: string }>((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, headers }, (res) => {
      resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']) });
      res.destroy();
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the event stream resumes from a cursor naming many Lanes', () => {
  it('takes back, as Last-Event-ID or ?cursor=, the cursor lane_events issued for 120 Lanes', async () => {
    // Lane ids of 60 characters: each Lane adds ~170 characters to the cursor.
    const ids = Array.from(
      { length: 120 },
      (_, i) => `${'l'.repeat(55)}-${String(i).padStart(4, '0')}`,
    );
    for (const lane_id of ids) {
      const r = await http.post(`/api/repos/${d.key}/tools/lane_propose`, {
        lane_id,
        title: lane_id,
      });
      expect(r.status).toBe(200);
    }
    const page = await http.post(`/api/repos/${d.key}/tools/lane_events`, { limit: 1 });
    expect(page.status).toBe(200);
    let cursor = page.json.result.next_cursor as string;
    // Page to the end: the cursor then names every Lane.
    for (;;) {
      const next = await http.post(`/api/repos/${d.key}/tools/lane_events`, {
        cursor,
        limit: 1000,
      });
      expect(next.status).toBe(200);
      cursor = next.json.result.next_cursor;
      if (next.json.result.events.length === 0) break;
    }
    // Past what node:http takes in headers by default (16 KiB), under the cursor's own cap.
    expect(cursor.length).toBeGreaterThan(16 * 1024);
    const token = (await d.token('owner@example.com')) as string;
    const path = `/api/repos/${d.key}/events`;
    const auth = { authorization: `Bearer ${token}` };
    expect(await openStream(path, { ...auth, 'last-event-id': cursor })).toEqual({
      status: 200,
      type: expect.stringMatching(/^text\/event-stream/),
    });
    expect(await openStream(`${path}?cursor=${cursor}`, auth)).toEqual({
      status: 200,
      type: expect.stringMatching(/^text\/event-stream/),
    });
  }, 120_000);
});
