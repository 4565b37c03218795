import { describe, expect, it } from 'vitest';
import { pageEnd } from '../../src/core/index.js';
import { laneCodec } from '../../src/core/lane-state.js';
import { LIMITS, PAGE, STORED_LIMITS } from '../../src/schema/index.js';
import type { ToolOutput } from '../../src/tools/index.js';
import { ALICE, BOB, call, memoryRepo, rejects } from '../helpers/core-fixture.js';

// Issue 11.3: every stored field is bounded (limits in schema/limits.ts), lane_get pages, and
// no page is built much past PAGE.maxBytes.

describe('bounded fields', () => {
  it('50 ask_posts with a 7.5 MB payload are each refused naming the field; nothing is stored', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    const payload = { blob: 'x'.repeat(7.5 * 1024 * 1024) };
    for (let i = 0; i < 50; i++) {
      await rejects(
        call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: `t${i}`, payload }),
        'invalid_argument',
        /payload must be at most 64 KiB as JSON/,
      );
    }
    const got = await call(repo, BOB, 'lane_get', { lane_id: 'l' });
    expect(got.asks).toHaveLength(0);
    expect(got.history.map((h: { op: string }) => h.op)).toEqual(['lane_propose']);
  });

  it('titles, bodies (in bytes), results and descriptions past their limits are refused', async () => {
    const { repo } = await memoryRepo();
    await rejects(
      call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 't'.repeat(LIMITS.title + 1) }),
      'invalid_argument',
      /title/,
    );
    await rejects(
      call(repo, ALICE, 'lane_propose', {
        lane_id: 'l',
        title: 't',
        description: 'd'.repeat(LIMITS.description + 1),
      }),
      'invalid_argument',
      /description/,
    );
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    // 4-byte characters: within the character count, past the byte limit.
    const body = '😀'.repeat(LIMITS.body / 4 + 1);
    await rejects(
      call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: 't', body }),
      'invalid_argument',
      /body must be at most 64 KiB/,
    );
    const { ask } = await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: 't' });
    await call(repo, BOB, 'ask_claim', { lane_id: 'l', ask_id: ask.ask_id });
    await rejects(
      call(repo, BOB, 'ask_answer', {
        lane_id: 'l',
        ask_id: ask.ask_id,
        outcome: 'complete',
        result: 'r'.repeat(LIMITS.result + 1),
      }),
      'invalid_argument',
      /result/,
    );
  });
});

describe('bounded lists and kinds', () => {
  it('a Lane takes at most LIMITS.askKinds custom kinds, in the tool and in a stored op', async () => {
    const { repo } = await memoryRepo();
    const kinds = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 'member']));
    await rejects(
      call(repo, ALICE, 'lane_propose', {
        lane_id: 'l',
        title: 'L',
        ask_kinds: kinds(LIMITS.askKinds + 1),
      }),
      'invalid_argument',
      /ask_kinds/,
    );
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L', ask_kinds: kinds(3) });
    const raw = (n: number) =>
      laneCodec.parse({
        id: 'op-1',
        op: 'lane_propose',
        actor: ALICE.actor,
        lamport: 1,
        time: new Date(0).toISOString(),
        args: { lane_id: 'l', title: 'L', ask_kinds: kinds(n) },
      }).ok;
    expect(raw(STORED_LIMITS.askKinds)).toBe(true);
    expect(raw(STORED_LIMITS.askKinds + 1)).toBe(false);
  });

  it('lane_grant and lane_add_related refuse to grow a list past LIMITS.list', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L', maintainers: [] });
    for (let i = 0; i < LIMITS.list; i++) {
      await call(repo, ALICE, 'lane_grant', {
        lane_id: 'l',
        grantee: `m${i}@example.com`,
        role: 'maintainer',
      });
      await call(repo, ALICE, 'lane_propose', { lane_id: `r${i}`, title: 'R' });
      await call(repo, ALICE, 'lane_add_related', { lane_id: 'l', related_lane_id: `r${i}` });
    }
    await rejects(
      call(repo, ALICE, 'lane_grant', { lane_id: 'l', grantee: BOB.actor, role: 'maintainer' }),
      'precondition_failed',
      /already has 100 maintainers/,
    );
    await call(repo, ALICE, 'lane_propose', { lane_id: 'extra', title: 'R' });
    await rejects(
      call(repo, ALICE, 'lane_add_related', { lane_id: 'l', related_lane_id: 'extra' }),
      'precondition_failed',
      /100 related lanes/,
    );
    const { lane } = await call(repo, BOB, 'lane_get', { lane_id: 'l' });
    expect(lane.maintainers).toHaveLength(LIMITS.list);
    expect(lane.related_lanes).toHaveLength(LIMITS.list);
  });
});

describe('lane_get pages', () => {
  // Found at scale: a plain lane_get of a 5,000-Ask Lane answered every Ask and history entry
  // (5 MB over HTTP, 14 MB as one MCP tool result, 10,000 lines from `zz lane get`).
  it('without limits answers the first PAGE.defaultLimit Asks and history entries, and says where to go on', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    for (let i = 0; i < PAGE.defaultLimit + 20; i++) {
      await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: `t${i}` });
    }
    const first: ToolOutput<'lane_get'> = await call(repo, BOB, 'lane_get', { lane_id: 'l' });
    expect(first.asks).toHaveLength(PAGE.defaultLimit);
    expect(first.history).toHaveLength(PAGE.defaultLimit);
    expect(first.next_asks_offset).toBe(PAGE.defaultLimit);
    expect(first.next_history_offset).toBe(PAGE.defaultLimit);
    const rest: ToolOutput<'lane_get'> = await call(repo, BOB, 'lane_get', {
      lane_id: 'l',
      asks_cursor: first.next_asks_cursor!,
      history_cursor: first.next_history_cursor!,
    });
    expect(rest.asks.map((a: { title: string }) => a.title)).toEqual(
      Array.from({ length: 20 }, (_, i) => `t${PAGE.defaultLimit + i}`),
    );
    expect(rest.history).toHaveLength(21);
    expect(rest.next_asks_offset).toBeNull();
  });

  it('Asks and history page by limit and offset; next_offset walks everything once', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    for (let i = 0; i < 23; i++) {
      await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: `t${i}` });
    }
    const asks: string[] = [];
    const history: string[] = [];
    let aOff: number | null = 0;
    let hOff: number | null = 0;
    let pages = 0;
    while (aOff !== null || hOff !== null) {
      const page: ToolOutput<'lane_get'> = await call(repo, BOB, 'lane_get', {
        lane_id: 'l',
        asks_limit: 5,
        asks_offset: aOff ?? 1_000_000,
        history_limit: 7,
        history_offset: hOff ?? 1_000_000,
      });
      expect(page.asks.length).toBeLessThanOrEqual(5);
      expect(page.history.length).toBeLessThanOrEqual(7);
      asks.push(...page.asks.map((a: { ask_id: string }) => a.ask_id));
      history.push(...page.history.map((h: { lamport: number }) => String(h.lamport)));
      aOff = page.next_asks_offset;
      hOff = page.next_history_offset;
      pages++;
    }
    expect(pages).toBe(5);
    expect(new Set(asks).size).toBe(23);
    expect(asks).toHaveLength(23);
    expect(history).toHaveLength(24);
    // The cursors encode the same offsets.
    const first = await call(repo, BOB, 'lane_get', { lane_id: 'l', asks_limit: 5 });
    const viaCursor = await call(repo, BOB, 'lane_get', {
      lane_id: 'l',
      asks_limit: 5,
      asks_cursor: first.next_asks_cursor,
    });
    expect(viaCursor.asks[0]!.ask_id).toBe(asks[5]);
    await rejects(
      call(repo, BOB, 'lane_get', {
        lane_id: 'l',
        asks_offset: 1,
        asks_cursor: first.next_asks_cursor,
      }),
      'invalid_argument',
    );
  });

  it('a page stops at the byte budget, but always holds one item', () => {
    const items = Array.from({ length: 10 }, (_, i) => ({ i, pad: 'x'.repeat(1000) }));
    expect(pageEnd(items, 0, undefined, 3500)).toBe(3); // the 4th would cross the budget
    expect(pageEnd(items, 4, 2, 3500)).toBe(6);
    expect(pageEnd(items, 9, undefined, 10)).toBe(10);
    expect(pageEnd(items, 0, undefined, 1)).toBe(1);
  });
});
