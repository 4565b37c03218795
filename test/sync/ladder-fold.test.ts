import { describe, expect, it } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import {
  askClaim,
  askPost,
  ladderBuild,
  ladderEntity,
  ladderRead,
  ladderTree,
  ladderWriteRung,
  laneGrant,
  lanePropose,
  type RungRecord,
} from '../../src/core/index.js';
import { LIMITS } from '../../src/schema/limits.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  rawLadderBuild,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// The Ladder's guarded fold (core/ladder/ladder-guards.ts), on real git with two clones and a
// real sync: ops on refs/zz/ladder written past the local tools' checks (an older zz, a
// hand-made commit) on one clone are refused by the fold on both, alike after a cold start;
// the valid ops beside them fold, reads keep working, and both clones end on the same refs.

const OWNER = { actor: 'owner@example.com' };
const CO = { actor: 'co@example.com' };
const MALLORY = { actor: 'mallory@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const record = (path: string, summary = `About ${path}.`): RungRecord => ({
  path,
  kind: 'topic',
  title: path,
  summary,
  inputs_hash: 'a'.repeat(40),
  generator: { method: 'human', version: '1' },
});

/** A ladder_write_rung written past ladderWriteRung's checks. */
async function rawWrite(repo: ZzRepo, actor: string, rungs: RungRecord[]): Promise<void> {
  await ladderEntity(repo).mutate({
    actor,
    // Written past the local checks, as another machine's zz may have: kept even if refused.
    recordRefused: true,
    decide: () => ({
      op: 'ladder_write_rung',
      summary: `ladder_write_rung ${rungs[0]!.path} (${rungs.length})`,
      args: { lane_id: 'web', ask_id: 'ask-0000000001', rungs },
    }),
    result: () => null,
  });
}

/** What a clone's Ladder holds: refusals (op, actor, reason) and the topic rungs. */
async function seen(repo: ZzRepo) {
  const state = (await ladderEntity(repo).read()).state;
  const tree = await ladderTree(repo, { under: '_topics' });
  return {
    rejected: state.rejected.map((r) => [r.op, r.actor, r.reason]),
    topics: tree.rungs.map((r) => r.path).filter((p) => p !== '_topics'),
  };
}

/** A Lane `web` coordinated by the owner and Co, with an Ask the owner holds, on both clones. */
async function setup(): Promise<{ a: Clone; b: Clone; askId: string }> {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: CO.actor, role: 'coordinator' });
  const ask = await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'docs' });
  await askClaim(a.repo, OWNER, { lane_id: 'web', ask_id: ask.ask.ask_id, lease_seconds: 3600 });
  await a.sync();
  await b.sync();
  return { a, b, askId: ask.ask.ask_id };
}

describe('the Ladder fold, by sync', () => {
  it('refuses a rung write by a non-coordinator and an over-cap write from another clone; the valid write beside them folds', async () => {
    const { a, b, askId } = await setup();
    // A writes through the tool (so the Ladder diverges); B, offline, past the tool's checks.
    await ladderWriteRung(a.repo, OWNER, {
      lane_id: 'web',
      ask_id: askId,
      rungs: [{ path: '_topics/from-a', kind: 'topic', title: 'A', summary: 'From A.' }],
    });
    await a.sync();
    await rawWrite(b.repo, MALLORY.actor, [record('_topics/hostile')]);
    const many = Array.from({ length: LIMITS.rungsPerWrite + 1 }, (_, i) =>
      record(`_topics/many-${i}`),
    );
    await rawWrite(b.repo, CO.actor, many);
    await rawWrite(b.repo, CO.actor, [record('_topics/from-co')]);
    await rawLadderBuild(b.repo, MALLORY.actor, [record('_topics/built')]);

    const report = await b.sync();
    expect(report.quarantined).toEqual([]);
    expect(report.merged.map((m) => m.ref)).toContain('refs/zz/ladder');
    const expected = [
      ['ladder_write_rung', MALLORY.actor, 'scope_denied'],
      ['ladder_write_rung', CO.actor, 'rungs_per_op'],
      ['ladder_build', MALLORY.actor, 'scope_denied'],
    ];
    expect(
      report.rejected
        .filter((r) => r.ref === 'refs/zz/ladder')
        .map((r) => [r.op, r.actor, r.reason]),
    ).toEqual(expected);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));

    for (const c of [a, b]) {
      for (const got of [await seen(c.repo), await onColdRepo(c, seen)]) {
        expect(got.rejected).toEqual(expected);
        expect(got.topics).toEqual(['_topics/from-a', '_topics/from-co']);
      }
      // Reads of the Ladder go on: one rung, and the refused ones are simply absent.
      const r = await ladderRead(c.repo, OWNER, { path: '_topics/from-co' });
      expect(r.rung.author).toBe(CO.actor);
      await expect(ladderRead(c.repo, OWNER, { path: '_topics/hostile' })).rejects.toMatchObject({
        code: 'not_found',
      });
    }
  });

  it('judges a write by the roles as they stood: a coordinator revoked before writing is refused', async () => {
    const { a, b, askId } = await setup();
    // A revokes Co and writes a rung; B, not having heard, lets Co write (past the tool, which
    // would refuse). B's sync brings the revocation and merges the Ladder in one round.
    await laneGrant(a.repo, OWNER, {
      lane_id: 'web',
      grantee: CO.actor,
      role: 'coordinator',
      revoke: true,
    });
    await ladderWriteRung(a.repo, OWNER, {
      lane_id: 'web',
      ask_id: askId,
      rungs: [{ path: '_topics/from-a', kind: 'topic', title: 'A', summary: 'From A.' }],
    });
    await a.sync();
    await rawWrite(b.repo, CO.actor, [record('_topics/late')]);
    const report = await b.sync();
    expect(report.merged.map((m) => m.ref)).toContain('refs/zz/ladder');
    expect(
      report.rejected.filter((r) => r.ref === 'refs/zz/ladder').map((r) => [r.actor, r.reason]),
    ).toEqual([[CO.actor, 'scope_denied']]);
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      expect(await onColdRepo(c, seen)).toEqual({
        rejected: [['ladder_write_rung', CO.actor, 'scope_denied']],
        topics: ['_topics/from-a'],
      });
    }
  });

  it(`holds at most LIMITS.ladderRungs rungs, from anywhere; the local tools refuse the same`, async () => {
    const { a, b, askId } = await setup();
    // The cap lowered for the test (500,000 rungs are too many to write here); both clones
    // live in this process, so both judge by it.
    const cap = LIMITS.ladderRungs;
    (LIMITS as { ladderRungs: number }).ladderRungs = 3;
    try {
      await rawWrite(b.repo, OWNER.actor, [record('_topics/one'), record('_topics/two')]);
      await rawWrite(b.repo, OWNER.actor, [record('_topics/three'), record('_topics/four')]);
      await rawWrite(b.repo, OWNER.actor, [record('_topics/one', 'Rewritten.')]);
      await b.sync();
      await a.sync();
      expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
      for (const c of [a, b]) {
        expect(await onColdRepo(c, seen)).toEqual({
          rejected: [['ladder_write_rung', OWNER.actor, 'ladder_full']],
          topics: ['_topics/one', '_topics/two'],
        });
      }
      // Locally: a write past the cap is refused with a clear code, and leaves the ref alone.
      const before = zzRefs(a.dir);
      await expect(
        ladderWriteRung(a.repo, OWNER, {
          lane_id: 'web',
          ask_id: askId,
          rungs: [
            { path: '_topics/x', kind: 'topic', title: 'x', summary: 'x.' },
            { path: '_topics/y', kind: 'topic', title: 'y', summary: 'y.' },
          ],
        }),
      ).rejects.toMatchObject({ code: 'payload_too_large' });
      expect(zzRefs(a.dir)).toEqual(before);
    } finally {
      (LIMITS as { ladderRungs: number }).ladderRungs = cap;
    }
  });

  it('a log citing many Lanes that do not exist: reads look none of them up', async () => {
    const { a } = await setup();
    // Refused writes (Mallory coordinates nothing) citing 40 Lane ids nobody made.
    const ghosts = Array.from({ length: 40 }, (_, i) => `ghost-${i}`);
    for (const id of ghosts) {
      await ladderEntity(a.repo).mutate({
        actor: MALLORY.actor,
        // Written past the local checks, as another machine's zz may have: kept even if refused.
        recordRefused: true,
        decide: () => ({
          op: 'ladder_write_rung',
          summary: `ladder_write_rung by ${MALLORY.actor}`,
          args: { lane_id: id, ask_id: 'ask-0000000001', rungs: [record(`_topics/${id}`)] },
        }),
        result: () => null,
      });
    }
    const looked = await onColdRepo(a, async (repo) => {
      const asked: string[] = [];
      const lane = repo.lane.bind(repo);
      repo.lane = (id: string) => (asked.push(id), lane(id));
      const r = await seen(repo);
      expect(r.topics).toEqual([]);
      expect(r.rejected.filter(([, actor]) => actor === MALLORY.actor)).toHaveLength(40);
      return asked;
    });
    expect(looked.filter((id) => id.startsWith('ghost-'))).toEqual([]);
  });

  it('refuses `zz ladder build` locally to an actor who is neither an owner nor a coordinator of _repo', async () => {
    const { a } = await setup();
    const before = zzRefs(a.dir);
    await expect(ladderBuild(a.repo, { actor: MALLORY.actor })).rejects.toMatchObject({
      code: 'forbidden',
    });
    expect(zzRefs(a.dir)).toEqual(before);
    expect((await ladderBuild(a.repo, { actor: OWNER.actor })).committed).toBe(true);
  });
});
