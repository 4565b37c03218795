import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { askClaim, askPost, laneGet, lanePropose } from '../../src/core/index.js';
import { formatMergeMessage, parseZzCommit } from '../../src/core/sync/index.js';
import {
  formatOpMessage,
  parseOpMessage,
  publicationOrder,
  type OpRecord,
} from '../../src/store/index.js';
import { sh } from '../helpers/temp-repo.js';
import {
  cleanUpClusters,
  makeCluster,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// The published-prefix property (DESIGN §7) on real git, in the schedule the property test
// (properties.test.ts, seed 999792686) shrank to: Alice's clone publishes Claude's claim;
// Mallory, who can push, wraps a rival lane_propose around it; Bob's clone, which had not seen
// the claim, answers the wrap; the ref is deleted; Alice's clone recreates it; Bob's clone,
// with a claim of its own, syncs again. Bob's answer once folded Mallory's op before the claim
// Alice had published (ours first, then the remote's ops by Lamport: the rival's clock of 1
// sorted first), and after the deletion that order, merged back over Alice's recreation, was
// taken by Alice's clone too: a forged op in a published op's place, on every clone.

const OWNER = { actor: 'owner@example.com' };
const CLAUDE = { actor: 'claude@example.com' };
const BOB = { actor: 'bob@example.com' };
const MALLORY = 'mallory@example.com';
const LANE = 'refs/zz/lanes/fresh';

let cluster: Cluster | null = null;
cleanUpClusters();

/** Op ids reachable from `tip` in `dir`, in publication order (what every clone folds). */
function publishedOps(dir: string, tip: string): string[] {
  const commits = sh(dir, 'rev-list', '--parents', tip)
    .split('\n')
    .map((line) => {
      const [oid, ...parents] = line.split(' ') as [string, ...string[]];
      return parseZzCommit({ oid, parents, message: sh(dir, 'log', '-1', '--format=%B', oid) });
    });
  return publicationOrder(commits, tip).map((o) => o.op.id);
}

function opsOf(dir: string, oid: string): OpRecord[] {
  const parsed = parseOpMessage(sh(dir, 'log', '-1', '--format=%B', oid));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.ops;
}

/**
 * What Mallory pushes with plain git, in the bare remote: a parentless lane_propose of `fresh`
 * by her, and a merge [rival, tip] over the remote's tip (a fast-forward: no force needed).
 */
function wrapOnRemote(remote: string, tip: string): { wrap: string; forged: string } {
  const root = sh(remote, 'rev-list', '--max-parents=0', tip);
  const forged = `forged${randomBytes(12).toString('hex')}`;
  const propose: OpRecord = { ...opsOf(remote, root)[0]!, id: forged, actor: MALLORY, lamport: 1 };
  const rival = sh(
    remote,
    'commit-tree',
    sh(remote, 'mktree'),
    '-m',
    formatOpMessage('lane_propose (forged)', [propose]),
  );
  const lamport = Math.max(...opsOf(remote, tip).map((o) => o.lamport)) + 1;
  const wrap = sh(
    remote,
    'commit-tree',
    `${tip}^{tree}`,
    '-p',
    rival,
    '-p',
    tip,
    '-m',
    formatMergeMessage('Merge', lamport),
  );
  sh(remote, 'update-ref', LANE, wrap, tip);
  return { wrap, forged };
}

/**
 * Alice's Lane `fresh` with two Asks, synced on both clones; then Claude's claim of the first,
 * published by Alice's clone (Bob's clone has not synced since), and Mallory's wrap of it.
 */
async function wrappedClaim() {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  const remote = cluster.remote;
  await lanePropose(a.repo, OWNER, { lane_id: 'fresh', title: 'Fresh' });
  const asks: string[] = [];
  for (const title of ['one', 'two']) {
    const posted = await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title });
    asks.push(posted.ask.ask_id);
  }
  await a.sync();
  expect((await b.sync()).adopted).toContain(LANE);
  await askClaim(a.repo, CLAUDE, { lane_id: 'fresh', ask_id: asks[0]!, lease_seconds: 900 });
  await a.sync();
  const published = sh(remote, 'rev-parse', LANE);
  const publishedOrder = publishedOps(remote, published);
  const { wrap, forged } = wrapOnRemote(remote, published);
  return { a, b, remote, asks, published, publishedOrder, wrap, forged };
}

describe('a wrap answered by a clone that had not seen the wrapped op, then the ref deleted', () => {
  it('what was published keeps its place before the forged op on every clone, and all converge', async () => {
    // Claude's claim, published by Alice's clone and wrapped by Mallory; Bob's clone, which
    // has not synced since, answers the wrap.
    const { a, b, remote, asks, published, publishedOrder, forged } = await wrappedClaim();
    const answered = await b.sync();
    expect(answered.quarantined).toEqual([]);
    expect(answered.merged.map((m) => m.rewritten?.wrapped)).toEqual([true]);
    // The answer folds Claude's published claim before Mallory's op, as the remote had
    // published it; Mallory's op is refused (the Lane exists).
    const answer = sh(remote, 'rev-parse', LANE);
    const answerOrder = publishedOps(remote, answer);
    expect(answerOrder.slice(0, publishedOrder.length)).toEqual(publishedOrder);
    expect(answerOrder.indexOf(forged)).toBe(publishedOrder.length);

    // The ref is deleted on the remote; Bob's clone claims the other Ask meanwhile.
    sh(remote, 'update-ref', '-d', LANE);
    await askClaim(b.repo, BOB, { lane_id: 'fresh', ask_id: asks[1]!, lease_seconds: 900 });
    // Alice's clone recreates what it had published.
    expect((await a.sync()).recreated).toEqual([LANE]);
    expect(sh(remote, 'rev-parse', LANE)).toBe(published);
    // Bob's clone holds it already: its work goes on top, nothing reordered.
    const rb = await b.sync();
    expect(rb.quarantined).toEqual([]);
    expect(rb.pushed).toEqual([LANE]);
    const after = sh(remote, 'rev-parse', LANE);
    expect(publishedOps(remote, after).slice(0, publishedOrder.length)).toEqual(publishedOrder);
    // Alice's clone takes it; all agree.
    const ra = await a.sync();
    expect(ra.quarantined).toEqual([]);
    expect(ra.fast_forwarded).toEqual([LANE]);
    expect(zzRefs(b.dir)).toEqual(zzRefs(a.dir));
    const final = publishedOps(a.dir, sh(a.dir, 'rev-parse', LANE));
    expect(final.slice(0, publishedOrder.length)).toEqual(publishedOrder);
    expect(final.indexOf(forged)).toBeGreaterThan(publishedOrder.length - 1);
    for (const c of [a, b]) {
      expect(await refusalsIn(c.repo, OWNER, 'fresh')).toEqual([
        ['lane_propose', MALLORY, 'lane_exists'],
      ]);
      const view = await laneGet(c.repo, OWNER, { lane_id: 'fresh' });
      expect(view.lane.coordinators).toEqual([OWNER.actor]);
      expect(view.asks.find((x) => x.ask_id === asks[0])?.holder).toBe(CLAUDE.actor);
      expect(view.asks.find((x) => x.ask_id === asks[1])?.holder).toBe(BOB.actor);
    }
    const idle = [await a.sync(), await b.sync()];
    expect(idle.map((r) => [r.merged, r.pushed, r.quarantined])).toEqual([
      [[], [], []],
      [[], [], []],
    ]);
  });
});

describe('a wrap answered by a clone with work of its own', () => {
  it('its ops go after the continuation the remote published, the rival after them; its lost claim is its own', async () => {
    const { a, b, remote, asks, published, publishedOrder, wrap, forged } = await wrappedClaim();
    // Bob's clone, not knowing of Claude's claim, claims the same Ask.
    await askClaim(b.repo, BOB, { lane_id: 'fresh', ask_id: asks[0]!, lease_seconds: 900 });
    const mine = sh(b.dir, 'rev-parse', LANE);
    const [bobClaim] = opsOf(b.dir, mine);
    const rb = await b.sync();
    expect(rb.quarantined).toEqual([]);
    expect(rb.merged).toEqual([
      {
        ref: LANE,
        commit: expect.any(String),
        local_ops: 1,
        rewritten: {
          synced: sh(a.dir, 'rev-parse', `${published}~1`),
          remote_ops: 1,
          wrapped: true,
        },
      },
    ]);
    // The answer is [[published, ours], wrap]: what the remote published, then Bob's claim
    // (lost: Claude's was published first), then Mallory's op (refused, the remote's).
    const answer = rb.merged[0]!.commit;
    const [base, second] = sh(b.dir, 'rev-parse', `${answer}^1`, `${answer}^2`).split('\n');
    expect(second).toBe(wrap);
    expect(sh(b.dir, 'rev-parse', `${base}^1`, `${base}^2`).split('\n')).toEqual([published, mine]);
    expect(publishedOps(b.dir, answer)).toEqual([...publishedOrder, bobClaim!.id, forged]);
    expect(rb.claims_lost).toEqual([
      expect.objectContaining({ loser: BOB.actor, winner: CLAUDE.actor, op_id: bobClaim!.id }),
    ]);
    expect(rb.claims_lost[0]!.origin).toBeUndefined();
    expect(rb.rejected.map((r) => [r.op, r.actor, r.reason, r.origin])).toEqual([
      ['lane_propose', MALLORY, 'lane_exists', 'remote'],
    ]);
    expect(sh(remote, 'rev-parse', LANE)).toBe(answer);
    // Alice's clone, which published the claim, takes the answer as it is.
    expect((await a.sync()).fast_forwarded).toEqual([LANE]);
    expect(zzRefs(b.dir)).toEqual(zzRefs(a.dir));
    const view = await laneGet(a.repo, OWNER, { lane_id: 'fresh' });
    expect(view.asks.find((x) => x.ask_id === asks[0])?.holder).toBe(CLAUDE.actor);
  });
});

describe('a merge that folds what was published as a side of an older value', () => {
  it('[older value, published + forged claim] is quarantined by the clone that published the claim, and reported', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    const remote = cluster.remote;
    await lanePropose(a.repo, OWNER, { lane_id: 'fresh', title: 'Fresh' });
    const { ask } = await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title: 'one' });
    await a.sync();
    await b.sync();
    const older = sh(remote, 'rev-parse', LANE);
    await askClaim(a.repo, CLAUDE, { lane_id: 'fresh', ask_id: ask.ask_id, lease_seconds: 900 });
    await a.sync();
    const published = sh(remote, 'rev-parse', LANE);
    const [claude] = opsOf(remote, published);
    // Mallory's claim of the same Ask on the older value, with Claude's clock and an actor
    // that sorts first, merged with what was published and folded as a side of the older
    // value: [older, [published, forged]]. Plain fast-forwards, no force needed.
    const time = new Date().toISOString();
    const forgedClaim: OpRecord = {
      ...claude!,
      id: `forged${randomBytes(12).toString('hex')}`,
      actor: 'amy@example.com',
      time,
      args: { lane_id: 'fresh', ask_id: ask.ask_id, lease_seconds: 60 },
      out: { lease_expires_at: new Date(Date.parse(time) + 60_000).toISOString() },
    };
    const forged = sh(
      remote,
      'commit-tree',
      `${older}^{tree}`,
      '-p',
      older,
      '-m',
      formatOpMessage('ask_claim (forged)', [forgedClaim]),
    );
    const merge = (first: string, second: string, lamport: number) =>
      sh(
        remote,
        'commit-tree',
        `${published}^{tree}`,
        '-p',
        first,
        '-p',
        second,
        '-m',
        formatMergeMessage('Merge', lamport),
      );
    const side = merge(published, forged, claude!.lamport + 1);
    const wrap = merge(older, side, claude!.lamport + 2);
    sh(remote, 'update-ref', LANE, wrap, published);
    // Its fold puts the forged claim first: Claude's, published, would be lost.
    const order = publishedOps(remote, wrap);
    expect(order.indexOf(forgedClaim.id)).toBeLessThan(order.indexOf(claude!.id));

    // Alice's clone, which published Claude's claim, refuses it and says so; Claude keeps the
    // Ask, and her new work is not pushed over it.
    await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title: 'two' });
    const ra = await a.sync();
    expect(ra.fast_forwarded).toEqual([]);
    expect(ra.merged).toEqual([]);
    expect(ra.quarantined).toEqual([
      {
        ref: LANE,
        commit: wrap,
        reason: expect.stringContaining(`remote folds ops before what was synced at ${published}`),
      },
    ]);
    expect(ra.not_pushed).toEqual([
      { ref: LANE, commit: sh(a.dir, 'rev-parse', LANE), quarantined: wrap },
    ]);
    expect(sh(a.dir, 'rev-parse', `refs/zz-quarantine/origin/lanes/fresh`)).toBe(wrap);
    expect(sh(a.dir, 'rev-parse', `refs/zz-sync/origin/lanes/fresh`)).toBe(published);
    const view = await laneGet(a.repo, OWNER, { lane_id: 'fresh' });
    expect(view.asks.find((x) => x.ask_id === ask.ask_id)?.holder).toBe(CLAUDE.actor);
    expect(sh(remote, 'rev-parse', LANE)).toBe(wrap);
    // Judged again every round: refused again, nothing moves.
    const again = await a.sync();
    expect([again.quarantined.length, again.pushed, again.merged]).toEqual([1, [], []]);
    // A merge of that shape that keeps what was published as the prefix of its order (the
    // forged claim after Claude's) is an honest-looking fast-forward: taken.
    const late: OpRecord = { ...forgedClaim, actor: 'zed@example.com', id: `${forgedClaim.id}z` };
    const lateCommit = sh(
      remote,
      'commit-tree',
      `${older}^{tree}`,
      '-p',
      older,
      '-m',
      formatOpMessage('ask_claim (late)', [late]),
    );
    const kept = merge(
      older,
      merge(published, lateCommit, claude!.lamport + 1),
      claude!.lamport + 2,
    );
    const keptOrder = publishedOps(remote, kept);
    expect(keptOrder.indexOf(late.id)).toBeGreaterThan(keptOrder.indexOf(claude!.id));
    sh(remote, 'update-ref', LANE, kept, wrap);
    const rk = await a.sync();
    expect(rk.quarantined).toEqual([]);
    expect(rk.merged.map((m) => m.ref)).toEqual([LANE]);
    const after = await laneGet(a.repo, OWNER, { lane_id: 'fresh' });
    expect(after.asks.find((x) => x.ask_id === ask.ask_id)?.holder).toBe(CLAUDE.actor);
  });
});
