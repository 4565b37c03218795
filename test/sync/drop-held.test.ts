import { describe, expect, it } from 'vitest';
import { askPost, laneGet, lanePropose, repoState, ZzRepo } from '../../src/core/index.js';
import {
  dropHeld,
  DROPPED_KEPT,
  keyAdd,
  personKey,
  signAs,
  type DropHeldReport,
} from '../../src/core/sync/index.js';
import { generateSigningKey, type SshSigningKey } from '../../src/git/index.js';
import type { GitStore } from '../../src/store/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { cleanUpClusters, makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// `zz sync --drop-held <ref>`: a clone whose own commits on a ref every other clone would
// refuse (here: another person's op written unsigned on bob's clone, in a repository that
// requires signatures) was stuck for good: every later op of bob's on that Lane rode behind
// the refused commit and was held back too. The drop re-applies on the remote's tip what bob's
// machine can sign, reports what it drops, keeps the old tip under refs/zz-dropped/, pushes.

const OWNER = { actor: 'owner@example.com' };
const BOB = { actor: 'bob@example.com' };
const CAROL = { actor: 'carol@example.com' };

type Clone = Cluster['clones'][0];

let cluster: Cluster | null = null;
cleanUpClusters();

/** Refs under refs/zz-dropped/ of a clone, name → oid. */
function droppedRefs(dir: string): Map<string, string> {
  const out = sh(dir, 'for-each-ref', '--format=%(refname) %(objectname)', 'refs/zz-dropped/');
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ') as [string, string]),
  );
}

/**
 * Two clones of a repository that requires signatures: a (the owner) and b (bob, whose key
 * the owner registered, and the key his CLI finds under `env`). On b the Lane `web` holds, past
 * what the remote has: carol's op written unsigned (no zz signs for her there), bob's op
 * written unsigned by an older zz (his key signs it now), and a signed op of bob's with an
 * idempotency key. The owner wrote to the Lane meanwhile: b's Lane has diverged.
 */
async function stuckClone(
  env: NodeJS.ProcessEnv,
): Promise<{ a: Clone; b: Clone; key: SshSigningKey }> {
  cluster = await makeCluster(2, { signed: true });
  const [a, b] = cluster.clones as [Clone, Clone];
  const key = await personKey(BOB.actor, env);
  await keyAdd(a.repo, OWNER, { actor: BOB.actor, key: key.publicKey });
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await a.sync();
  await b.sync();
  sh(b.dir, 'config', 'user.email', BOB.actor);
  signAs(b.repo, BOB.actor, key);
  const store = b.repo.store as GitStore;
  const signer = store.signer;
  // Written past the up-front check (signable.ts), as an older zz or a foreign token did.
  store.signsFor = null;
  await askPost(b.repo, CAROL, { lane_id: 'web', kind: 'work', title: 'carol, unsigned' });
  store.signer = null;
  await askPost(b.repo, BOB, { lane_id: 'web', kind: 'work', title: 'bob, unsigned by an old zz' });
  store.signer = signer;
  store.signsFor = BOB.actor;
  await askPost(b.repo, BOB, {
    lane_id: 'web',
    kind: 'work',
    title: 'bob, signed',
    idempotency_key: 'bob-signed-1',
  });
  await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'owner meanwhile' });
  await a.sync();
  return { a, b, key };
}

const titles = async (repo: ZzRepo, viewer = OWNER): Promise<string[]> =>
  (await laneGet(repo, viewer, { lane_id: 'web' })).asks.map((x) => x.title).sort();

describe('zz sync --drop-held', () => {
  it("re-applies what this clone can sign on the remote's tip, drops and reports the rest", async () => {
    const env = cliEnv();
    const { a, b } = await stuckClone(env);
    const remote = cluster!.remote;
    const held = await b.sync();
    expect(held.held_back).toEqual([
      expect.objectContaining({ ref: 'refs/zz/lanes/web', reason: expect.stringMatching(/carol/) }),
    ]);
    // The held-back message names the way out.
    const stuck = await zz(b.dir, env, 'sync');
    expect(stuck.code).toBe(6);
    expect(stuck.stderr).toContain('zz sync --drop-held lanes/web');
    const oldTip = zzRefs(b.dir).get('refs/zz/lanes/web')!;
    const remoteTip = zzRefs(remote).get('refs/zz/lanes/web');
    const ownOps = (await b.repo.store.history('refs/zz/lanes/web')).flatMap((c) => c.ops);
    const idOf = (title: string) => ownOps.find((o) => o.args.title === title)!.id;
    // Older backups of this Lane (by name, oldest first): the drop keeps DROPPED_KEPT in all.
    for (let i = 0; i < DROPPED_KEPT; i++) {
      sh(b.dir, 'update-ref', `refs/zz-dropped/lanes/web/2020010${i}T000000Z-old`, oldTip);
    }

    const cli = await zz(b.dir, env, 'sync', '--drop-held', 'lanes/web', '--json');
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    const r = cli.json() as DropHeldReport;
    expect(r).toMatchObject({
      remote: 'origin',
      ref: 'refs/zz/lanes/web',
      old_tip: oldTip,
      remote_tip: remoteTip,
      pushed: true,
      push_problem: null,
      held_back_reason: expect.stringMatching(/carol@example\.com .*requires signatures/),
    });
    // Re-applied in publication order, same op ids and idempotency key; carol's dropped.
    expect(r.reapplied).toEqual([
      { id: idOf('bob, unsigned by an old zz'), op: 'ask_post', actor: BOB.actor },
      { id: idOf('bob, signed'), op: 'ask_post', actor: BOB.actor, key: 'bob-signed-1' },
    ]);
    expect(r.dropped).toEqual([
      {
        id: idOf('carol, unsigned'),
        op: 'ask_post',
        actor: CAROL.actor,
        reason: expect.stringMatching(/carol@example\.com .*requires signatures/),
      },
    ]);
    // Nothing lost: the old tip is kept, the backups stay bounded (the oldest went).
    const backups = droppedRefs(b.dir);
    expect(backups.get(r.backup)).toBe(oldTip);
    expect(r.backup).toMatch(/^refs\/zz-dropped\/lanes\/web\/\d{8}T\d{6}Z-[0-9a-f]{12}$/);
    expect(backups.size).toBe(DROPPED_KEPT);
    expect(r.backups_removed).toEqual(['refs/zz-dropped/lanes/web/20200100T000000Z-old']);
    expect(backups.has('refs/zz-dropped/lanes/web/20200100T000000Z-old')).toBe(false);
    // repo_state no longer lists it (held-back.json forgets the ref at once).
    expect((await repoState(b.repo, BOB)).held_back).toEqual([]);
    // Pushed: the remote holds the rebuilt Lane, and the other clone takes it.
    expect(zzRefs(remote).get('refs/zz/lanes/web')).toBe(r.new_tip);
    expect(zzRefs(b.dir).get('refs/zz/lanes/web')).toBe(r.new_tip);
    const back = await a.sync();
    expect(back.quarantined).toEqual([]);
    expect(back.fast_forwarded).toEqual(['refs/zz/lanes/web']);
    expect(await titles(a.repo)).toEqual([
      'bob, signed',
      'bob, unsigned by an old zz',
      'owner meanwhile',
    ]);
    // Unstuck: zz sync exits 0 and repo_state lists nothing held back.
    const after = await zz(b.dir, env, 'sync');
    expect(after.stderr).toBe('');
    expect(after.code).toBe(0);
    // The same idempotency key answers from the log: no duplicate Ask.
    const retry = await askPost(b.repo, BOB, {
      lane_id: 'web',
      kind: 'work',
      title: 'bob, signed',
      idempotency_key: 'bob-signed-1',
    });
    expect(retry.replayed).toBe(true);
    expect(await titles(b.repo)).toEqual(await titles(a.repo));
    // Text output says the same.
    const again = await zz(b.dir, env, 'sync', '--drop-held', 'lanes/web');
    expect(again.code).toBe(6);
    expect(again.stderr).toMatch(
      /cannot drop what is held back on lanes\/web: it is not held back/,
    );
  });

  it('fails cleanly when a write lands on the ref during the drop: nothing moved', async () => {
    const env = cliEnv();
    const { b, key } = await stuckClone(env);
    await b.sync();
    const remoteBefore = zzRefs(cluster!.remote);
    const other = await ZzRepo.open(b.dir, { key: 'local/test' });
    try {
      signAs(other, BOB.actor, key);
      let during: string | null = null;
      const err = await dropHeld(b.repo, 'lanes/web', {
        beforeMove: async () => {
          during = (
            await askPost(other, BOB, { lane_id: 'web', kind: 'work', title: 'during the drop' })
          ).revision;
        },
      }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'conflict' });
      expect((err as Error).message).toMatch(
        /lanes\/web moved while its ops were being re-applied .*nothing moved: run zz sync --drop-held lanes\/web again/,
      );
      // The ref holds the concurrent write, no backup was made, the remote is untouched.
      expect(zzRefs(b.dir).get('refs/zz/lanes/web')).toBe(during);
      expect(droppedRefs(b.dir).size).toBe(0);
      expect(zzRefs(cluster!.remote)).toEqual(remoteBefore);
      // Run again, the concurrent write is re-applied with the rest.
      const r = await dropHeld(b.repo, 'lanes/web');
      expect(r.reapplied.map((o) => o.actor)).toEqual([BOB.actor, BOB.actor, BOB.actor]);
      expect(r.dropped.map((o) => o.actor)).toEqual([CAROL.actor]);
      expect(r.pushed).toBe(true);
    } finally {
      other.close();
    }
  });

  it('refuses a ref that is not held back (on the remote or not), a bad name, and offline', async () => {
    const env = cliEnv();
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'local, signed' });
    await a.sync();
    await lanePropose(a.repo, OWNER, { lane_id: 'solo', title: 'Solo' });
    const before = zzRefs(a.dir);
    const plain = await zz(a.dir, env, 'sync', '--drop-held', 'lanes/web');
    expect(plain.code).toBe(6);
    expect(plain.stderr).toMatch(/lanes\/web: it is not held back: zz sync pushes it as it is/);
    const bad = await zz(a.dir, env, 'sync', '--drop-held', 'ladder');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--drop-held takes a ref zz holds back: config or lanes\/<lane id>/);
    const solo = await zz(a.dir, env, 'sync', '--drop-held', 'lanes/solo');
    expect(solo.code).toBe(6);
    expect(solo.stderr).toMatch(/lanes\/solo: it is not held back/);
    expect(zzRefs(a.dir)).toEqual(before);
    expect(droppedRefs(a.dir).size).toBe(0);
    // Offline: nothing changes, exit 7.
    sh(b.dir, 'remote', 'set-url', 'origin', `${cluster.remote}-gone`);
    const off = await zz(b.dir, env, 'sync', '--drop-held', 'lanes/web');
    expect(off.stderr).toMatch(/cannot reach origin/);
    expect(off.code).toBe(7);
  });

  it("on refs/zz/config: another actor's unsigned owner-level op is dropped, the owner's own op goes out", async () => {
    const env = cliEnv();
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    // The owner's second machine holds the owner's key; carol's op was written there unsigned
    // (past the local checks, as another machine's zz may have), then the owner's own.
    signAs(b.repo, OWNER.actor, a.key);
    const store = b.repo.store as GitStore;
    const signer = store.signer;
    store.signer = null;
    await b.repo.config.mutate({
      actor: CAROL.actor,
      recordRefused: true,
      decide: () => ({
        op: 'role_grant',
        summary: 'role_grant: grant owner carol@example.com',
        args: { grantee: CAROL.actor, role: 'owner', revoke: false },
      }),
      result: () => null,
    });
    store.signer = signer;
    const bobKey = await personKey(BOB.actor, env);
    await keyAdd(b.repo, OWNER, { actor: BOB.actor, key: bobKey.publicKey });
    expect((await b.sync()).held_back).toEqual([
      expect.objectContaining({ ref: 'refs/zz/config', reason: expect.stringMatching(/carol/) }),
    ]);
    const r = await dropHeld(b.repo, 'config');
    expect(r.reapplied).toEqual([expect.objectContaining({ op: 'key_add', actor: OWNER.actor })]);
    expect(r.dropped).toEqual([
      expect.objectContaining({
        op: 'role_grant',
        actor: CAROL.actor,
        reason: expect.stringMatching(/not signed by an owner's key/),
      }),
    ]);
    expect(r.pushed).toBe(true);
    expect(droppedRefs(b.dir).get(r.backup)).toBe(r.old_tip);
    const back = await a.sync();
    expect(back.quarantined).toEqual([]);
    const config = (await a.repo.config.read()).state;
    expect(config.keys.get(BOB.actor)).toEqual([bobKey.publicKey]);
    expect(config.config?.owners).toEqual([OWNER.actor]);
    expect((await b.sync()).held_back).toEqual([]);
  });

  it('rebuilds a Lane deleted on the remote on what was synced there, and pushes it back', async () => {
    const env = cliEnv();
    const { a, b } = await stuckClone(env);
    await b.sync();
    const synced = sh(b.dir, 'rev-parse', 'refs/zz-sync/origin/lanes/web').trim();
    sh(cluster!.remote, 'update-ref', '-d', 'refs/zz/lanes/web');
    expect((await b.sync()).held_back).toEqual([
      expect.objectContaining({ ref: 'refs/zz/lanes/web' }),
    ]);
    const cli = await zz(b.dir, env, 'sync', '--drop-held', 'lanes/web');
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(
      `Rebuilt lanes/web on what was last synced to origin (${synced.slice(0, 10)}; the ref was deleted there): re-applied 2 op(s), dropped 1.`,
    );
    expect(cli.stdout).toMatch(/dropped: ask_post by carol@example\.com \(op [0-9a-f-]+\)/);
    expect(cli.stdout).toContain('lanes/web is on origin now.');
    const tip = zzRefs(b.dir).get('refs/zz/lanes/web');
    expect(zzRefs(cluster!.remote).get('refs/zz/lanes/web')).toBe(tip);
    // Built on what was synced: the other clone's copy is in its history (a fast-forward).
    expect(sh(b.dir, 'merge-base', '--is-ancestor', synced, tip!)).toBe('');
    const back = await a.sync();
    expect(back.quarantined).toEqual([]);
    expect(await titles(a.repo)).toEqual([
      'bob, signed',
      'bob, unsigned by an old zz',
      'owner meanwhile',
    ]);
    expect((await zz(b.dir, env, 'sync')).code).toBe(0);
  });

  it("judges a Lane's ops by the remote's config, not by a config of ours that is held back too", async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Clone, Clone];
    await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
    await a.sync();
    await b.sync();
    // On b, bob's key registered by an unsigned owner-level op (held back: nobody else counts
    // it), then bob's Ask signed by that key: it passes only against b's own config.
    const bobKey = generateSigningKey().key;
    await b.repo.config.mutate({
      actor: OWNER.actor,
      recordRefused: true,
      decide: () => ({
        op: 'key_add',
        summary: 'key_add for bob@example.com',
        args: { actor: BOB.actor, key: bobKey.publicKey },
      }),
      result: () => null,
    });
    signAs(b.repo, BOB.actor, bobKey);
    await askPost(b.repo, BOB, { lane_id: 'web', kind: 'work', title: 'bob, key only here' });
    expect((await b.sync()).held_back.map((h) => h.ref)).toEqual([
      'refs/zz/config',
      'refs/zz/lanes/web',
    ]);
    const remoteTip = zzRefs(cluster.remote).get('refs/zz/lanes/web');
    const r = await dropHeld(b.repo, 'lanes/web');
    expect(r.reapplied).toEqual([]);
    expect(r.dropped).toEqual([
      expect.objectContaining({
        actor: BOB.actor,
        reason: expect.stringMatching(/not signed by a key of bob@example\.com/),
      }),
    ]);
    expect(r.new_tip).toBe(remoteTip);
    expect(zzRefs(cluster.remote).get('refs/zz/lanes/web')).toBe(remoteTip);
    expect((await a.sync()).quarantined).toEqual([]);
  });
});
