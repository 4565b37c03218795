import { describe, expect, it } from 'vitest';
import { ALICE, call, memoryRepo, OWNER, rejects } from '../helpers/core-fixture.js';

// Cursors as the tools hand them out and take them back (the codec itself: test/schema).

const b64 = (x: unknown) => Buffer.from(JSON.stringify(x)).toString('base64url');

describe('paging cursors through the tools', () => {
  it('lane_events across many Lanes: the cursor it answers is one it takes back', async () => {
    const { repo } = await memoryRepo();
    // Each Lane adds its position to the cursor: 120 Lanes with long ids is far past 4 KiB.
    for (let i = 0; i < 120; i++) {
      await call(repo, ALICE, 'lane_propose', {
        lane_id: `a-rather-long-lane-name-to-fill-the-cursor-${i}`,
        title: `Lane ${i}`,
      });
    }
    const all = (await call(repo, OWNER, 'lane_events', { limit: 5000 })).events.length;
    expect(all).toBeGreaterThan(120);
    const first = await call(repo, OWNER, 'lane_events', { limit: 50 });
    expect(first.events).toHaveLength(50);
    expect(first.next_cursor.length).toBeGreaterThan(4096);
    let cursor = first.next_cursor;
    let seen = first.events.length;
    for (;;) {
      const page = await call(repo, OWNER, 'lane_events', { cursor, limit: 50 });
      cursor = page.next_cursor;
      if (page.events.length === 0) break;
      seen += page.events.length;
    }
    expect(seen).toBe(all);
  });

  it('reads an events cursor from before the codec (clients keep them across upgrades)', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'web', title: 'Web' });
    await call(repo, ALICE, 'ask_post', { lane_id: 'web', kind: 'work', title: 'One' });
    // The bare JSON object older servers issued: a bare count means "this many ops seen".
    const old = await call(repo, OWNER, 'lane_events', {
      lane_id: 'web',
      cursor: b64({ web: 1 }),
    });
    expect(old.events.map((e) => e.op)).toEqual(['ask_post']);
    expect(old.next_cursor).not.toBe(b64({ web: 2 }));
  });

  it('refuses a cursor of another listing, or a forged one, with invalid_argument', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'web', title: 'Web' });
    for (let i = 0; i < 3; i++) {
      await call(repo, ALICE, 'ask_post', { lane_id: 'web', kind: 'work', title: `Ask ${i}` });
    }
    const got = await call(repo, ALICE, 'lane_get', {
      lane_id: 'web',
      asks_limit: 1,
      history_limit: 1,
    });
    const asks = got.next_asks_cursor!;
    const history = got.next_history_cursor!;
    expect(
      (await call(repo, ALICE, 'lane_get', { lane_id: 'web', asks_cursor: asks })).asks,
    ).toHaveLength(2);
    await rejects(
      call(repo, ALICE, 'lane_get', { lane_id: 'web', asks_cursor: history }),
      'invalid_argument',
      /^asks_cursor is a cursor of another listing \(it is a lane_history cursor\)/,
    );
    await rejects(
      call(repo, OWNER, 'lane_events', { cursor: asks }),
      'invalid_argument',
      /another listing/,
    );
    const asksWith = (c: string) =>
      call(repo, ALICE, 'lane_get', { lane_id: 'web', asks_cursor: c });
    const eventsWith = (c: string) => call(repo, OWNER, 'lane_events', { cursor: c });
    for (const p of [
      asksWith('garbage!'),
      asksWith(b64(['lane_asks', 1, -1])),
      asksWith(b64(['lane_asks', 2, 1])),
      eventsWith(b64(['lane_events', 1, { web: [1, 'nothex', null] }])),
      eventsWith(b64(['lane_events', 1, { 'Not A Lane': 1 }])),
      eventsWith(b64({ web: 'x' })),
    ]) {
      await rejects(p, 'invalid_argument', /cursor/);
    }
  });
});
