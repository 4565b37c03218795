import { describe, expect, it } from 'vitest';
import { AGENT, ALICE, call, memoryRepo, rejects } from '../helpers/core-fixture.js';

// Hardening 11.11, the filter side (found by the audit): posting a misspelled kind (`wrok`) is
// refused naming the valid kinds, but an agent asking for `kinds: ["wrok"]` was told "nothing
// to claim" forever (ask_query_claimable answered [], ask_claim_next null). A kind filter on a
// Lane names only kinds that Lane can hold; a kind the Lane or repo defines is accepted.

describe('kind filters refuse kinds the Lane does not define', () => {
  it('ask_query_claimable and ask_claim_next refuse `wrok`, naming the valid kinds', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', {
      lane_id: 'l',
      title: 'L',
      ask_kinds: { triage: 'member' },
    });
    await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: 'w' });
    for (const tool of ['ask_query_claimable', 'ask_claim_next'] as const) {
      const e = await rejects(
        call(repo, AGENT, tool, { lane_id: 'l', kinds: ['work', 'wrok'] }),
        'invalid_argument',
        /"wrok" is not an Ask kind of lane l; valid kinds: work, .*triage/,
      );
      expect(e.status).toBe(400);
      expect(e.details).toMatchObject({ field: 'kinds' });
    }
    // Kinds it defines (built in, or the Lane's own) still filter as before.
    const q = await call(repo, AGENT, 'ask_query_claimable', { lane_id: 'l', kinds: ['triage'] });
    expect(q.asks).toEqual([]);
    const c = await call(repo, AGENT, 'ask_claim_next', { lane_id: 'l', kinds: ['work'] });
    expect(c.ask?.title).toBe('w');
  });
});
