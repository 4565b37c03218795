import { describe, expect, it } from 'vitest';
import { lanePropose } from '../../src/core/index.js';
import { keyAdd, requireSignatures, signAs } from '../../src/core/sync/index.js';
import { generateSigningKey } from '../../src/git/index.js';
import type { GitStore } from '../../src/store/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { cleanUpClusters, makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// A write signed by a key refs/zz/config does not list as needed (an owner's for the config,
// the actor's own in a repository that requires signatures), or signed by none because this
// machine holds no key, is refused on every other clone: sync held its ref back for good.
// Such writes are refused up front (403), nothing moved, saying what to run.

const OWNER = { actor: 'owner@example.com' };
const BOB = { actor: 'bob@example.com' };

let cluster: Cluster | null = null;
cleanUpClusters();

type Clone = Cluster['clones'][0];

describe('the owner on a second machine, whose new key is not registered', () => {
  it('is refused a config change, even registering that key, until a registered key adds it', async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    const fresh = generateSigningKey().key;
    signAs(b.repo, OWNER.actor, fresh);
    const before = zzRefs(b.dir);
    const err = await keyAdd(b.repo, OWNER, { actor: OWNER.actor, key: fresh.publicKey }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'forbidden' });
    expect((err as Error).message).toContain(
      `not registered in refs/zz/config, so every other clone would refuse this change to the repository's config. Not here (an unregistered key cannot vouch for itself) but on another machine of yours whose key refs/zz/config lists, run: zz key add --actor ${OWNER.actor} --key "${fresh.publicKey}" ; then zz sync there, and zz sync here`,
    );
    expect(zzRefs(b.dir)).toEqual(before);
    expect((await b.sync()).held_back).toEqual([]);

    // Registered from the first machine, the second one's config changes go out and count.
    await keyAdd(a.repo, OWNER, { actor: OWNER.actor, key: fresh.publicKey });
    await a.sync();
    await b.sync();
    await keyAdd(b.repo, OWNER, { actor: BOB.actor, key: generateSigningKey().key.publicKey });
    const r = await b.sync();
    expect(r.held_back).toEqual([]);
    expect(r.pushed).toEqual(['refs/zz/config']);
    expect((await a.sync()).quarantined).toEqual([]);
  });

  it('is refused Lane writes where signatures are required, until the key is registered', async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Clone, Clone];
    const fresh = generateSigningKey().key;
    signAs(b.repo, OWNER.actor, fresh);
    const before = zzRefs(b.dir);
    await expect(lanePropose(b.repo, OWNER, { lane_id: 'web', title: 'Web' })).rejects.toThrow(
      /not registered in refs\/zz\/config, so every other clone would refuse this op \(the repository requires signatures\)/,
    );
    expect(zzRefs(b.dir)).toEqual(before);
    await keyAdd(a.repo, OWNER, { actor: OWNER.actor, key: fresh.publicKey });
    await a.sync();
    await b.sync();
    await lanePropose(b.repo, OWNER, { lane_id: 'web', title: 'Web' });
    const r = await b.sync();
    expect(r.held_back).toEqual([]);
    expect(r.pushed).toEqual(['refs/zz/lanes/web']);
    expect((await a.sync()).quarantined).toEqual([]);
  });

  it("takes a key add signed by a key registered for the actor (not an owner's)", async () => {
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    const bob1 = generateSigningKey().key;
    await keyAdd(a.repo, OWNER, { actor: BOB.actor, key: bob1.publicKey });
    await a.sync();
    await b.sync();
    signAs(b.repo, BOB.actor, bob1);
    await keyAdd(b.repo, BOB, { actor: BOB.actor, key: generateSigningKey().key.publicKey });
    const r = await b.sync();
    expect(r.held_back).toEqual([]);
    expect(r.pushed).toEqual(['refs/zz/config']);
    expect((await a.sync()).quarantined).toEqual([]);
  });
});

describe("zz init on an owner's second machine (a new key, the config without roots)", () => {
  it('says where to register the key, writes nothing others would refuse, and records the roots once it can', async () => {
    // A config made before zz recorded the project's roots: an owner's init adds them, an
    // owner-level op every other clone takes only signed by a registered key.
    cluster = await makeCluster(2);
    const [a, b] = cluster.clones as [Clone, Clone];
    const remoteConfig = () => zzRefs(cluster!.remote).get('refs/zz/config');
    const configBefore = remoteConfig();
    const env = cliEnv(); // the second machine: a key of its own is made
    const init = await zz(b.dir, env, 'init', '--json');
    expect(init.code, init.stderr).toBe(0);
    const report = init.json();
    const fresh = report.signing_key.public_key as string;
    expect(report).toMatchObject({
      signing_key_registered: false,
      project_roots_recorded: null,
    });
    expect(report.notes).toEqual([
      "the project's root commits were not recorded: this machine cannot sign them as every other clone requires (see below); once its key is registered, run zz init again",
      `this machine's signing key for ${OWNER.actor} is not registered in refs/zz/config, so other clones refuse what it signs where a registered key is needed (config changes; every op in a repository that requires signatures). Not here (an unregistered key cannot vouch for itself) but on another machine of yours whose key refs/zz/config lists, run: zz key add --actor ${OWNER.actor} --key "${fresh}" ; then zz sync there, and zz sync here`,
    ]);
    // Nothing of init's is held back: refs/zz/config is the remote's, unchanged.
    expect(sh(b.dir, 'rev-parse', 'refs/zz/config')).toBe(sh(a.dir, 'rev-parse', 'refs/zz/config'));
    const held = await zz(b.dir, env, 'sync', '--json');
    expect(held.code, held.stderr).toBe(0);
    expect(held.json().held_back).toEqual([]);
    expect(remoteConfig()).toBe(configBefore);

    // Done as said (on the first machine, then sync there and here), init records the roots.
    await keyAdd(a.repo, OWNER, { actor: OWNER.actor, key: fresh });
    await a.sync();
    expect((await zz(b.dir, env, 'sync')).code).toBe(0);
    const again = await zz(b.dir, env, 'init', '--json');
    expect(again.json()).toMatchObject({
      signing_key_registered: true,
      project_roots_recorded: [sh(b.dir, 'rev-list', '--max-parents=0', 'HEAD')],
      notes: [],
    });
    const pushed = await zz(b.dir, env, 'sync', '--json');
    expect(pushed.json()).toMatchObject({ held_back: [], pushed: ['refs/zz/config'] });
    expect((await a.sync()).quarantined).toEqual([]);
  });
});

describe('the CLI in-process on a machine with no key for its person', () => {
  it('refuses config changes and, where signatures are required, every write (exit 3)', async () => {
    cluster = await makeCluster(1, { signed: true });
    const [a] = cluster.clones as [Clone];
    const env = cliEnv(); // a config home with no key in it
    const before = zzRefs(a.dir);
    const lane = await zz(a.dir, env, 'lane', 'propose', '--lane-id', 'l1', '--title', 'T');
    expect(lane.code).toBe(3);
    expect(lane.stderr).toMatch(
      /no signing key on this machine for owner@example\.com: run zz init/,
    );
    const key = generateSigningKey().key.publicKey;
    const add = await zz(a.dir, env, 'key', 'add', '--actor', BOB.actor, '--key', key);
    expect(add.code).toBe(3);
    expect(add.stderr).toMatch(
      /no signing key on this machine for owner@example\.com: run zz init/,
    );
    expect(zzRefs(a.dir)).toEqual(before);
    // A read still answers.
    expect((await zz(a.dir, env, 'key', 'list')).code).toBe(0);
  });
});

describe('the push gate, our config held back', () => {
  it("judges a Lane against the remote's config, which every other clone keeps", async () => {
    cluster = await makeCluster(2, { signed: true });
    const [a, b] = cluster.clones as [Clone, Clone];
    // Written unsigned, as a process signing for nobody (an embedder, an older zz) writes.
    const store = b.repo.store as GitStore;
    store.signer = null;
    store.signsFor = null;
    await requireSignatures(b.repo, OWNER, false);
    await lanePropose(b.repo, OWNER, { lane_id: 'l1', title: 'T' });
    const remoteBefore = zzRefs(cluster.remote);
    const r = await b.sync();
    expect(r.pushed).toEqual([]);
    expect(r.held_back.map((h) => h.ref).sort()).toEqual(['refs/zz/config', 'refs/zz/lanes/l1']);
    expect(r.held_back[1]!.reason).toMatch(/requires signatures/);
    expect(zzRefs(cluster.remote)).toEqual(remoteBefore);
    expect((await a.sync()).quarantined).toEqual([]);
  });
});
