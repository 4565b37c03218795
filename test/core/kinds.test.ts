import { describe, expect, it } from 'vitest';
import { ALICE, call, memoryRepo, rejects } from '../helpers/core-fixture.js';

// Issue 11.11: a kind neither built in nor defined by the repo or the Lane is refused, naming
// the valid kinds.

describe('Ask kinds', () => {
  it('a misspelled kind is refused naming built-in, repo and Lane kinds', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', {
      lane_id: 'l',
      title: 'L',
      ask_kinds: { triage: 'member' },
    });
    const e = await rejects(
      call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'wrok', title: 'typo' }),
      'invalid_argument',
      /"wrok" is not an Ask kind of lane l; valid kinds: work, changeset_review, .*triage/,
    );
    expect(e.details).toMatchObject({ field: 'kind' });
    expect((e.details as { valid_kinds: string[] }).valid_kinds).toContain('ladder_update');
    // Defined kinds are accepted; another Lane's kinds are not this Lane's.
    await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'triage', title: 'ok' });
    await call(repo, ALICE, 'ask_post', { lane_id: 'l', kind: 'work', title: 'ok' });
    await call(repo, ALICE, 'lane_propose', { lane_id: 'm', title: 'M' });
    await rejects(
      call(repo, ALICE, 'ask_post', { lane_id: 'm', kind: 'triage', title: 'no' }),
      'invalid_argument',
      /valid kinds: work, changeset_review, submit_changeset, resolve_conflict, ladder_update \(/,
    );
    const lane = await call(repo, ALICE, 'lane_get', { lane_id: 'm' });
    expect(lane.asks).toHaveLength(0);
  });
});
