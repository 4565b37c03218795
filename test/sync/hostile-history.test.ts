import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { askAnswer, askClaim, askPost, laneGet, lanePropose } from '../../src/core/index.js';
import { formatSyncReport } from '../../src/cli/sync-command.js';
import { fastForwardFromRemotes } from '../../src/core/setup.js';
import { formatMergeMessage } from '../../src/core/sync/index.js';
import { formatOpMessage, parseOpMessage, type OpRecord } from '../../src/store/index.js';
import { sh } from '../helpers/temp-repo.js';
import {
  cleanUpClusters,
  makeCluster,
  refusalsIn,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// A peer who can push to the shared remote is untrusted (DESIGN §7): it may write any commit
// with plain git. What it pushes must not rewrite what was published (a rival history of a
// Lane, force-pushed), nor win a guard judged by time with an op dated in 2099, nor freeze a
// Lane silently once one of its tips is quarantined.

const OWNER = { actor: 'owner@example.com' };
const CLAUDE = { actor: 'claude@example.com' };
const BOB = 'bob@example.com';
const LANE = 'refs/zz/lanes/fresh';

let cluster: Cluster | null = null;
cleanUpClusters();

/** The ops of commit `oid` (in `dir`), as recorded. */
function opsOf(dir: string, oid: string): OpRecord[] {
  const parsed = parseOpMessage(sh(dir, 'log', '-1', '--format=%B', oid));
  if (!parsed.ok) throw new Error(parsed.error);
  return parsed.ops;
}

/** A commit written with plain git (no zz checks), on `parent` or as a root. */
function forge(dir: string, parent: string | null, ops: OpRecord[]): string {
  const tree = parent === null ? sh(dir, 'mktree') : `${parent}^{tree}`;
  const args = ['commit-tree', tree, '-m', formatOpMessage(`${ops[0]!.op} (forged)`, ops)];
  if (parent !== null) args.push('-p', parent);
  return sh(dir, ...args);
}

const opId = () => `forged${randomBytes(12).toString('hex')}`;

/** Alice's Lane `fresh` with two Asks, synced; Bob's clone has it too. */
async function setup(): Promise<{ a: Clone; b: Clone; asks: string[] }> {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  await lanePropose(a.repo, OWNER, { lane_id: 'fresh', title: 'Fresh' });
  const asks: string[] = [];
  for (const title of ['one', 'two']) {
    asks.push((await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title })).ask.ask_id);
  }
  await a.sync();
  // A first sync with nothing confirmed adopts the Lane.
  expect((await b.sync()).adopted).toContain(LANE);
  return { a, b, asks };
}

const remoteTip = (ref: string) => sh(cluster!.remote, 'rev-parse', ref);
const coordinators = async (c: Clone) =>
  (await laneGet(c.repo, OWNER, { lane_id: 'fresh' })).lane.coordinators;

/**
 * setup(), then Bob's parentless lane_propose of `fresh` by himself, force-pushed over Alice's
 * Lane; Alice keeps working (her Lane at `mine`) and has not synced since `synced`.
 */
async function rivalPushed() {
  const { a, b } = await setup();
  const synced = sh(a.dir, 'rev-parse', LANE);
  const root = sh(b.dir, 'rev-list', '--max-parents=0', LANE);
  const propose = { ...opsOf(b.dir, root)[0]!, id: opId(), actor: BOB };
  const rival = forge(b.dir, null, [propose]);
  sh(b.dir, 'push', '-q', '-f', 'origin', `${rival}:${LANE}`);
  await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title: 'three' });
  return { a, b, synced, rival, mine: sh(a.dir, 'rev-parse', LANE) };
}

describe('a remote rewritten behind what was synced', () => {
  it('merges the other way round: what was published keeps its place, the rival comes after', async () => {
    const { a, b, synced, rival, mine } = await rivalPushed();
    const report = await a.sync();
    expect(report.quarantined).toEqual([]);
    expect(report.merged).toEqual([
      {
        ref: LANE,
        commit: expect.any(String),
        local_ops: 0,
        rewritten: { synced, remote_ops: 1 },
      },
    ]);
    const merge = report.merged[0]!.commit;
    // Ours is the first parent: publication order keeps every op that was published in place.
    expect(sh(a.dir, 'rev-parse', `${merge}^1`, `${merge}^2`).split('\n')).toEqual([mine, rival]);
    // Refused, and said to be the remote's op: not Alice's.
    expect(report.rejected).toEqual([
      expect.objectContaining({
        op: 'lane_propose',
        actor: BOB,
        reason: 'lane_exists',
        ref: LANE,
        origin: 'remote',
      }),
    ]);
    expect(formatSyncReport(report)).toContain(
      `refused: lane_propose by ${BOB} in lanes/fresh (lane_exists) (the remote's op, not one of this clone's)`,
    );
    expect(report.pushed).toEqual([LANE]);
    expect(remoteTip(LANE)).toBe(merge);
    expect(await coordinators(a)).toEqual([OWNER.actor]);
    expect(formatSyncReport(report)).toContain(
      `merged lanes/fresh (remote rewritten (not a descendant of what was synced at ${synced.slice(0, 10)}): its 1 op(s) after what was published)`,
    );
    // Bob's clone, which synced what Alice had published, fast-forwards; all agree.
    expect((await b.sync()).fast_forwarded).toContain(LANE);
    expect(zzRefs(b.dir)).toEqual(zzRefs(a.dir));
    expect(await coordinators(b)).toEqual([OWNER.actor]);
    expect(await refusalsIn(b.repo, OWNER, 'fresh')).toEqual([
      ['lane_propose', BOB, 'lane_exists'],
    ]);
    // A sync with nothing new changes nothing.
    const idle = await a.sync();
    expect([idle.merged, idle.pushed, idle.quarantined]).toEqual([[], [], []]);
  });

  it("a `git pull`'s import of the rival first does not move what was synced: the sync still merges ours first", async () => {
    const { a, synced, rival, mine } = await rivalPushed();
    // A `git pull` with zz's refspec, then its hook's import: the Lane diverged, left for sync.
    sh(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
    expect((await fastForwardFromRemotes(a.repo)).diverged).toEqual([LANE]);
    // The confirmed value stayed what was synced; it once followed the rival here, and the
    // sync then merged the rival's history first and made Bob the Lane's coordinator.
    expect(sh(a.dir, 'rev-parse', 'refs/zz-sync/origin/lanes/fresh')).toBe(synced);
    const report = await a.sync();
    const merge = report.merged[0]!.commit;
    expect(report.merged[0]!.rewritten).toEqual({ synced, remote_ops: 1 });
    expect(sh(a.dir, 'rev-parse', `${merge}^1`, `${merge}^2`).split('\n')).toEqual([mine, rival]);
    expect(await coordinators(a)).toEqual([OWNER.actor]);
    expect(remoteTip(LANE)).toBe(merge);
    expect(sh(a.dir, 'rev-parse', 'refs/zz-sync/origin/lanes/fresh')).toBe(merge);
  });

  it('honest moves still pass: a first sync, a remote ahead, a rewind, a deletion', async () => {
    const { a, b, asks } = await setup();
    // Ahead: Bob's claim, pushed by zz, fast-forwards on Alice's clone.
    await askClaim(b.repo, { actor: BOB }, { lane_id: 'fresh', ask_id: asks[0]! });
    await b.sync();
    const ahead = await a.sync();
    expect(ahead.fast_forwarded).toEqual([LANE]);
    expect(ahead.quarantined).toEqual([]);
    // A rewind to an older value of the history Alice holds: she pushes hers back.
    const tip = sh(a.dir, 'rev-parse', LANE);
    sh(cluster!.remote, 'update-ref', LANE, `${tip}~2`);
    const rewound = await a.sync();
    expect(rewound.quarantined).toEqual([]);
    expect(rewound.pushed).toEqual([LANE]);
    expect(remoteTip(LANE)).toBe(tip);
    // Deleted: pushed back with a must-not-exist lease.
    sh(cluster!.remote, 'update-ref', '-d', LANE);
    expect((await a.sync()).recreated).toEqual([LANE]);
    expect(remoteTip(LANE)).toBe(tip);
    // Deleted, then recreated by Bob's zz from his older copy (he had not synced Alice's new
    // Ask): Alice merges with what she had published first, and both converge.
    await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title: 'four' });
    await a.sync();
    sh(cluster!.remote, 'update-ref', '-d', LANE);
    await askPost(b.repo, { actor: BOB }, { lane_id: 'fresh', kind: 'work', title: 'five' });
    expect((await b.sync()).recreated).toEqual([LANE]);
    const recreated = await a.sync();
    expect(recreated.quarantined).toEqual([]);
    expect(recreated.merged.map((m) => [m.ref, m.rewritten?.remote_ops])).toEqual([[LANE, 1]]);
    expect((await b.sync()).fast_forwarded).toEqual([LANE]);
    expect(zzRefs(b.dir)).toEqual(zzRefs(a.dir));
    const titles = (await laneGet(b.repo, OWNER, { lane_id: 'fresh' })).asks.map((x) => x.title);
    expect(titles.sort()).toEqual(['five', 'four', 'one', 'two']);
  });
});

describe('a rival history wrapped in a merge', () => {
  it('[rival, synced] reaches what was synced but cannot take the Lane: answered ours first, and all converge', async () => {
    const { a, b, asks } = await setup();
    await askClaim(a.repo, CLAUDE, { lane_id: 'fresh', ask_id: asks[0]!, lease_seconds: 900 });
    await a.sync();
    await b.sync();
    const synced = remoteTip(LANE);
    // Bob's parentless lane_propose of `fresh` and his claim of Claude's Ask, wrapped in a
    // merge whose second parent is what was synced: pushed as a fast-forward, no force needed.
    const root = sh(b.dir, 'rev-list', '--max-parents=0', LANE);
    const propose = { ...opsOf(b.dir, root)[0]!, id: opId(), actor: BOB };
    const time = new Date().toISOString();
    const claim: OpRecord = {
      ...propose,
      id: opId(),
      op: 'ask_claim',
      lamport: 2,
      time,
      args: { lane_id: 'fresh', ask_id: asks[0]!, lease_seconds: 60 },
      out: { lease_expires_at: new Date(Date.parse(time) + 60_000).toISOString() },
    };
    const rival = forge(b.dir, null, [propose, claim]);
    const lamport = Math.max(2, ...opsOf(b.dir, synced).map((o) => o.lamport)) + 1;
    const wrap = sh(
      b.dir,
      'commit-tree',
      `${synced}^{tree}`,
      '-p',
      rival,
      '-p',
      synced,
      '-m',
      formatMergeMessage('Merge', lamport),
    );
    sh(b.dir, 'push', '-q', 'origin', `${wrap}:${LANE}`);
    // Alice writes meanwhile; Bob's clone has nothing new.
    await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title: 'three' });
    const mine = sh(a.dir, 'rev-parse', LANE);
    // Bob's clone answers it even with nothing of its own: a fast-forward folded Bob first.
    const rb = await b.sync();
    expect(rb.fast_forwarded).toEqual([]);
    expect(rb.merged).toEqual([
      {
        ref: LANE,
        commit: expect.any(String),
        local_ops: 0,
        rewritten: { synced, remote_ops: 2, wrapped: true },
      },
    ]);
    const answer = rb.merged[0]!.commit;
    expect(sh(b.dir, 'rev-parse', `${answer}^1`, `${answer}^2`).split('\n')).toEqual([
      synced,
      wrap,
    ]);
    expect(formatSyncReport(rb)).toContain(
      `merged lanes/fresh (remote folds a rival history before what was synced at ${synced.slice(0, 10)}: its 2 op(s) after what was published)`,
    );
    // What the answer refused is the remote's, and said so.
    expect(rb.rejected.map((r) => [r.op, r.actor, r.reason, r.origin])).toEqual([
      ['lane_propose', BOB, 'lane_exists', 'remote'],
    ]);
    expect(rb.claims_lost).toEqual([
      expect.objectContaining({ loser: BOB, winner: CLAUDE.actor, origin: 'remote' }),
    ]);
    expect(formatSyncReport(rb)).toContain(
      `claim lost: ${asks[0]} in lanes/fresh — ${BOB} lost to ${CLAUDE.actor} (the remote's op, not one of this clone's)`,
    );
    expect(await coordinators(b)).toEqual([OWNER.actor]);
    // Alice merges her work onto Bob's answer as usual; all agree, the Lane stays hers.
    const ra = await a.sync();
    expect(ra.merged.map((m) => [m.ref, m.rewritten])).toEqual([[LANE, undefined]]);
    expect(sh(a.dir, 'rev-parse', `${ra.merged[0]!.commit}^2`)).toBe(mine);
    expect((await b.sync()).fast_forwarded).toEqual([LANE]);
    expect(zzRefs(b.dir)).toEqual(zzRefs(a.dir));
    for (const c of [a, b]) {
      expect(await coordinators(c)).toEqual([OWNER.actor]);
      expect(await refusalsIn(c.repo, OWNER, 'fresh')).toEqual([
        ['lane_propose', BOB, 'lane_exists'],
        ['ask_claim', BOB, 'claim_lost'],
      ]);
      const view = await laneGet(c.repo, OWNER, { lane_id: 'fresh' });
      expect(view.asks.find((x) => x.ask_id === asks[0])?.holder).toBe(CLAUDE.actor);
    }
    const idle = [await a.sync(), await b.sync()];
    expect(idle.map((r) => [r.merged, r.pushed])).toEqual([
      [[], []],
      [[], []],
    ]);
  });
});

describe('ops dated past the clock, leases the fold derives', () => {
  /** Claude's live claim of `ask`, synced; Bob's clone has it. */
  async function claimed(): Promise<{ a: Clone; b: Clone; ask: string }> {
    const { a, b, asks } = await setup();
    await askClaim(a.repo, CLAUDE, { lane_id: 'fresh', ask_id: asks[0]!, lease_seconds: 900 });
    await a.sync();
    await b.sync();
    return { a, b, ask: asks[0]! };
  }

  /** Bob's ask_claim of `ask`, forged on top of the remote tip and pushed (no force needed). */
  function forgeClaim(
    b: Clone,
    ask: string,
    time: string,
    args: object,
    out: Record<string, unknown>,
  ): string {
    // The tip is a claim (Claude's, or the one forged before): its envelope is the template.
    const tip = remoteTip(LANE);
    const last = opsOf(b.dir, tip).at(-1)!;
    const claim: OpRecord = {
      ...last,
      id: opId(),
      actor: BOB,
      lamport: last.lamport + 1,
      time,
      op: 'ask_claim',
      args: { lane_id: 'fresh', ask_id: ask, ...args },
      out,
    };
    const c = forge(b.dir, tip, [claim]);
    sh(b.dir, 'push', '-q', 'origin', `${c}:${LANE}`);
    return c;
  }

  it('a claim dated in 2099 quarantines the Lane: Claude keeps the Ask and is told the Lane is not pushed', async () => {
    const { a, b, ask } = await claimed();
    const forged = forgeClaim(
      b,
      ask,
      '2099-01-01T00:00:00.000Z',
      {},
      { lease_expires_at: '2099-12-31T00:00:00.000Z', renewed: false },
    );
    const report = await a.sync();
    expect(report.quarantined).toEqual([
      {
        ref: LANE,
        commit: forged,
        reason: expect.stringMatching(
          /^op forged\w+ \(ask_claim\) is dated 2099-01-01T00:00:00\.000Z, past this machine's clock by more than 10 min$/,
        ),
      },
    ]);
    const view = await laneGet(a.repo, OWNER, { lane_id: 'fresh' });
    expect(view.asks.find((x) => x.ask_id === ask)?.holder).toBe(CLAUDE.actor);
    // Claude's answer stands here; it waits, said so, until an owner replaces the tip.
    await askAnswer(a.repo, CLAUDE, {
      lane_id: 'fresh',
      ask_id: ask,
      outcome: 'complete',
      result: 'done',
    });
    const after = await a.sync();
    expect(after.not_pushed).toEqual([
      { ref: LANE, commit: sh(a.dir, 'rev-parse', LANE), quarantined: forged },
    ]);
    expect(formatSyncReport(after)).toMatch(
      /not pushed: lanes\/fresh: local commit \w{10} stays here/,
    );
    // Bob's clone refuses it too; what it last synced stays what it confirmed there.
    expect((await b.sync()).quarantined.map((q) => q.commit)).toEqual([forged]);
    // Recovery (README, "A quarantined ref"): an owner replaces the quarantined tip with the
    // Lane's real history, leased on it so that nothing newer is forced over.
    sh(a.dir, 'push', '-q', `--force-with-lease=${LANE}:${forged}`, 'origin', `${LANE}:${LANE}`);
    const healed = await a.sync();
    expect([healed.quarantined, healed.not_pushed]).toEqual([[], []]);
    expect(sh(a.dir, 'for-each-ref', 'refs/zz-quarantine/')).toBe('');
    expect((await b.sync()).fast_forwarded).toContain(LANE);
    expect(zzRefs(b.dir)).toEqual(zzRefs(a.dir));
  });

  it('a claim whose recorded lease end is not its time plus the capped lease is refused (lease_mismatch)', async () => {
    const { a, b, ask } = await claimed();
    // Claude's lease long lapsed by Bob's clock (within the skew bound): Bob may claim, but his
    // recorded end says 2099 for a 60 s lease, and another claim asks for 30 days.
    const now = Date.now();
    const t = new Date(now + 5 * 60_000).toISOString();
    forgeClaim(b, ask, t, { lease_seconds: 60 }, { lease_expires_at: '2099-12-31T00:00:00.000Z' });
    const end = new Date(now + 5 * 60_000 + 30 * 86_400_000).toISOString();
    forgeClaim(b, ask, t, { lease_seconds: 30 * 86_400 }, { lease_expires_at: end });
    const report = await a.sync();
    expect(report.quarantined).toEqual([]);
    expect(report.fast_forwarded).toEqual([LANE]);
    const view = await laneGet(a.repo, OWNER, { lane_id: 'fresh' });
    const got = view.asks.find((x) => x.ask_id === ask)!;
    expect([got.holder, got.lease_expires_at]).toEqual([
      CLAUDE.actor,
      expect.not.stringMatching(/^2099/),
    ]);
    expect(await refusalsIn(a.repo, OWNER, 'fresh')).toEqual([
      ['ask_claim', BOB, 'lease_mismatch'],
      ['ask_claim', BOB, 'lease_mismatch'],
    ]);
  });
});

describe('an ask_post that reuses an Ask id or names another poster', () => {
  it('is refused on the clone that fast-forwards to it: the Ask keeps its answer, title and poster', async () => {
    const { a, b, asks } = await setup();
    const [x, y] = asks as [string, string];
    await askClaim(a.repo, OWNER, { lane_id: 'fresh', ask_id: x, lease_seconds: 900 });
    await askAnswer(a.repo, OWNER, {
      lane_id: 'fresh',
      ask_id: x,
      outcome: 'complete',
      result: 'done',
    });
    const w = (
      await askPost(a.repo, OWNER, { lane_id: 'fresh', kind: 'work', title: 'w', depends_on: [y] })
    ).ask.ask_id;
    await a.sync();
    await b.sync();
    const synced = remoteTip(LANE);
    // Bob, on what was synced, writing as Alice where he likes (an unsigned repo): ask-X posted
    // again (backdated, now depending on Y), Y posted again (were that counted a refused post,
    // it would no longer block W), his claim of W, and a new Ask said to be Alice's. Pushed as
    // a plain fast-forward.
    const lamport = opsOf(b.dir, synced).at(-1)!.lamport;
    const now = Date.now();
    const post = (actor: string, id: string, args: Record<string, unknown>, n: number) =>
      ({
        id: opId(),
        actor,
        lamport: lamport + n,
        time: new Date(now - 86_400_000).toISOString(),
        op: 'ask_post',
        args: { lane_id: 'fresh', kind: 'work', posted_by: OWNER.actor, ...args },
        out: { ask_id: id },
      }) as OpRecord;
    const claimW: OpRecord = {
      id: opId(),
      actor: BOB,
      lamport: lamport + 3,
      time: new Date(now).toISOString(),
      op: 'ask_claim',
      args: { lane_id: 'fresh', ask_id: w, lease_seconds: 60 },
      out: { lease_expires_at: new Date(now + 60_000).toISOString() },
    };
    const ops = [
      post(OWNER.actor, x, { title: 'hijacked', body: 'new body', depends_on: [y] }, 1),
      post(OWNER.actor, y, { title: 'again' }, 2),
      claimW,
      post(BOB, 'ask-0000000bad', { title: 'in her name' }, 4),
    ];
    const tip = ops.reduce((parent, o) => forge(b.dir, parent, [o]), synced);
    sh(b.dir, 'push', '-q', 'origin', `${tip}:${LANE}`);

    const report = await a.sync();
    expect(report.fast_forwarded).toEqual([LANE]);
    // A fast-forward reports no remote refusal (report.ts: only merges and this clone's own
    // ops); the Lane's history lists them, on both clones.
    expect((await b.sync()).fast_forwarded).toEqual([LANE]);
    for (const repo of [a.repo, b.repo]) {
      const view = await laneGet(repo, OWNER, { lane_id: 'fresh' });
      const ask = view.asks.find((v) => v.ask_id === x)!;
      expect([ask.state, ask.title, ask.posted_by, ask.depends_on]).toEqual([
        'answered',
        'one',
        OWNER.actor,
        [],
      ]);
      expect(ask.answer?.outcome).toBe('complete');
      expect(view.asks.map((v) => v.ask_id).sort()).toEqual([x, y, w].sort());
      expect(view.asks.find((v) => v.ask_id === w)?.state).toBe('open');
      expect(await refusalsIn(repo, OWNER, 'fresh')).toEqual([
        ['ask_post', OWNER.actor, 'ask_exists'],
        ['ask_post', OWNER.actor, 'ask_exists'],
        ['ask_claim', BOB, 'dependency_unresolved'],
        ['ask_post', BOB, 'poster_mismatch'],
      ]);
    }
  });
});
