import { describe, expect, it } from 'vitest';
import { AGENT, ALICE, BOB, call, memoryRepo, OWNER, rejects } from '../helpers/core-fixture.js';

async function laneWithWork() {
  const { repo, clock } = await memoryRepo();
  await call(repo, ALICE, 'lane_propose', {
    lane_id: 'feat',
    title: 'Feature',
    maintainers: [BOB.actor],
  });
  const { ask } = await call(repo, ALICE, 'ask_post', {
    lane_id: 'feat',
    kind: 'work',
    title: 'Do it',
  });
  return { repo, clock, ask };
}

describe('lanes', () => {
  it('the proposer coordinates; _repo exists; lane_list and lane_get show shapes', async () => {
    const { repo } = await memoryRepo();
    const r = await call(repo, ALICE, 'lane_propose', {
      title: 'Auth',
      description: 'rework auth',
    });
    expect(r.lane.lane_id).toMatch(/^lane-[0-9a-f]{10}$/);
    expect(r.lane.coordinators).toEqual([ALICE.actor]);
    expect(r.lane.revision).toMatch(/^[0-9a-f]{40}$/);
    const list = await call(repo, BOB, 'lane_list', {});
    expect(list.lanes.map((l: { lane_id: string }) => l.lane_id).sort()).toEqual(
      ['_repo', r.lane.lane_id].sort(),
    );
    const got = await call(repo, BOB, 'lane_get', { lane_id: r.lane.lane_id });
    expect(got.lane.title).toBe('Auth');
    expect(got.history.map((h: { op: string }) => h.op)).toEqual(['lane_propose']);
    await rejects(call(repo, BOB, 'lane_get', { lane_id: 'nope' }), 'not_found');
    await rejects(
      call(repo, ALICE, 'lane_propose', { lane_id: r.lane.lane_id, title: 'x' }),
      'conflict',
    );
    await rejects(
      call(repo, ALICE, 'lane_propose', { lane_id: '_repo', title: 'x' }),
      'invalid_argument',
      /reserved/,
    );
  });

  it('refuses bad ids, unknown fields, wrong types and actor mismatches', async () => {
    const { repo } = await memoryRepo();
    await rejects(
      call(repo, ALICE, 'lane_propose', { lane_id: '../x', title: 'x' }),
      'invalid_argument',
      /lane_id/,
    );
    await rejects(
      call(repo, ALICE, 'lane_propose', { lane_id: '-x', title: 'x' }),
      'invalid_argument',
    );
    await rejects(
      call(repo, ALICE, 'lane_propose', { lane_id: 'a.lock', title: 'x' }),
      'invalid_argument',
    );
    await rejects(
      call(repo, ALICE, 'lane_propose', { title: 'x', bogus: 1 }),
      'invalid_argument',
      /unknown field "bogus"/,
    );
    await rejects(call(repo, ALICE, 'lane_propose', { title: 5 }), 'invalid_argument', /title/);
    await rejects(
      call(repo, ALICE, 'lane_propose', { title: 'x', actor: BOB.actor }),
      'forbidden',
      /token/,
    );
    await rejects(call(repo, ALICE, 'lane_propose', { title: 'x', from: BOB.actor }), 'forbidden');
    await rejects(call(repo, null, 'lane_propose', { title: 'x' }), 'unauthorized');
    expect((await call(repo, OWNER, 'lane_list', {})).lanes).toHaveLength(1);
  });

  it('lane_grant by coordinators and owners only; cannot drop the last coordinator', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'l', title: 'L' });
    await rejects(
      call(repo, BOB, 'lane_grant', { lane_id: 'l', grantee: BOB.actor, role: 'coordinator' }),
      'forbidden',
    );
    const g = await call(repo, OWNER, 'lane_grant', {
      lane_id: 'l',
      grantee: BOB.actor,
      role: 'maintainer',
    });
    expect(g.lane.maintainers).toContain(BOB.actor);
    await rejects(
      call(repo, ALICE, 'lane_grant', {
        lane_id: 'l',
        grantee: ALICE.actor,
        role: 'coordinator',
        revoke: true,
      }),
      'conflict',
      /last coordinator/,
    );
  });

  it('lane_add_related links lanes; role_grant is for owners', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'a', title: 'A' });
    await call(repo, BOB, 'lane_propose', { lane_id: 'b', title: 'B', related_lanes: ['a'] });
    // Only a's coordinators (or an owner) write a's list: Bob coordinates b, not a.
    await rejects(
      call(repo, BOB, 'lane_add_related', { lane_id: 'a', related_lane_id: 'b' }),
      'forbidden',
      /only the coordinators of lane a/,
    );
    const r = await call(repo, ALICE, 'lane_add_related', { lane_id: 'a', related_lane_id: 'b' });
    expect(r.lane.related_lanes).toEqual(['b']);
    await rejects(
      call(repo, BOB, 'lane_add_related', { lane_id: 'a', related_lane_id: 'zz' }),
      'not_found',
    );
    await rejects(
      call(repo, BOB, 'role_grant', { grantee: BOB.actor, role: 'owner' }),
      'forbidden',
    );
    const o = await call(repo, OWNER, 'role_grant', { grantee: BOB.actor, role: 'owner' });
    expect(o.owners).toEqual([OWNER.actor, BOB.actor]);
    await call(repo, BOB, 'role_grant', { grantee: OWNER.actor, role: 'owner', revoke: true });
    await rejects(
      call(repo, BOB, 'role_grant', { grantee: BOB.actor, role: 'owner', revoke: true }),
      'conflict',
      /last owner/,
    );
    const st = await call(repo, BOB, 'repo_state', {});
    expect(st.roles.owner).toBe(true);
    expect(st.roles.coordinator_of).toContain('b');
  });
});

describe('asks', () => {
  it('claim is exclusive, re-claim renews, release reopens', async () => {
    const { repo, clock, ask } = await laneWithWork();
    const c = await call(repo, BOB, 'ask_claim', {
      lane_id: 'feat',
      ask_id: ask.ask_id,
      lease_seconds: 60,
    });
    expect(c.ask.state).toBe('claimed');
    expect(c.ask.holder).toBe(BOB.actor);
    const e = await rejects(
      call(repo, AGENT, 'ask_claim', { lane_id: 'feat', ask_id: ask.ask_id }),
      'already_claimed',
      /bob@example.com/,
    );
    expect((e.details as { holder: string }).holder).toBe(BOB.actor);
    clock.advance(30);
    const renew = await call(repo, BOB, 'ask_claim', {
      lane_id: 'feat',
      ask_id: ask.ask_id,
      lease_seconds: 60,
    });
    expect(renew.renewed).toBe(true);
    expect(Date.parse(renew.ask.lease_expires_at!)).toBeGreaterThan(
      Date.parse(c.ask.lease_expires_at!),
    );
    await rejects(
      call(repo, AGENT, 'ask_release', { lane_id: 'feat', ask_id: ask.ask_id }),
      'forbidden',
    );
    const rel = await call(repo, BOB, 'ask_release', { lane_id: 'feat', ask_id: ask.ask_id });
    expect(rel.ask.state).toBe('open');
    await rejects(
      call(repo, BOB, 'ask_release', { lane_id: 'feat', ask_id: ask.ask_id }),
      'conflict',
    );
    await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: 'ask-0000000000' }),
      'not_found',
    );
    await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: 'ask-zz' }),
      'invalid_argument',
      /ask_id/,
    );
  });

  it('ask_release takes an optional bounded reason, recorded in the op and shown in history', async () => {
    const { repo, ask } = await laneWithWork();
    await call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: ask.ask_id });
    await rejects(
      call(repo, BOB, 'ask_release', {
        lane_id: 'feat',
        ask_id: ask.ask_id,
        reason: 'x'.repeat(2_001),
      }),
      'invalid_argument',
      /reason/,
    );
    await call(repo, BOB, 'ask_release', {
      lane_id: 'feat',
      ask_id: ask.ask_id,
      reason: 'model gave up: tests fail',
    });
    await call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: ask.ask_id });
    await call(repo, BOB, 'ask_release', { lane_id: 'feat', ask_id: ask.ask_id });
    const got = await call(repo, ALICE, 'lane_get', { lane_id: 'feat' });
    const releases = got.history.filter((h: { op: string }) => h.op === 'ask_release');
    expect(releases.map((h: { args: { reason?: string } }) => h.args.reason)).toEqual([
      'model gave up: tests fail',
      undefined,
    ]);
  });

  it('an expired lease makes the Ask claimable again, visibly in history; the old holder cannot answer', async () => {
    const { repo, clock, ask } = await laneWithWork();
    await call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: ask.ask_id, lease_seconds: 10 });
    expect((await call(repo, AGENT, 'ask_query_claimable', { lane_id: 'feat' })).asks).toHaveLength(
      0,
    );
    clock.advance(11);
    const q = await call(repo, AGENT, 'ask_query_claimable', { lane_id: 'feat' });
    expect(q.asks.map((a: { ask_id: string }) => a.ask_id)).toEqual([ask.ask_id]);
    expect(q.asks[0]!.lease_expired).toBe(true);
    await rejects(
      call(repo, BOB, 'ask_answer', {
        lane_id: 'feat',
        ask_id: ask.ask_id,
        outcome: 'complete',
        result: 'x',
      }),
      'conflict',
      /expired/,
    );
    const got = await call(repo, BOB, 'lane_get', { lane_id: 'feat' });
    expect(got.history.map((h: { op: string }) => h.op)).toContain('ask_lease_expired');
    const c = await call(repo, AGENT, 'ask_claim', { lane_id: 'feat', ask_id: ask.ask_id });
    expect(c.ask.holder).toBe(AGENT.actor);
    const hist = (await call(repo, BOB, 'lane_get', { lane_id: 'feat' })).history;
    const claim = hist.filter((h: { op: string }) => h.op === 'ask_claim').at(-1);
    expect(claim!.out!.expired_holder).toBe(BOB.actor);
    await rejects(
      call(repo, BOB, 'ask_answer', {
        lane_id: 'feat',
        ask_id: ask.ask_id,
        outcome: 'complete',
        result: 'x',
      }),
      'forbidden',
      /holder/,
    );
  });

  it('dependencies block claims; a denied dependency keeps dependents blocked and says so', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'd', title: 'D' });
    const a = (await call(repo, ALICE, 'ask_post', { lane_id: 'd', kind: 'work', title: 'A' })).ask;
    const b = (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'd',
        kind: 'work',
        title: 'B',
        depends_on: [a.ask_id],
      })
    ).ask;
    expect(b.blocked).toBe(true);
    expect(b.blocked_by).toEqual([{ ask_id: a.ask_id, state: 'open', outcome: null }]);
    await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'd', ask_id: b.ask_id }),
      'dependency_unresolved',
      /unresolved/,
    );
    expect(
      (await call(repo, BOB, 'ask_query_claimable', { lane_id: 'd' })).asks.map(
        (x: { ask_id: string }) => x.ask_id,
      ),
    ).toEqual([a.ask_id]);
    await call(repo, BOB, 'ask_claim', { lane_id: 'd', ask_id: a.ask_id });
    await call(repo, BOB, 'ask_answer', {
      lane_id: 'd',
      ask_id: a.ask_id,
      outcome: 'deny',
      result: 'cannot',
    });
    const e = await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'd', ask_id: b.ask_id }),
      'dependency_unresolved',
      /denied/,
    );
    expect(e.details).toEqual({
      blocked_by: [{ ask_id: a.ask_id, state: 'answered', outcome: 'deny' }],
    });
    await rejects(
      call(repo, ALICE, 'ask_post', {
        lane_id: 'd',
        kind: 'work',
        title: 'C',
        depends_on: ['ask-0123456789'],
      }),
      'not_found',
    );
    // a completed dependency unblocks
    const c = (await call(repo, ALICE, 'ask_post', { lane_id: 'd', kind: 'work', title: 'C' })).ask;
    const e2 = (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 'd',
        kind: 'work',
        title: 'E',
        depends_on: [c.ask_id],
      })
    ).ask;
    await call(repo, BOB, 'ask_claim', { lane_id: 'd', ask_id: c.ask_id });
    await call(repo, BOB, 'ask_answer', {
      lane_id: 'd',
      ask_id: c.ask_id,
      outcome: 'complete',
      result: 'ok',
    });
    expect(
      (await call(repo, BOB, 'ask_claim', { lane_id: 'd', ask_id: e2.ask_id })).ask.state,
    ).toBe('claimed');
  });

  it('claimable is ordered by priority then age and filtered by scope', async () => {
    const { repo, clock } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', {
      lane_id: 'p',
      title: 'P',
      ask_kinds: { triage: 'coordinator' },
    });
    const ids: string[] = [];
    for (const [title, priority] of [
      ['low', 4],
      ['high', 0],
      ['mid', 2],
      ['high2', 0],
    ] as const) {
      ids.push(
        (await call(repo, ALICE, 'ask_post', { lane_id: 'p', kind: 'work', title, priority })).ask
          .ask_id,
      );
      clock.advance(1);
    }
    await call(repo, ALICE, 'ask_post', { lane_id: 'p', kind: 'triage', title: 'coord only' });
    const titles = (await call(repo, BOB, 'ask_query_claimable', { lane_id: 'p' })).asks.map(
      (a: { title: string }) => a.title,
    );
    expect(titles).toEqual(['high', 'high2', 'mid', 'low']);
    const forAlice = (await call(repo, ALICE, 'ask_query_claimable', { lane_id: 'p' })).asks.map(
      (a: { title: string }) => a.title,
    );
    expect(forAlice).toContain('coord only');
  });

  it('scopes: reviews by maintainers only, coordinator kinds by coordinators only, outcomes per kind', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 's', title: 'S', maintainers: [BOB.actor] });
    const lu = (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 's',
        kind: 'ladder_update',
        title: 'refresh ladder',
      })
    ).ask;
    await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 's', ask_id: lu.ask_id }),
      'forbidden',
      /coordinators/,
    );
    await call(repo, ALICE, 'ask_claim', { lane_id: 's', ask_id: lu.ask_id });
    await rejects(
      call(repo, ALICE, 'ask_answer', { lane_id: 's', ask_id: lu.ask_id, outcome: 'grant' }),
      'invalid_argument',
      /complete or deny/,
    );
    await call(repo, ALICE, 'ask_answer', {
      lane_id: 's',
      ask_id: lu.ask_id,
      outcome: 'complete',
      result: 'done',
    });
    await rejects(
      call(repo, BOB, 'ask_post', { lane_id: 's', kind: 'changeset_review', title: 'x' }),
      'forbidden',
      /posted by the server/,
    );
    const rv = (
      await call(repo, ALICE, 'ask_post', {
        lane_id: 's',
        kind: 'changeset_review',
        title: 'review by hand',
      })
    ).ask;
    await rejects(
      call(repo, ALICE, 'ask_claim', { lane_id: 's', ask_id: rv.ask_id }),
      'forbidden',
      /maintainers/,
    );
    await call(repo, BOB, 'ask_claim', { lane_id: 's', ask_id: rv.ask_id });
    await rejects(
      call(repo, ALICE, 'ask_answer', { lane_id: 's', ask_id: rv.ask_id, outcome: 'grant' }),
      'forbidden',
    );
    const w = (await call(repo, ALICE, 'ask_post', { lane_id: 's', kind: 'work', title: 'w' })).ask;
    await call(repo, BOB, 'ask_claim', { lane_id: 's', ask_id: w.ask_id });
    await rejects(
      call(repo, BOB, 'ask_answer', { lane_id: 's', ask_id: w.ask_id, outcome: 'complete' }),
      'invalid_argument',
      /changeset or a result/,
    );
    await rejects(
      call(repo, BOB, 'ask_answer', { lane_id: 's', ask_id: w.ask_id, outcome: 'grant' }),
      'invalid_argument',
    );
    await call(repo, BOB, 'ask_answer', {
      lane_id: 's',
      ask_id: w.ask_id,
      outcome: 'deny',
      result: 'no',
    });
    await rejects(
      call(repo, BOB, 'ask_answer', { lane_id: 's', ask_id: w.ask_id, outcome: 'deny' }),
      'conflict',
      /already answered/,
    );
  });

  it('expected_revision and idempotency keys', async () => {
    const { repo, ask } = await laneWithWork();
    const rev = (await call(repo, BOB, 'lane_get', { lane_id: 'feat' })).lane.revision;
    await call(repo, ALICE, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'other' });
    const e = await rejects(
      call(repo, BOB, 'ask_claim', { lane_id: 'feat', ask_id: ask.ask_id, expected_revision: rev }),
      'revision_mismatch',
    );
    expect((e.details as { current_revision: string }).current_revision).toMatch(/^[0-9a-f]{40}$/);
    const p1 = await call(repo, ALICE, 'ask_post', {
      lane_id: 'feat',
      kind: 'work',
      title: 'once',
      idempotency_key: 'k1',
    });
    const p2 = await call(repo, ALICE, 'ask_post', {
      lane_id: 'feat',
      kind: 'work',
      title: 'once',
      idempotency_key: 'k1',
    });
    expect(p2.replayed).toBe(true);
    expect(p2.ask.ask_id).toBe(p1.ask.ask_id);
    await rejects(
      call(repo, ALICE, 'ask_post', {
        lane_id: 'feat',
        kind: 'work',
        title: 'different',
        idempotency_key: 'k1',
      }),
      'idempotency_conflict',
    );
    const l1 = await call(repo, ALICE, 'lane_propose', {
      title: 'same',
      idempotency_key: 'lane-key',
    });
    const l2 = await call(repo, ALICE, 'lane_propose', {
      title: 'same',
      idempotency_key: 'lane-key',
    });
    expect(l2.replayed).toBe(true);
    expect(l2.lane.lane_id).toBe(l1.lane.lane_id);
  });
});
