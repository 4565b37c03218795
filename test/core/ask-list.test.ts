import { describe, expect, it } from 'vitest';
import {
  ALICE,
  BOB,
  call,
  memoryRepo,
  OWNER,
  rejects,
  ownerGrants,
} from '../helpers/core-fixture.js';

// Issue 13.11 (tool side): ask_list across Lanes, ask_get, ask_cancel, lane_close.

type Ask = { ask_id: string; title: string; state: string; lane_id: string };
const titles = (r: { asks: Ask[] }) => r.asks.map((a) => a.title);

async function twoLanes() {
  const { repo, clock } = await memoryRepo();
  await call(repo, ALICE, 'lane_propose', {
    lane_id: 'a',
    title: 'A',
    ask_kinds: { bug: 'member' },
  });
  await call(repo, BOB, 'lane_propose', { lane_id: 'b', title: 'B' });
  const post = async (who: typeof ALICE, lane: string, title: string, kind = 'work') => {
    clock.advance(1);
    return (await call(repo, who, 'ask_post', { lane_id: lane, kind, title })).ask as Ask;
  };
  const a1 = await post(ALICE, 'a', 'a1');
  const a2 = await post(BOB, 'a', 'a2', 'bug');
  const b1 = await post(BOB, 'b', 'b1');
  const b2 = await post(ALICE, 'b', 'b2');
  return { repo, clock, a1, a2, b1, b2 };
}

describe('ask_list and ask_get', () => {
  it('lists across Lanes with mine, state and kind filters, paged', async () => {
    const { repo, b1 } = await twoLanes();
    await call(repo, ALICE, 'ask_claim', { lane_id: 'b', ask_id: b1.ask_id });
    expect(titles(await call(repo, ALICE, 'ask_list', {}))).toEqual(['a1', 'a2', 'b1', 'b2']);
    // Mine: posted by ALICE (a1, b2) or held by her (b1).
    expect(titles(await call(repo, ALICE, 'ask_list', { mine: true }))).toEqual(['a1', 'b1', 'b2']);
    expect(titles(await call(repo, BOB, 'ask_list', { mine: true }))).toEqual(['a2', 'b1']);
    expect(titles(await call(repo, BOB, 'ask_list', { state: ['claimed'] }))).toEqual(['b1']);
    expect(titles(await call(repo, BOB, 'ask_list', { state: ['open'], lane_id: 'b' }))).toEqual([
      'b2',
    ]);
    expect(titles(await call(repo, BOB, 'ask_list', { kind: ['bug'] }))).toEqual(['a2']);
    const p1 = await call(repo, BOB, 'ask_list', { limit: 3 });
    expect(p1.total).toBe(4);
    expect(p1.next_offset).toBe(3);
    const p2 = await call(repo, BOB, 'ask_list', { limit: 3, offset: p1.next_offset });
    expect(titles(p2)).toEqual(['b2']);
    expect(p2.next_offset).toBeNull();
    await rejects(call(repo, null, 'ask_list', {}), 'unauthorized');
  });

  it('gets one Ask by id, with or without its Lane', async () => {
    const { repo, b2 } = await twoLanes();
    expect((await call(repo, BOB, 'ask_get', { ask_id: b2.ask_id })).ask.title).toBe('b2');
    expect(
      (await call(repo, BOB, 'ask_get', { ask_id: b2.ask_id, lane_id: 'b' })).ask.lane_id,
    ).toBe('b');
    await rejects(call(repo, BOB, 'ask_get', { ask_id: b2.ask_id, lane_id: 'a' }), 'not_found');
    await rejects(
      call(repo, BOB, 'ask_get', { ask_id: 'ask-0000000000' }),
      'not_found',
      /any lane/,
    );
  });
});

describe('ask_cancel', () => {
  it('its poster or a coordinator cancels; a cancelled Ask is never handed out again', async () => {
    const { repo, a1, a2, b2 } = await twoLanes();
    // BOB neither posted a1 nor coordinates lane a.
    await rejects(call(repo, BOB, 'ask_cancel', { lane_id: 'a', ask_id: a1.ask_id }), 'forbidden');
    // The poster cancels their own, even while someone holds it.
    await call(repo, BOB, 'ask_claim', { lane_id: 'b', ask_id: b2.ask_id });
    const c = await call(repo, ALICE, 'ask_cancel', {
      lane_id: 'b',
      ask_id: b2.ask_id,
      reason: 'not needed',
    });
    expect(c.ask.state).toBe('cancelled');
    expect(c.ask.holder).toBeNull();
    expect(c.ask.cancelled).toMatchObject({ by: ALICE.actor, reason: 'not needed' });
    // ALICE coordinates lane a: she cancels BOB's Ask there.
    await call(repo, ALICE, 'ask_cancel', { lane_id: 'a', ask_id: a2.ask_id });
    await rejects(call(repo, ALICE, 'ask_cancel', { lane_id: 'a', ask_id: a2.ask_id }), 'conflict');
    await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'a', ask_id: a2.ask_id }),
      'conflict',
      /cancelled/,
    );
    await rejects(
      call(repo, BOB, 'ask_answer', {
        lane_id: 'b',
        ask_id: b2.ask_id,
        outcome: 'complete',
        result: 'x',
      }),
      'conflict',
      /cancelled/,
    );
    const claimable = await call(repo, BOB, 'ask_query_claimable', { lane_id: 'a' });
    expect(titles(claimable)).toEqual(['a1']);
    expect((await call(repo, BOB, 'ask_claim_next', { lane_id: 'a' })).ask!.title).toBe('a1');
    // Nothing claimable on an open Lane says nothing of a closure.
    const none = await call(repo, BOB, 'ask_claim_next', { lane_id: 'a' });
    expect(none.ask).toBeNull();
    expect(none).not.toHaveProperty('lane_closed');
    // Recorded as an op; counted apart.
    const lane = await call(repo, BOB, 'lane_get', { lane_id: 'a' });
    expect(lane.history.map((h: { op: string }) => h.op)).toContain('ask_cancel');
    const list = await call(repo, BOB, 'lane_list', {});
    const counts = list.lanes.find((l: { lane_id: string }) => l.lane_id === 'a')!.counts;
    expect(counts).toMatchObject({ open: 0, claimed: 1, cancelled: 1, total: 2 });
  });
});

describe('lane_close', () => {
  it('a coordinator or owner closes a Lane: no new Asks, nothing to claim; held work finishes', async () => {
    const { repo, a1, a2 } = await twoLanes();
    await call(repo, BOB, 'ask_claim', { lane_id: 'a', ask_id: a1.ask_id });
    await rejects(call(repo, BOB, 'lane_close', { lane_id: 'a' }), 'forbidden');
    await rejects(call(repo, OWNER, 'lane_close', { lane_id: '_repo' }), 'forbidden');
    const closed = await call(repo, ALICE, 'lane_close', { lane_id: 'a', reason: 'shipped' });
    expect(closed.lane.closed).toMatchObject({ by: ALICE.actor, reason: 'shipped' });
    await rejects(call(repo, ALICE, 'lane_close', { lane_id: 'a' }), 'conflict', /closed/);
    await rejects(
      call(repo, ALICE, 'ask_post', { lane_id: 'a', kind: 'work', title: 'late' }),
      'conflict',
      /closed/,
    );
    await rejects(call(repo, BOB, 'ask_claim', { lane_id: 'a', ask_id: a2.ask_id }), 'conflict');
    // Nothing to claim, and the answer says why: who closed the Lane, when, why (zz work stops).
    expect(await call(repo, BOB, 'ask_claim_next', { lane_id: 'a' })).toMatchObject({
      ask: null,
      lane_closed: closed.lane.closed,
    });
    expect((await call(repo, BOB, 'ask_query_claimable', { lane_id: 'a' })).asks).toEqual([]);
    await call(repo, BOB, 'ask_answer', {
      lane_id: 'a',
      ask_id: a1.ask_id,
      outcome: 'complete',
      result: 'done',
    });
    // Recorded like any op, with who closed it.
    const history = (await call(repo, BOB, 'lane_get', { lane_id: 'a' })).history as Array<{
      op: string;
      actor: string;
    }>;
    expect(history.filter((h) => h.op === 'lane_close')).toEqual([
      expect.objectContaining({ op: 'lane_close', actor: ALICE.actor }),
    ]);
    // An owner may close any Lane.
    await call(repo, OWNER, 'lane_close', { lane_id: 'b' });
  });
});

describe('a claim on a closed Lane', () => {
  // Closing stops new work, not work in hand: the holder of a live claim renews, answers or
  // releases it; nobody takes a new claim, and a lease that ran out is not taken again.
  it('renews, answers and releases a live claim; refuses new and lapsed ones, saying why', async () => {
    const { repo, clock, a1, a2 } = await twoLanes();
    const a3 = (await call(repo, ALICE, 'ask_post', { lane_id: 'a', kind: 'work', title: 'a3' }))
      .ask as Ask;
    for (const a of [a1, a2, a3])
      await call(repo, BOB, 'ask_claim', { lane_id: 'a', ask_id: a.ask_id, lease_seconds: 60 });
    await call(repo, ALICE, 'lane_close', { lane_id: 'a', reason: 'shipped' });
    const closed =
      /lane a was closed by .* \(shipped\): it hands out no new claims, so ask ask-\w+ cannot be (claimed|answered); take work from an open Lane/;

    clock.advance(30);
    const renewed = await call(repo, BOB, 'ask_claim', {
      lane_id: 'a',
      ask_id: a1.ask_id,
      lease_seconds: 60,
    });
    expect(renewed.renewed).toBe(true);
    expect(Date.parse(renewed.ask.lease_expires_at!)).toBe(clock.now().getTime() + 60_000);
    // Another actor can neither take nor answer it, nor anything else on the Lane.
    const e = await rejects(
      call(repo, ALICE, 'ask_claim', { lane_id: 'a', ask_id: a1.ask_id }),
      'conflict',
      closed,
    );
    expect(e.details).toMatchObject({ lane_closed: true, closed: { reason: 'shipped' } });
    await rejects(
      call(repo, ALICE, 'ask_answer', { lane_id: 'a', ask_id: a1.ask_id, outcome: 'deny' }),
      'forbidden',
      /held by/,
    );
    await call(repo, BOB, 'ask_release', { lane_id: 'a', ask_id: a2.ask_id, reason: 'lane shut' });
    await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'a', ask_id: a2.ask_id }),
      'conflict',
      closed,
    );
    await rejects(
      call(repo, BOB, 'ask_answer', { lane_id: 'a', ask_id: a2.ask_id, outcome: 'deny' }),
      'conflict',
      closed,
    );

    // a3's lease (not renewed) runs out: BOB can no longer renew nor answer it.
    clock.advance(45);
    for (const [tool, args] of [
      ['ask_claim', {}],
      ['ask_answer', { outcome: 'complete', result: 'late' }],
    ] as const) {
      await rejects(
        call(repo, BOB, tool, { lane_id: 'a', ask_id: a3.ask_id, ...args }),
        'conflict',
        new RegExp(
          `your lease on ask ${a3.ask_id} ran out at .* a closed Lane hands out no new claims, so you can no longer ${tool === 'ask_claim' ? 'claim' : 'answer'} it; stop work on it`,
        ),
      );
    }
    // a1, renewed, is still BOB's to answer.
    const done = await call(repo, BOB, 'ask_answer', {
      lane_id: 'a',
      ask_id: a1.ask_id,
      outcome: 'complete',
      result: 'finished after the close',
    });
    expect(done.ask.state).toBe('answered');
    const states = (await call(repo, BOB, 'lane_get', { lane_id: 'a' })).asks as Ask[];
    expect(Object.fromEntries(states.map((a) => [a.title, a.state]))).toEqual({
      a1: 'answered',
      a2: 'open',
      a3: 'open', // a lapsed lease shows open, and a closed Lane hands it to nobody
    });
  });
});

describe('rungs citing an Ask on a closed Lane', () => {
  it('say the lapsed claim can no longer be worked, not "claim it again" (which the Lane refuses)', async () => {
    const { repo, clock } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'r', title: 'R' });
    await ownerGrants(repo, 'r', { coordinators: [ALICE] });
    const ask = (await call(repo, ALICE, 'ask_post', { lane_id: 'r', kind: 'work', title: 'up' }))
      .ask as Ask;
    await call(repo, ALICE, 'ask_claim', { lane_id: 'r', ask_id: ask.ask_id, lease_seconds: 60 });
    await call(repo, ALICE, 'lane_close', { lane_id: 'r', reason: 'done' });
    clock.advance(90);
    await rejects(
      call(repo, ALICE, 'ladder_write_rung', {
        lane_id: 'r',
        ask_id: ask.ask_id,
        rungs: [{ path: 'src', kind: 'directory', title: 'src', summary: 'The sources.' }],
      }),
      'conflict',
      new RegExp(
        `your lease on ask ${ask.ask_id} ran out at .* a closed Lane hands out no new claims, so you can no longer write rungs for it; stop work on it`,
      ),
    );
  });
});

describe('ask_list cursor while writes land', () => {
  // Found at scale (5,200 Asks, 16 agents claiming): an offset walk of `state: open` never
  // listed 195 Asks that stayed open throughout, and a walk while Asks were posted repeated 148.
  it('lists every Ask that stays open exactly once, with claims and posts between pages', async () => {
    const { repo, clock } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'a', title: 'A' });
    await call(repo, ALICE, 'lane_propose', { lane_id: 'b', title: 'B' });
    const ids: string[] = [];
    for (let i = 0; i < 40; i++) {
      clock.advance(1);
      const r = await call(repo, ALICE, 'ask_post', {
        lane_id: i % 2 ? 'b' : 'a',
        kind: 'work',
        title: `t${i}`,
        priority: i % 3,
      });
      ids.push((r.ask as Ask).ask_id);
    }
    const laneOf = (id: string) => (ids.indexOf(id) % 2 === 1 ? 'b' : 'a'); // urgent ones: a
    const seen: string[] = [];
    const claimed = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = (await call(repo, BOB, 'ask_list', {
        state: ['open'],
        limit: 5,
        ...(cursor ? { cursor } : {}),
      })) as { asks: Ask[]; next_cursor: string | null };
      seen.push(...r.asks.map((a) => a.ask_id));
      cursor = r.next_cursor ?? undefined;
      // Between pages: an agent claims two Asks already listed, and someone posts an urgent one.
      for (const id of seen.filter((x) => !claimed.has(x)).slice(0, 2)) {
        await call(repo, BOB, 'ask_claim', { lane_id: laneOf(id), ask_id: id });
        claimed.add(id);
      }
      clock.advance(1);
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'a',
        kind: 'work',
        title: 'urgent',
        priority: 0,
      });
      pages++;
    } while (cursor && pages < 100);
    expect(new Set(seen).size).toBe(seen.length);
    expect(ids.filter((id) => !seen.includes(id))).toEqual([]);
    await rejects(
      call(repo, BOB, 'ask_list', { cursor: 'garbage!' }),
      'invalid_argument',
      /cursor/,
    );
    const first = (await call(repo, BOB, 'ask_list', { limit: 1 })) as { next_cursor: string };
    await rejects(
      call(repo, BOB, 'ask_list', { cursor: first.next_cursor, offset: 1 }),
      'invalid_argument',
      /not both/,
    );
  });
});

describe('ask_query_claimable cursor', () => {
  // A frozen clock: every Ask is posted in the same millisecond at the same priority, so only
  // the id orders them. A page that ends between two of them must neither skip nor repeat one.
  it('pages Asks of one time and priority by id, with claims between pages, once each', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'a', title: 'A' });
    const ids: string[] = [];
    for (let i = 0; i < 23; i++) {
      ids.push(
        (
          (await call(repo, ALICE, 'ask_post', { lane_id: 'a', kind: 'work', title: `t${i}` }))
            .ask as Ask
        ).ask_id,
      );
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const r = await call(repo, BOB, 'ask_query_claimable', {
        lane_id: 'a',
        limit: 5,
        ...(cursor ? { cursor } : {}),
      });
      if (pages === 0) expect(r.total).toBe(23);
      seen.push(...r.asks.map((a) => a.ask_id));
      cursor = r.next_cursor ?? undefined;
      // ALICE claims the first Ask listed that she has not: the rest move up a place.
      const mine = seen[pages];
      if (mine) await call(repo, ALICE, 'ask_claim', { lane_id: 'a', ask_id: mine });
      pages++;
    } while (cursor && pages < 50);
    expect(seen).toEqual([...ids].sort());
  });
});

describe('ask_list paging across Lanes', () => {
  type Page = {
    asks: Ask[];
    total: number;
    next_cursor: string | null;
    next_offset: number | null;
  };
  async function manyLanes() {
    const { repo, clock } = await memoryRepo();
    for (const id of ['c', 'a', 'b'])
      await call(repo, ALICE, 'lane_propose', { lane_id: id, title: id });
    const posted: Array<Ask & { priority: number; kind: string }> = [];
    for (let i = 0; i < 30; i++) {
      clock.advance(1);
      const who = i % 4 === 0 ? BOB : ALICE;
      const r = await call(repo, who, 'ask_post', {
        lane_id: ['a', 'b', 'c'][i % 3],
        kind: i % 5 === 0 ? 'ladder_update' : 'work',
        title: `t${i}`,
        priority: (i * 7) % 4,
      });
      posted.push(r.ask);
    }
    for (const a of posted.filter((_, i) => i % 6 === 1))
      await call(repo, ALICE, 'ask_claim', { lane_id: a.lane_id, ask_id: a.ask_id });
    return { repo, clock };
  }

  // Every listing walked a few at a time, by cursor and by offset, is the whole list once, in
  // order (Lane, then priority, age, id): the cursor's place in its Lane is found by search
  // and the Lanes after it follow.
  it('walks each filtered listing whole, in order, by cursor and by offset', async () => {
    const { repo } = await manyLanes();
    for (const filters of [
      {},
      { state: ['open'] },
      { state: ['claimed'] },
      { state: ['open'], mine: true },
      { kind: ['ladder_update'] },
      { lane_id: 'b' },
      { mine: true },
    ]) {
      const whole = (await call(repo, BOB, 'ask_list', { ...filters, limit: 1000 })) as {
        asks: Ask[];
        total: number;
      };
      expect(whole.asks.length).toBe(whole.total);
      const ids = whole.asks.map((a) => a.ask_id);
      const byCursor: string[] = [];
      const byOffset: string[] = [];
      let cursor: string | null = null;
      let offset: number | null = 0;
      for (let pages = 0; pages < 50 && (pages === 0 || cursor || offset !== null); pages++) {
        if (pages === 0 || cursor) {
          const r: Page = await call(repo, BOB, 'ask_list', {
            ...filters,
            limit: 4,
            ...(cursor ? { cursor } : {}),
          });
          expect(r.total).toBe(whole.total);
          byCursor.push(...r.asks.map((a: Ask) => a.ask_id));
          cursor = r.next_cursor;
        }
        if (offset !== null) {
          const r: Page = await call(repo, BOB, 'ask_list', { ...filters, limit: 4, offset });
          byOffset.push(...r.asks.map((a: Ask) => a.ask_id));
          offset = r.next_offset;
        }
      }
      expect(byCursor, JSON.stringify(filters)).toEqual(ids);
      expect(byOffset, JSON.stringify(filters)).toEqual(ids);
    }
    // The order itself: Lanes by id, then priority, age and id.
    const all = (await call(repo, BOB, 'ask_list', { limit: 1000 })).asks as Array<
      Ask & { priority: number; posted_at: string }
    >;
    const key = (a: (typeof all)[number]) => [a.lane_id, a.priority, a.posted_at, a.ask_id];
    const sorted = [...all].sort((x, y) => {
      const [p, q] = [key(x), key(y)];
      for (let i = 0; i < 4; i++) if (p[i]! !== q[i]!) return p[i]! < q[i]! ? -1 : 1;
      return 0;
    });
    expect(all.map((a) => a.ask_id)).toEqual(sorted.map((a) => a.ask_id));
  });

  // Found in review: a cursor taken with lane_id a and passed with lane_id b gave an empty page
  // (or the whole list again), silently.
  it('refuses a cursor under other filters than its first page, saying so', async () => {
    const { repo } = await manyLanes();
    const first = await call(repo, BOB, 'ask_list', {
      lane_id: 'a',
      state: ['open', 'claimed'],
      limit: 2,
    });
    const cursor = first.next_cursor as string;
    for (const other of [
      { lane_id: 'b', state: ['open', 'claimed'] },
      { state: ['open', 'claimed'] },
      { lane_id: 'a', state: ['open'] },
      { lane_id: 'a', state: ['open', 'claimed'], mine: true },
      { lane_id: 'a', state: ['open', 'claimed'], kind: ['work'] },
    ]) {
      await rejects(
        call(repo, BOB, 'ask_list', { ...other, cursor }),
        'invalid_argument',
        /^cursor is from an ask_list with other filters/,
      );
    }
    // The same filters, given in another order, continue it.
    const next = await call(repo, BOB, 'ask_list', {
      state: ['claimed', 'open', 'open'],
      lane_id: 'a',
      limit: 2,
      cursor,
    });
    expect(next.asks.map((a: Ask) => a.lane_id)).toEqual(['a', 'a']);
    expect(next.asks[0]!.ask_id).not.toBe(first.asks[1]!.ask_id);
  });
});
