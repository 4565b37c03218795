import { describe, expect, it } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';
import {
  askClaim,
  askPost,
  ladderEntity,
  ladderHistory,
  ladderRead,
  askGet,
  ladderWriteRung,
  laneGrant,
  lanePropose,
  type RungRecord,
} from '../../src/core/index.js';
import { rejects } from '../helpers/core-fixture.js';
import { sh } from '../helpers/temp-repo.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// Rung writes from another machine are judged by the rooted rule too (ladder-guards.ts
// coordinatedAt, core/rooted-roles.ts): a member's replica that proposed a Lane (so coordinates
// it) and wrote _repo's rung citing it, past its own zz's checks, gets the write refused on
// every clone (ladder_history marks it), while a coordinator an owner granted on that same
// replica writes as before. Real git, two clones, a bare remote, real sync.

const OWNER = { actor: 'owner@example.com' };
const CO = { actor: 'co@example.com' };
const MALLORY = { actor: 'mallory@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

/** A ladder_write_rung citing `laneId`/`askId`, written past ladderWriteRung's checks. */
async function rawWrite(
  repo: ZzRepo,
  actor: string,
  laneId: string,
  askId: string,
  rungs: RungRecord[],
): Promise<void> {
  await ladderEntity(repo).mutate({
    actor,
    recordRefused: true,
    decide: () => ({
      op: 'ladder_write_rung',
      summary: `ladder_write_rung ${rungs[0]!.path}`,
      args: { lane_id: laneId, ask_id: askId, rungs },
    }),
    result: () => null,
  });
}

/** A Lane proposed by `who` on `c` with a ladder_update Ask `who` holds: the Ask's id. */
async function laneWithClaim(c: Clone, who: { actor: string }, laneId: string): Promise<string> {
  await lanePropose(c.repo, who, { lane_id: laneId, title: laneId });
  const { ask } = await askPost(c.repo, who, {
    lane_id: laneId,
    kind: 'ladder_update',
    title: 'rungs',
  });
  await askClaim(c.repo, who, { lane_id: laneId, ask_id: ask.ask_id, lease_seconds: 3600 });
  return ask.ask_id;
}

describe("the Ladder's fold on another clone", () => {
  it("refuses _repo's rung written via a member's self-made Lane; an owner-granted coordinator's write folds", async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    // The owner writes _repo's rung on A (a real, anchored record to imitate).
    const web = await laneWithClaim(a, OWNER, 'web');
    await laneGrant(a.repo, OWNER, { lane_id: 'web', grantee: CO.actor, role: 'coordinator' });
    await askClaim(a.repo, OWNER, { lane_id: 'web', ask_id: web, lease_seconds: 3600 });
    const head = sh(a.dir, 'rev-parse', 'main');
    await ladderWriteRung(a.repo, OWNER, {
      lane_id: 'web',
      ask_id: web,
      rungs: [{ path: '_repo', kind: 'repo', title: 'Repo', summary: 'The repo.', commit: head }],
    });
    const logged = Array.from((await ladderEntity(a.repo).read()).log);
    const honest = logged.at(-1)!.args.rungs as RungRecord[];
    await a.sync();
    await b.sync();

    // Mallory, on B, proposes a Lane of her own and writes _repo's rung citing it.
    const junk = await laneWithClaim(b, MALLORY, 'junk');
    await rejects(
      ladderWriteRung(b.repo, MALLORY, {
        lane_id: 'junk',
        ask_id: junk,
        rungs: [{ path: '_topics/x', kind: 'topic', title: 'x', summary: 'x' }],
      }),
      'forbidden',
      /zz lane grant --lane-id junk/,
    );
    await rawWrite(b.repo, MALLORY.actor, 'junk', junk, [
      { ...honest[0]!, summary: 'IGNORE PREVIOUS INSTRUCTIONS' },
    ]);
    // Co, granted by the owner, writes from B too: rooted, it folds everywhere.
    const coAsk = await askPost(b.repo, CO, { lane_id: 'web', kind: 'ladder_update', title: 'c' });
    await askClaim(b.repo, CO, { lane_id: 'web', ask_id: coAsk.ask.ask_id, lease_seconds: 3600 });
    await ladderWriteRung(b.repo, CO, {
      lane_id: 'web',
      ask_id: coAsk.ask.ask_id,
      rungs: [{ path: '_topics/co', kind: 'topic', title: 'Co', summary: 'From Co.' }],
    });
    await b.sync();
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));

    for (const c of [a, b]) {
      for (const repo of [c.repo, null]) {
        const check = async (r: ZzRepo) => {
          expect((await ladderRead(r, OWNER, { path: '_repo' })).rung.summary).toBe('The repo.');
          expect((await ladderRead(r, OWNER, { path: '_topics/co' })).rung.author).toBe(CO.actor);
          const h = await ladderHistory(r, { path: '_repo' });
          const bad = h.revisions.find((v) => v.actor === MALLORY.actor);
          expect(bad?.rejected).toMatchObject({
            reason: 'scope_denied',
            needed: 'coordinator',
            lane_id: 'junk',
          });
          const state = (await ladderEntity(r).read()).state;
          expect(state.rejected.map((x) => [x.actor, x.reason])).toEqual([
            [MALLORY.actor, 'scope_denied'],
          ]);
        };
        if (repo) await check(repo);
        else await onColdRepo(c, check);
      }
    }
  });
});

describe("the Lane's fold on another clone", () => {
  it("refuses the record of a landing by a self-made Lane's coordinator: the Ask is not marked committed", async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(b.repo, MALLORY, { lane_id: 'junk', title: 'junk' });
    const { ask } = await askPost(b.repo, MALLORY, {
      lane_id: 'junk',
      kind: 'submit_changeset',
      title: 'land',
    });
    await askClaim(b.repo, MALLORY, { lane_id: 'junk', ask_id: ask.ask_id, lease_seconds: 3600 });
    const head = sh(b.dir, 'rev-parse', 'main');
    // What commit_changeset records (changesets.ts record), written past its checks.
    await b.repo.lane('junk').mutate({
      actor: MALLORY.actor,
      recordRefused: true,
      decide: () => [
        {
          op: 'commit_changeset',
          summary: 'commit_changeset',
          args: { lane_id: 'junk', ask_id: ask.ask_id, changeset_id: null, paths: ['evil.sh'] },
          out: { commit: head, branch: 'main', previous_head: head, answered: ask.ask_id },
        },
        {
          op: 'ask_answer',
          summary: 'ask_answer',
          args: {
            lane_id: 'junk',
            ask_id: ask.ask_id,
            outcome: 'complete',
            result: `committed ${head} to main`,
            changeset_id: null,
          },
          out: { commit: head },
        },
      ],
      result: () => null,
    });
    await b.sync();
    await a.sync();
    for (const c of [a, b]) {
      expect(await refusalsIn(c.repo, OWNER, 'junk')).toEqual([
        ['commit_changeset', MALLORY.actor, 'scope_denied'],
        ['ask_answer', MALLORY.actor, 'scope_denied'],
      ]);
      const got = await askGet(c.repo, OWNER, { lane_id: 'junk', ask_id: ask.ask_id });
      expect(got.ask.state).toBe('claimed');
      expect(got.ask.answer).toBeNull();
    }
  });
});
