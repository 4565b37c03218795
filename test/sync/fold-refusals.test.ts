import { describe, expect, it } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import {
  askAnswer,
  askClaim,
  askPost,
  laneGet,
  laneGrant,
  lanePropose,
} from '../../src/core/index.js';
import { formatSyncReport } from '../../src/cli/sync-command.js';
import type { LaneOp } from '../../src/schema/lane-ops.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// What the local tools refuse about dependencies and kinds, the guarded fold refuses too when it
// arrives by sync (DESIGN §7): ops written past the daemon's checks (an older zz, a modified
// client) are kept in the log, shown as refused, alike on every replica and after a cold start.
// And what a merge of two honest histories holds stands: the rules are upgrade-safe (a claim
// whose dependency a refused answer resolved, a post whose dependency's post a merge refused).

const OWNER = { actor: 'owner@example.com' };
const ALICE = { actor: 'alice@example.com' };
const BOB = { actor: 'bob@example.com' };
const CAROL = { actor: 'carol@example.com' };
const CO = { actor: 'co@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const refused = (repo: ZzRepo) => refusalsIn(repo, OWNER);

/** Refusals and Asks as a daemon started after the sync folds them from scratch. */
const cold = (c: Clone) =>
  onColdRepo(c, async (repo) => ({
    refused: await refused(repo),
    asks: (await laneGet(repo, OWNER, { lane_id: 'web' })).asks,
  }));

/** An op written past the daemon's checks (what an older zz or a modified client lets through). */
type Spec = Omit<LaneOp, 'id' | 'actor' | 'lamport' | 'time'>;

async function raw(repo: ZzRepo, actor: string, op: Spec | ((now: Date) => Spec)) {
  await repo.lane('web').mutate({
    actor,
    // Written past the local checks, as another machine's zz may have: kept even if refused.
    recordRefused: true,
    decide: (_s, meta) => {
      const o = typeof op === 'function' ? op(meta.now) : op;
      return { ...o, summary: `${o.op} (raw)` } as never;
    },
    result: () => null,
  });
}

const post = async (repo: ZzRepo, title: string, depends_on?: string[]) =>
  (await askPost(repo, OWNER, { lane_id: 'web', kind: 'work', title, depends_on })).ask.ask_id;

describe('the guarded fold, by sync: dependencies, kinds, outcomes', () => {
  it('refuses a claim of a blocked Ask (told as a lost claim); a claim a refused answer unblocked stands', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const dep = await post(a.repo, 'dep');
    const blocked = await post(a.repo, 'blocked', [dep]);
    const dep2 = await post(a.repo, 'dep2');
    const after2 = await post(a.repo, 'after2', [dep2]);
    await a.sync();
    await b.sync();
    // A: Alice claims dep2 and publishes it.
    await askClaim(a.repo, ALICE, { lane_id: 'web', ask_id: dep2, lease_seconds: 3600 });
    await a.sync();
    // B, offline: Bob claims dep2, completes it, and claims what it unblocked — all allowed on
    // B. The merge gives dep2 to Alice; Bob's answer is refused, but his claim of after2 was
    // honest and stands (refusing it would take back, on upgrade, claims that stand today).
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: dep2 });
    await askAnswer(b.repo, BOB, {
      lane_id: 'web',
      ask_id: dep2,
      outcome: 'complete',
      result: 'ok',
    });
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: after2 });
    // B, past the daemon's check: Carol claims an Ask whose dependency nobody answered.
    // Its lease ends 600 s after the op's own time, as the fold derives it (else lease_mismatch).
    await raw(b.repo, CAROL.actor, (now) => ({
      op: 'ask_claim',
      args: { lane_id: 'web', ask_id: blocked, lease_seconds: 600 },
      out: { lease_expires_at: new Date(now.getTime() + 600_000).toISOString(), renewed: false },
    }));
    const report = await b.sync();
    expect(report.claims_lost).toEqual([
      expect.objectContaining({ ask_id: dep2, loser: BOB.actor, reason: 'claim_lost' }),
      expect.objectContaining({
        ask_id: blocked,
        loser: CAROL.actor,
        reason: 'dependency_unresolved',
        blocked_by: [dep],
      }),
    ]);
    // `zz sync` says why, naming what blocks the Ask.
    expect(formatSyncReport(report)).toContain(
      `claim lost: ${blocked} in lanes/web — ${CAROL.actor} refused: it is blocked by ${dep}`,
    );
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    const expected = [
      ['ask_claim', BOB.actor, 'claim_lost'],
      ['ask_answer', BOB.actor, 'not_holder'],
      ['ask_claim', CAROL.actor, 'dependency_unresolved'],
    ];
    for (const c of [a, b]) {
      expect(await refused(c.repo)).toEqual(expected);
      const seen = await cold(c);
      expect(seen.refused).toEqual(expected);
      const holder = (id: string) => seen.asks.find((x) => x.ask_id === id)?.holder;
      expect([dep2, after2, blocked].map(holder)).toEqual([ALICE.actor, BOB.actor, null]);
    }
  });

  it('refuses an answer its Ask kind does not allow; the Ask stays claimed', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const w = await post(a.repo, 'w');
    await a.sync();
    await b.sync();
    await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: w });
    // `grant` answers a changeset_review, never a work Ask (kinds.ts).
    await raw(b.repo, BOB.actor, {
      op: 'ask_answer',
      args: { lane_id: 'web', ask_id: w, outcome: 'grant', result: 'yes' },
      out: { follow_ups: [] },
    });
    // A posts meanwhile: B's sync merges, and the merge reports what its fold refused.
    await post(a.repo, 'other');
    await a.sync();
    const report = await b.sync();
    expect(report.rejected.map((r) => [r.op, r.reason, r.ask_id])).toEqual([
      ['ask_answer', 'outcome_not_allowed', w],
    ]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      const seen = await cold(c);
      expect(seen.refused).toEqual([['ask_answer', BOB.actor, 'outcome_not_allowed']]);
      expect(seen.asks.find((x) => x.ask_id === w)).toMatchObject({
        state: 'claimed',
        holder: BOB.actor,
        answer: null,
      });
    }
  });

  it('refuses a changeset on an answer that may not carry one and a work Ask completed with neither; the Asks stay claimed', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const [denied, empty, honest, landing] = [
      await post(a.repo, 'denied'),
      await post(a.repo, 'empty'),
      await post(a.repo, 'honest'),
      // A landing Ask, as a coordinator posts one by hand: commit_changeset answers it citing
      // the changeset it landed, never ask_answer with a changeset of its own.
      (await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'submit_changeset', title: 's' })).ask
        .ask_id,
    ];
    await a.sync();
    await b.sync();
    for (const w of [denied, empty, honest])
      await askClaim(b.repo, BOB, { lane_id: 'web', ask_id: w });
    await askClaim(b.repo, OWNER, { lane_id: 'web', ask_id: landing });
    // Past the daemon's checks: a changeset on a denial, a work Ask completed with nothing,
    // a changeset made by the answer to a landing Ask.
    const changeset = { base: 'a'.repeat(40), message: 'm', paths: ['x.txt'] };
    await raw(b.repo, BOB.actor, {
      op: 'ask_answer',
      args: { lane_id: 'web', ask_id: denied, outcome: 'deny', result: 'no', changeset },
      out: { changeset_id: 'cs-00000000aa', follow_ups: [] },
    });
    await raw(b.repo, BOB.actor, {
      op: 'ask_answer',
      args: { lane_id: 'web', ask_id: empty, outcome: 'complete', result: null },
      out: { follow_ups: [] },
    });
    await raw(b.repo, OWNER.actor, {
      op: 'ask_answer',
      args: { lane_id: 'web', ask_id: landing, outcome: 'complete', result: 'r', changeset },
      out: { changeset_id: 'cs-00000000bb', follow_ups: [] },
    });
    await askAnswer(b.repo, BOB, {
      lane_id: 'web',
      ask_id: honest,
      outcome: 'complete',
      result: 'done',
    });
    // A posts meanwhile: B's sync merges, and the merge reports what its fold refused.
    await post(a.repo, 'other');
    await a.sync();
    const report = await b.sync();
    expect(report.rejected.map((r) => [r.op, r.reason, r.ask_id])).toEqual([
      ['ask_answer', 'changeset_not_allowed', denied],
      ['ask_answer', 'result_missing', empty],
      ['ask_answer', 'changeset_not_allowed', landing],
    ]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      const seen = await cold(c);
      expect(seen.refused).toEqual([
        ['ask_answer', BOB.actor, 'changeset_not_allowed'],
        ['ask_answer', BOB.actor, 'result_missing'],
        ['ask_answer', OWNER.actor, 'changeset_not_allowed'],
      ]);
      const state = (id: string) => {
        const x = seen.asks.find((y) => y.ask_id === id)!;
        return [x.state, x.answer?.outcome ?? null];
      };
      expect([denied, empty, landing, honest].map(state)).toEqual([
        ['claimed', null],
        ['claimed', null],
        ['claimed', null],
        ['answered', 'complete'],
      ]);
    }
  });

  it('refuses a post of an unknown kind or on an unknown Ask; one on an Ask whose post a merge refused stands', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: CO.actor, role: 'coordinator' });
    await a.sync();
    await b.sync();
    // A: the owner revokes Co's coordinator role and publishes it.
    await laneGrant(a.repo, OWNER, {
      lane_id: 'web',
      grantee: CO.actor,
      role: 'coordinator',
      revoke: true,
    });
    await a.sync();
    // B, offline: Co still coordinates here, posts a review by hand and work that waits on it.
    // The merge refuses the review (scope_denied); the work was posted honestly and stands.
    const review = (
      await askPost(b.repo, CO, { lane_id: 'web', kind: 'changeset_review', title: 'r' })
    ).ask.ask_id;
    const waits = (
      await askPost(b.repo, CO, {
        lane_id: 'web',
        kind: 'work',
        title: 'waits',
        depends_on: [review],
      })
    ).ask.ask_id;
    // B, past the daemon's checks: a misspelt kind, and a dependency on no Ask at all.
    await raw(b.repo, OWNER.actor, {
      op: 'ask_post',
      args: { lane_id: 'web', kind: 'wrok', title: 'typo', posted_by: OWNER.actor },
      out: { ask_id: 'ask-00000000f1' },
    });
    await raw(b.repo, OWNER.actor, {
      op: 'ask_post',
      args: {
        lane_id: 'web',
        kind: 'work',
        title: 'orphan',
        depends_on: ['ask-00000000aa'],
        posted_by: OWNER.actor,
      },
      out: { ask_id: 'ask-00000000f2' },
    });
    const report = await b.sync();
    expect(report.rejected.map((r) => [r.op, r.reason, r.ask_id])).toEqual([
      ['ask_post', 'scope_denied', review],
      ['ask_post', 'kind_unknown', 'ask-00000000f1'],
      ['ask_post', 'dependency_not_found', 'ask-00000000f2'],
    ]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      const seen = await cold(c);
      expect(seen.refused).toEqual([
        ['ask_post', CO.actor, 'scope_denied'],
        ['ask_post', OWNER.actor, 'kind_unknown'],
        ['ask_post', OWNER.actor, 'dependency_not_found'],
      ]);
      const ids = seen.asks.map((x) => x.ask_id);
      expect(ids).toContain(waits);
      expect(ids).not.toContain(review);
      expect(ids).not.toContain('ask-00000000f1');
      expect(ids).not.toContain('ask-00000000f2');
    }
  });
});
