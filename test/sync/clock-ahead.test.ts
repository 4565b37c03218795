import { afterEach, describe, expect, it } from 'vitest';
import { askClaim, askPost, laneGet, lanePropose, ZzRepo } from '../../src/core/index.js';
import { formatSyncReport, heldBackOutcome } from '../../src/cli/sync-command.js';
import { emptyReport, signAs, syncRepo } from '../../src/core/sync/index.js';
import { GitSyncLocal } from '../../src/core/sync/git-ports.js';
import { pushGateProblem } from '../../src/core/sync/push-gate.js';
import type { AuthChecker } from '../../src/core/sync/authenticity.js';
import type { GitStore } from '../../src/store/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { makeCluster, zzRefs, type Clone, type Cluster } from './git-cluster.js';

// A machine whose clock runs ahead (30 min, past the 10 min the others allow) keeps writing.
// Only ops whose time a guard reads to grant something (claims, role and coordinator changes)
// are refused for it on import (history-checks.ts timeJudged): the rest of its work syncs, and
// the Lane does not freeze for everyone. What it dated ahead waits on its own machine once its
// clock is set right (held back), and goes out when due.

const OWNER = { actor: 'owner@example.com' };
const AHEAD_MS = 30 * 60_000;

let cluster: Cluster | null = null;
const closers: Array<() => void> = [];
afterEach(() => {
  for (const c of closers.splice(0)) c();
  cluster?.cleanup();
  cluster = null;
});

const noSleep = async () => {};

/** Clone a's repository as a daemon on a machine whose clock runs `ms` ahead sees it. */
async function skewed(a: Clone, ms: number) {
  const clock = () => new Date(Date.now() + ms);
  const repo = await ZzRepo.open(a.dir, { key: 'local/test', clock });
  closers.push(() => repo.close());
  signAs(repo, OWNER.actor, a.key);
  return { repo, sync: () => syncRepo(repo, undefined, { backoff: noSleep }) };
}

async function setup(): Promise<[Clone, Clone]> {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await a.sync();
  await b.sync();
  return [a, b];
}

/** An Ask both clones hold, then claimed on a's clock running AHEAD_MS ahead (not yet synced). */
async function claimedAhead() {
  const [a, b] = await setup();
  const s = await skewed(a, AHEAD_MS);
  const ask = (await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'w' })).ask;
  await a.sync();
  await b.sync();
  await askClaim(s.repo, OWNER, { lane_id: 'web', ask_id: ask.ask_id });
  return { a, b, s };
}

const titles = async (c: Clone) =>
  (await laneGet(c.repo, OWNER, { lane_id: 'web' })).asks.map((x) => x.title).sort();

describe('a machine whose clock runs ahead', () => {
  it('its posts sync both ways: the Lane does not freeze for everyone', async () => {
    const [a, b] = await setup();
    const s = await skewed(a, AHEAD_MS);
    await askPost(s.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'ahead' });
    await askPost(s.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'ahead too' });
    expect((await s.sync()).pushed).toEqual(['refs/zz/lanes/web']);
    const rb = await b.sync();
    expect(rb.quarantined).toEqual([]);
    expect(rb.fast_forwarded).toEqual(['refs/zz/lanes/web']);
    await askPost(b.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'from b' });
    expect((await b.sync()).pushed).toEqual(['refs/zz/lanes/web']);
    await s.sync();
    expect(await titles(a)).toEqual(['ahead', 'ahead too', 'from b']);
    expect(zzRefs(a.dir)).toEqual(zzRefs(b.dir));
  });

  it('its claims are refused on import until due; set right, it holds them back until due', async () => {
    const { a, b, s } = await claimedAhead();
    // Its clock set right (a.repo has the true one): the claim waits here, said so.
    const held = await a.sync();
    const tip = sh(a.dir, 'rev-parse', 'refs/zz/lanes/web');
    expect(held.pushed).toEqual([]);
    expect(held.held_back).toEqual([
      {
        ref: 'refs/zz/lanes/web',
        commit: tip,
        reason: expect.stringMatching(
          /^op \S+ \(ask_claim\) is dated \S+, past this machine's clock by more than 10 min$/,
        ),
        until: expect.any(String),
      },
    ]);
    expect(formatSyncReport(held)).toMatch(
      /not pushed: lanes\/web: commit \w{10} op \S+ \(ask_claim\) is dated .*; every other machine would quarantine it, so it stays here until this clock reaches \S+Z$/m,
    );
    // `zz sync` says so and exits 0: the hold clears by itself once the clock reaches its
    // date (exit 6 is for a clone stuck until someone acts). `until` says when.
    const cli = await zz(a.dir, cliEnv(), 'sync', '--json');
    expect(cli.code, cli.stderr).toBe(0);
    const until = Date.parse(cli.json().held_back[0].until);
    expect(until).toBeGreaterThan(Date.now() + AHEAD_MS - 11 * 60_000);
    expect(until).toBeLessThan(Date.now() + AHEAD_MS - 9 * 60_000);
    expect(cli.stderr).toBe(
      `zz: 1 ref(s) not pushed to origin yet (lanes/web): ops of this clone are dated ahead of this machine's clock (written while it ran ahead); the first zz sync after ${new Date(until).toISOString()} pushes them, nothing else to do\n`,
    );
    const text = await zz(a.dir, cliEnv(), 'sync');
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(
      `it stays here until this clock reaches ${new Date(until).toISOString()}`,
    );
    // Pushed anyway (its clock still ahead): b refuses the claim's tip until it is due.
    expect((await s.sync()).pushed).toEqual(['refs/zz/lanes/web']);
    expect((await b.sync()).quarantined.map((q) => q.ref)).toEqual(['refs/zz/lanes/web']);
    // Once due (b's clock 30 min on), b takes it.
    const later = await syncRepo(b.repo, undefined, {
      backoff: noSleep,
      now: () => Date.now() + AHEAD_MS,
    });
    expect([later.quarantined, later.fast_forwarded]).toEqual([[], ['refs/zz/lanes/web']]);
    expect(await titles(b)).toEqual(['w']);
  });
});

describe('the push gate on a ref held back twice over', () => {
  it('reports what needs someone to act before an op that only waits for this clock', async () => {
    // One ref, an ask_claim dated ahead (clears by itself) and a commit every other clone
    // refuses (here a checker that says so for any outgoing commit): the second must win, or
    // zz sync says "nothing else to do" and exits 0, and --drop-held refuses, for a ref that
    // stays stuck once the clock catches up (found in review).
    const { a } = await claimedAhead();
    const ref = 'refs/zz/lanes/web';
    const mine = sh(a.dir, 'rev-parse', ref);
    const theirs = sh(a.dir, 'rev-parse', `${ref}^`);
    const g = a.repo.git!;
    const local = new GitSyncLocal(g, a.repo.store as GitStore);
    const refusing: AuthChecker = {
      check: async (_ref, _history, incoming) => ({
        commit: [...incoming][0]!,
        reason: 'not signed by a key registered for its actor',
      }),
    } as AuthChecker;
    const passing: AuthChecker = { check: async () => null } as unknown as AuthChecker;
    const stuck = await pushGateProblem(local, ref, mine, theirs, refusing, Date.now());
    expect(stuck).toEqual({ commit: mine, reason: 'not signed by a key registered for its actor' });
    const dated = await pushGateProblem(local, ref, mine, theirs, passing, Date.now());
    expect(dated).toMatchObject({ commit: mine, until: expect.any(String) });
    expect(dated!.reason).toMatch(/\(ask_claim\) is dated /);
  });
});

describe('zz sync exit status when it holds refs back', () => {
  it('a hold that clears by itself is a notice; one that does not is exit 6, naming only it', () => {
    const r = emptyReport('origin', true);
    const dated = {
      ref: 'refs/zz/lanes/web',
      commit: 'a'.repeat(40),
      reason: 'op x (ask_claim) is dated 2099-01-01T00:00:00.000Z, past …',
      until: '2098-12-31T23:50:00.000Z',
    };
    r.held_back = [dated];
    expect(heldBackOutcome(r)).toEqual({
      notice: expect.stringContaining(
        'the first zz sync after 2098-12-31T23:50:00.000Z pushes them',
      ),
      error: null,
    });
    r.held_back = [
      dated,
      { ref: 'refs/zz/config', commit: 'b'.repeat(40), reason: 'not signed by an owner' },
    ];
    const both = heldBackOutcome(r);
    expect(both.notice).toMatch(/^zz: 1 ref\(s\) not pushed to origin yet \(lanes\/web\)/);
    expect(both.error).toMatchObject({ code: 'precondition_failed' });
    expect(both.error!.message).toMatch(
      /^1 ref\(s\) of this clone not pushed to origin \(config\):/,
    );
  });
});
