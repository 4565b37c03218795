import { afterEach, describe, expect, it } from 'vitest';
import { askClaim, askPost, lanePropose, type CommitEvent } from '../../src/core/index.js';
import {
  signAs,
  startAutoSync,
  type AutoSync,
  type SyncReport,
} from '../../src/core/sync/index.js';
import { ensureZzRefspec, generateSigningKey } from '../../src/git/index.js';
import { sh } from '../helpers/temp-repo.js';
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

  it('says once in its log what it holds back or quarantines, not every round', async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Cluster['clones'][0], Cluster['clones'][0]];
    await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    // Bob's key is registered nowhere: his op would be quarantined everywhere.
    signAs(b.repo, 'bob@example.com', generateSigningKey().key);
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
