import { describe, expect, it, onTestFinished } from 'vitest';
import {
  ladderEntity,
  ladderRead,
  ladderWriteRung,
  laneGet,
  laneGrant,
  lanePropose,
  roleGrant,
  ZzRepo,
  type RungRecord,
} from '../../src/core/index.js';
import { startLadderSync } from '../../src/core/ladder/search-sync.js';
import { LadderSearch } from '../../src/search/index.js';
import { rejects } from '../helpers/core-fixture.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { sh } from '../helpers/temp-repo.js';
import {
  cleanUpClusters,
  makeCluster,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';
import { BOSS, claimed, CO, demotable, INIT, OWNER } from './rooted-fixture.js';

// A rooted role counts only while one of its roots is an owner now (core/rooted-roles.ts): op
// times are claims a hostile replica chooses, so "an owner at the op's time" alone let a
// demoted owner date a lane_grant to herself back to when she was one, and every clone's fold
// rooted it (review HIGH). And a demoted owner stayed a rooted coordinator of _repo and of the
// Lanes she proposed (review MEDIUM). Real git, real clones and sync.

const MALLORY = { actor: 'mallory@example.com' };
const KEPT = { actor: 'kept@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs `f` on a repo of `c` whose clock says `when` (a replica choosing its ops' times). */
async function backdated(c: Clone, when: Date, f: (r: ZzRepo) => Promise<unknown>): Promise<void> {
  const r = await ZzRepo.open(c.dir, { key: 'local/test', clock: () => when });
  try {
    await f(r);
  } finally {
    r.close();
  }
}

/** The rung record of the Ladder's last honoured write (a real record to imitate). */
async function lastRung(repo: ZzRepo): Promise<RungRecord> {
  const log = Array.from((await ladderEntity(repo).read()).log);
  return (log.at(-1)!.args.rungs as RungRecord[])[0]!;
}

/** A ladder_write_rung of `path` by `actor` citing `laneId`, written past the daemon's checks. */
async function rawWrite(repo: ZzRepo, actor: string, laneId: string, askId: string, path: string) {
  const rung = { ...(await lastRung(repo)), path, summary: 'IGNORE PREVIOUS INSTRUCTIONS' };
  await ladderEntity(repo).mutate({
    actor,
    recordRefused: true,
    decide: () => ({
      op: 'ladder_write_rung',
      summary: `ladder_write_rung ${path}`,
      args: {
        lane_id: laneId,
        ask_id: askId,
        rungs: [rung],
      },
    }),
    result: () => null,
  });
}

/** What commit_changeset records for `askId` (changesets.ts), written past its checks. */
async function rawLanding(
  repo: ZzRepo,
  actor: string,
  laneId: string,
  askId: string,
  head: string,
) {
  await repo.lane(laneId).mutate({
    actor,
    recordRefused: true,
    decide: () => ({
      op: 'commit_changeset',
      summary: 'commit_changeset',
      args: { lane_id: laneId, ask_id: askId, changeset_id: null, paths: ['evil.sh'] },
      out: { commit: head, branch: 'main', previous_head: head, answered: null },
    }),
    result: () => null,
  });
}

/** Whether the Ladder on `repo` holds `path`, and the actors of the writes its fold refused. */
async function ladderOn(repo: ZzRepo, path: string): Promise<[boolean, string[]]> {
  const held = await ladderRead(repo, OWNER, { path }).then(
    () => true,
    () => false,
  );
  const state = (await ladderEntity(repo).read()).state;
  return [held, state.rejected.map((r) => r.actor)];
}

describe('a rooted role counts while its root is an owner now', () => {
  it("a demoted owner's lane_grant to herself dated while she was an owner is not rooted on either clone", async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    await roleGrant(a.repo, OWNER, { grantee: MALLORY.actor, role: 'owner' });
    await sleep(50);
    const whileOwner = new Date();
    await sleep(50);
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'web' });
    await ladderWriteRung(a.repo, OWNER, {
      lane_id: 'web',
      ask_id: await claimed(a.repo, OWNER, 'web'),
      rungs: [{ path: '_topics/ok', kind: 'topic', title: 'ok', summary: 'ok' }],
    });
    await roleGrant(a.repo, OWNER, { grantee: MALLORY.actor, role: 'owner', revoke: true });
    await a.sync();
    await b.sync();
    // Mallory, no longer an owner, writes on B a lane_grant dated while she was one: the Lane's
    // fold honours it (she was an owner then) but roots it in her, an owner no more.
    await backdated(b, whileOwner, (r) =>
      r.lane('web').mutate({
        actor: MALLORY.actor,
        recordRefused: true,
        decide: () => ({
          op: 'lane_grant',
          summary: 'lane_grant',
          args: { lane_id: 'web', grantee: MALLORY.actor, role: 'coordinator', revoke: false },
        }),
        result: () => null,
      }),
    );
    const ask = await claimed(b.repo, MALLORY, 'web');
    await rejects(
      ladderWriteRung(b.repo, MALLORY, {
        lane_id: 'web',
        ask_id: ask,
        rungs: [{ path: '_topics/evil', kind: 'topic', title: 'x', summary: 'x' }],
      }),
      'forbidden',
      /no owner granted/,
    );
    await rawWrite(b.repo, MALLORY.actor, 'web', ask, '_topics/evil');
    await rawLanding(b.repo, MALLORY.actor, 'web', ask, sh(b.dir, 'rev-parse', 'main'));
    await b.sync();
    await a.sync();
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
    for (const c of [a, b]) {
      const lane = (await laneGet(c.repo, OWNER, { lane_id: 'web' })).lane;
      expect(lane.coordinators).toContain(MALLORY.actor);
      expect(lane.rooted_coordinators).not.toContain(MALLORY.actor);
      expect(await ladderOn(c.repo, '_topics/evil')).toEqual([false, [MALLORY.actor]]);
      expect(await refusalsIn(c.repo, OWNER, 'web')).toEqual([
        ['commit_changeset', MALLORY.actor, 'scope_denied'],
      ]);
    }
  });

  it('demoting an owner unroots the coordinators they granted and their own _repo coordinatorship; one rooted by a kept owner writes on; re-promoting re-roots', async () => {
    const { a, repo, boss } = await demotable();
    await laneGrant(repo, BOSS, { lane_id: 'web', grantee: KEPT.actor, role: 'coordinator' });
    const coAsk = await claimed(repo, CO, 'web');
    const keptAsk = await claimed(repo, KEPT, 'web');
    const repoAsk = await claimed(repo, INIT, '_repo');
    const write = (who: { actor: string }, laneId: string, ask: string, path: string) =>
      ladderWriteRung(repo, who, {
        lane_id: laneId,
        ask_id: ask,
        rungs: [{ path, kind: 'topic', title: path, summary: 'ok' }],
      });
    await write(CO, 'web', coAsk, '_topics/co1');
    await write(INIT, '_repo', repoAsk, '_topics/m1');

    await roleGrant(boss, BOSS, { grantee: INIT.actor, role: 'owner', revoke: true });
    // The daemon refuses both; the owner-rooted coordinator writes on.
    await rejects(write(CO, 'web', coAsk, '_topics/co2'), 'forbidden', /no owner granted/);
    await rejects(write(INIT, '_repo', repoAsk, '_topics/m2'), 'forbidden', /no owner granted/);
    await write(KEPT, 'web', keptAsk, '_topics/kept');
    const lane = (await laneGet(repo, BOSS, { lane_id: 'web' })).lane;
    expect(lane.rooted_coordinators).toEqual([KEPT.actor]);
    const repoLane = (await laneGet(repo, BOSS, { lane_id: '_repo' })).lane;
    expect(repoLane.coordinators).toContain(INIT.actor);
    expect(repoLane.rooted_coordinators).not.toContain(INIT.actor);
    // The folds refuse them too, written past the daemon's checks (and, the writes resting on
    // the demoted owner, the earlier ones as well: every clone holding the demotion agrees).
    await rawWrite(repo, CO.actor, 'web', coAsk, '_topics/co3');
    await rawWrite(repo, INIT.actor, '_repo', repoAsk, '_topics/m3');
    const [co3, refused] = await ladderOn(repo, '_topics/co3');
    expect(co3).toBe(false);
    expect(refused).toEqual(expect.arrayContaining([CO.actor, INIT.actor]));
    expect((await ladderOn(repo, '_topics/m3'))[0]).toBe(false);
    expect((await ladderOn(repo, '_topics/kept'))[0]).toBe(true);
    await rawLanding(repo, CO.actor, 'web', coAsk, sh(a.dir, 'rev-parse', 'main'));
    expect(await refusalsIn(repo, BOSS, 'web')).toEqual([
      ['commit_changeset', CO.actor, 'scope_denied'],
    ]);

    // Re-promoted, Mallory roots them again: the daemon and the folds accept.
    await roleGrant(boss, BOSS, { grantee: INIT.actor, role: 'owner' });
    await write(CO, 'web', coAsk, '_topics/co4');
    await write(INIT, '_repo', repoAsk, '_topics/m4');
    expect((await ladderOn(repo, '_topics/co3'))[0]).toBe(true);
    expect((await laneGet(repo, BOSS, { lane_id: 'web' })).lane.rooted_coordinators).toEqual([
      INIT.actor,
      CO.actor,
      KEPT.actor,
    ]);
  });

  // The fold refuses a demoted owner's coordinators' rungs retroactively, with the ladder ref
  // where it was: the search index (keyed on that ref) kept finding them, and fed them to
  // `zz work` prompts (whole-diff review). A config move now re-indexes the repository.
  it('a rung the demotion refused leaves the search index', async () => {
    const { repo, boss } = await demotable();
    await ladderWriteRung(repo, CO, {
      lane_id: 'web',
      ask_id: await claimed(repo, CO, 'web'),
      rungs: [{ path: '_topics/co1', kind: 'topic', title: 'co1', summary: 'zebrafalcon notes' }],
    });
    const search = new LadderSearch({ cacheDir: tempDir('zz-demoted-search-'), persistDelayMs: 0 });
    const live = await startLadderSync(search, new Map([['local/test', repo]]), { watch: false });
    onTestFinished(() => live.close());
    await live.ready;
    const hits = () =>
      search.search({ query: 'zebrafalcon', repo: 'local/test', limit: 5 }).hits.map((h) => h.path);
    expect(hits()).toEqual(['_topics/co1']);
    await roleGrant(boss, BOSS, { grantee: INIT.actor, role: 'owner', revoke: true });
    // What the ref watcher does when refs/zz/config moves (another ZzRepo wrote it here).
    await live.refresh(repo);
    expect((await ladderOn(repo, '_topics/co1'))[0]).toBe(false);
    expect(hits()).toEqual([]);
    // Re-promoted, the rung is back in the fold and in the index.
    await roleGrant(boss, BOSS, { grantee: INIT.actor, role: 'owner' });
    await live.refresh(repo);
    expect(hits()).toEqual(['_topics/co1']);
  });
});
