import { afterEach, describe, expect, it } from 'vitest';
import {
  askClaim,
  askPost,
  initRepo,
  lanePropose,
  repoState,
  roleGrant,
  ZzRepo,
  type CommitEvent,
} from '../../src/core/index.js';
import {
  ownersLostNotices,
  signAs,
  startAutoSync,
  type AutoSync,
  type SyncReport,
} from '../../src/core/sync/index.js';
import { ensureZzRefspec, generateSigningKey } from '../../src/git/index.js';
import type { GitStore } from '../../src/store/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// The daemon's own syncing: a plain `git fetch` that moves refs/zz-remotes/* is enough to
// bring work in, and an agent whose claim lost hears it on the commit stream.

let cluster: Cluster | null = null;
let auto: AutoSync | null = null;
afterEach(async () => {
  await auto?.close();
  auto = null;
  cluster?.cleanup();
  cluster = null;
});

describe('auto sync', () => {
  it('syncs after a plain git fetch and tells the loser of a claim on the stream', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
    const ask = (
      await askPost(
        a.repo,
        { actor: 'owner@example.com' },
        { lane_id: 'web', kind: 'work', title: 'x' },
      )
    ).ask;
    await a.sync();
    await b.sync();
    await askClaim(b.repo, { actor: 'bob@example.com' }, { lane_id: 'web', ask_id: ask.ask_id });
    await askClaim(a.repo, { actor: 'alice@example.com' }, { lane_id: 'web', ask_id: ask.ask_id });
    await a.sync();

    const reports: SyncReport[] = [];
    let onReport: () => void = () => {};
    const events: CommitEvent[] = [];
    b.repo.onCommit((e) => events.push(e));
    // Only the tracking-ref watcher can start this round: the timer is an hour away.
    auto = startAutoSync(new Map([['b', b.repo]]), {
      intervalMs: 3_600_000,
      watchMs: 50,
      onReport: (_r, rep) => {
        reports.push(rep);
        onReport();
      },
    });
    const done = new Promise<void>((resolve) => (onReport = resolve));
    // Once the watcher holds the current tracking refs, fetch as a person would.
    await auto.ready;
    await ensureZzRefspec(`${b.dir}/.git`, 'origin');
    sh(b.dir, 'fetch', '-q', 'origin');
    await done;
    expect(reports[0]!.claims_lost).toEqual([
      expect.objectContaining({
        ask_id: ask.ask_id,
        loser: 'bob@example.com',
        winner: 'alice@example.com',
      }),
    ]);
    const lost = events.flatMap((e) => e.ops).filter((o) => o.op === 'claim_lost');
    expect(lost).toEqual([
      expect.objectContaining({
        actor: 'bob@example.com',
        args: expect.objectContaining({ winner: 'alice@example.com' }),
      }),
    ]);
    expect(zzRefs(b.dir).get('refs/zz/lanes/web')).toBe(
      zzRefs(cluster.remote).get('refs/zz/lanes/web'),
    );
  });

  it('logs, as zz sync says it, every owner a round took away (two clones that each ran zz init)', async () => {
    cluster = await makeCluster(1);
    // A second clone initialised on its own before it ever synced: carol owns it, and has
    // made her agent an owner too.
    const { dir, cleanup } = makeRepo('zz-clone-carol-');
    sh(dir, 'remote', 'add', 'origin', cluster.remote);
    const carol = await ZzRepo.open(dir, { key: 'local/carol' });
    try {
      const { key } = generateSigningKey();
      signAs(carol, 'carol@example.com', key);
      await initRepo(carol, {
        owner: 'carol@example.com',
        default_branch: 'main',
        owner_keys: [key.publicKey],
      });
      const agent = 'carol@example.com[ci]';
      await roleGrant(carol, { actor: 'carol@example.com' }, { grantee: agent, role: 'owner' });
      const lines: string[] = [];
      const reports: SyncReport[] = [];
      auto = startAutoSync(new Map([['carol', carol]]), {
        intervalMs: 3_600_000,
        log: (l) => lines.push(l),
        onReport: (_r, rep) => reports.push(rep),
      });
      await auto.syncNow();
      expect(reports[0]!.owners_lost).toEqual({
        actors: ['carol@example.com', agent],
        owners: ['owner@example.com'],
        merged: true,
      });
      const notice = (who: string) =>
        `zz sync local/carol: after this sync ${who} is no longer an owner of local/carol ` +
        '(owners: owner@example.com; when two clones each ran `zz init`, the one that reached ' +
        `origin first stands); an owner can run: zz role grant --grantee ${who} --role owner`;
      expect(lines).toEqual([notice('carol@example.com'), notice(agent)]);
      // What repo_state (and the dashboard, which reads it) shows her agent now.
      expect((await repoState(carol, { actor: agent })).roles.owner).toBe(false);
      // A round that changes nothing more says nothing more.
      await auto.syncNow();
      expect(lines).toHaveLength(2);
    } finally {
      await auto?.close();
      auto = null;
      carol.close();
      cleanup();
    }
  });

  it('reports an owner revoked on another clone as a revocation, once', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    const owner = { actor: 'owner@example.com' };
    await roleGrant(a.repo, owner, { grantee: 'dan@example.com', role: 'owner' });
    await a.sync();
    expect((await b.sync()).owners_lost).toBeNull();
    await roleGrant(a.repo, owner, { grantee: 'dan@example.com', role: 'owner', revoke: true });
    await a.sync();
    const report = await b.sync();
    expect(report.fast_forwarded).toContain('refs/zz/config');
    expect(report.owners_lost).toEqual({
      actors: ['dan@example.com'],
      owners: ['owner@example.com'],
      merged: false,
    });
    expect(ownersLostNotices('k', report)).toEqual([
      'after this sync dan@example.com is no longer an owner of k (owners: owner@example.com; a revocation came from origin); an owner can run: zz role grant --grantee dan@example.com --role owner',
    ]);
    expect((await b.sync()).owners_lost).toBeNull();
  });

  it('says once in its log what it holds back or quarantines, not every round', async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    // Bob's key is registered nowhere: his op would be quarantined everywhere.
    signAs(b.repo, 'bob@example.com', generateSigningKey().key);
    // Written past the up-front check (signable.ts), as an older zz would have written it.
    (b.repo.store as GitStore).signsFor = null;
    await askPost(
      b.repo,
      { actor: 'bob@example.com' },
      { lane_id: 'web', kind: 'work', title: 'x' },
    );
    const lines: string[] = [];
    auto = startAutoSync(new Map([['b', b.repo]]), {
      intervalMs: 3_600_000,
      log: (l) => lines.push(l),
    });
    await auto.syncNow();
    await auto.syncNow();
    expect(lines).toEqual([
      expect.stringMatching(
        /^zz sync local\/test: not pushing refs\/zz\/lanes\/web \(commit [0-9a-f]{10}: op ask_post by bob@example\.com .*requires signatures\)/,
      ),
    ]);
  });
});
