import { describe, expect, it } from 'vitest';
import {
  askPost,
  laneEvents,
  lanePropose,
  type LaneEvent,
  type ZzRepo,
} from '../../src/core/index.js';
import { cleanUpClusters, makeCluster, type Cluster } from './git-cluster.js';
import { readEventStream, type StreamedCommit } from './sse-reader.js';

// A cursor taken before a sync merge: the merge folds the remote ops ahead of the local-only
// ones, so "the first n ops of the Lane" names a different set afterwards. Every op of the
// merged log must still reach the caller exactly once, through lane_events and through SSE.

const OWNER = { actor: 'owner@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

const key = (e: { revision: string; lamport: number; actor: string; op: string }) =>
  `${e.revision}/${e.lamport}/${e.actor}/${e.op}`;

async function logKeys(repo: ZzRepo, lane: string): Promise<string[]> {
  const { log } = await repo.lane(lane).read();
  return log.map(key).sort();
}

/** Drains lane_events from `cursor` in pages of `limit`. */
async function drain(repo: ZzRepo, cursor: string | undefined, limit: number) {
  const got: LaneEvent[] = [];
  for (;;) {
    const page = await laneEvents(repo, OWNER, { cursor, limit });
    cursor = page.next_cursor;
    if (page.events.length === 0) return { got, cursor };
    got.push(...page.events);
  }
}

async function diverge(c: Cluster) {
  const [a, b] = c.clones as [Cluster['clones'][0], Cluster['clones'][0]];
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await a.sync();
  await b.sync();
  return { a, b };
}

describe('event cursors across a sync merge (real git, two clones)', () => {
  for (const limit of [500, 1]) {
    it(`a long-poll waiting through the merge gets the remote ops once, nothing repeated (pages of ${limit})`, async () => {
      cluster = await makeCluster(2);
      const { a, b } = await diverge(cluster);
      const seen: LaneEvent[] = [];
      let cursor = (await drain(b.repo, (await laneEvents(b.repo, OWNER, {})).next_cursor, limit))
        .cursor;
      let got: LaneEvent[];
      // Offline on both; b's consumer reads b's own ops first.
      for (let i = 0; i < 3; i++)
        await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: `a${i}` });
      for (let i = 0; i < 2; i++)
        await askPost(b.repo, OWNER, { lane_id: 'web', kind: 'work', title: `b${i}` });
      ({ got, cursor } = await drain(b.repo, cursor, limit));
      seen.push(...got);
      expect(got.map((e) => e.args.title)).toEqual(['b0', 'b1']);
      await a.sync();
      // The long-poll is waiting when the merge lands on b.
      const waiting = laneEvents(b.repo, OWNER, { cursor, wait_ms: 60_000, limit });
      const report = await b.sync();
      expect(report.merged.map((m) => m.ref)).toEqual(['refs/zz/lanes/web']);
      const first = await waiting;
      expect(first.events.length).toBeGreaterThan(0);
      seen.push(...first.events);
      ({ got, cursor } = await drain(b.repo, first.next_cursor, limit));
      seen.push(...got);
      // The remote ops now precede b's in the log…
      const titles = (await b.repo.lane('web').read()).log.map((o) => o.args.title ?? o.op);
      expect(titles.indexOf('a0')).toBeLessThan(titles.indexOf('b0'));
      // …and the consumer got each op once: a's three after the merge, b's two before it.
      expect(seen.map((e) => e.args.title).sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'b1']);
      const mine = [
        ...(await drain(b.repo, (await laneEvents(b.repo, OWNER, {})).next_cursor, limit)).got,
      ];
      expect(mine).toEqual([]);
      // From scratch, the same cursor protocol yields the whole log exactly once.
      const all = (await drain(b.repo, undefined, limit)).got;
      expect(
        all
          .filter((e) => e.lane_id === 'web')
          .map(key)
          .sort(),
      ).toEqual(await logKeys(b.repo, 'web'));
      // Later ops still arrive after the re-based cursor.
      await askPost(b.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'after' });
      expect((await drain(b.repo, cursor, limit)).got.map((e) => e.args.title)).toEqual(['after']);
    });
  }

  it('an SSE stream open through the merge sends every op once', async () => {
    cluster = await makeCluster(2);
    const { a, b } = await diverge(cluster);
    const stream = readEventStream(b.repo, OWNER);
    const commits: StreamedCommit[] = [];
    const titles = () =>
      commits.flatMap((c) => c.ops.flatMap((o) => (o.args.title ? [String(o.args.title)] : [])));
    const want = (n: number) => stream.until(commits, () => titles().length >= n);
    await new Promise((r) => setImmediate(r));
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'a0' });
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'a1' });
    await askPost(b.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'b0' });
    await want(1);
    await a.sync();
    await b.sync();
    await askPost(b.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'b1' });
    await want(4);
    stream.close();
    // b1 arrived last, so had anything been repeated it would show up before it.
    expect(titles().sort()).toEqual(['a0', 'a1', 'b0', 'b1']);
  });
});
