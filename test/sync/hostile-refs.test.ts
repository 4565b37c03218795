import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { askPost, laneGet, lanePropose } from '../../src/core/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import {
  cleanUpClusters,
  makeCluster,
  onColdRepo,
  zzRefs,
  type Clone,
  type Cluster,
} from './git-cluster.js';

// What a hostile peer can push to a shared remote by hand, past every zz check: ops nested
// 100,000 deep, an oversized `out`, refs naming a blob, refs outside zz's layout. Each is
// quarantined by ref and reported; every other ref syncs; nothing of it is adopted.

const OWNER = { actor: 'owner@example.com' };
const MALLORY = 'mallory@example.com';

let cluster: Cluster | null = null;
cleanUpClusters();

function git(dir: string, args: string[], input?: string): string {
  return execFileSync('git', args, {
    cwd: dir,
    encoding: 'utf8',
    input: input ?? '',
    maxBuffer: 64 * 1024 * 1024,
  }).trim();
}

const nest = (levels: number): string => '{"a":'.repeat(levels) + '1' + '}'.repeat(levels);

let seq = 0;
/** An op message as zz writes it, with `opJson` (raw JSON text) as the op block. */
function opMessage(op: string, opJson: string, lamport: number): string {
  return `${op} by hand\n\nzz-ops [${opJson}]\n\nZz-Op: ${op}\nZz-Actor: ${MALLORY}\nZz-Lamport: ${lamport}\n`;
}

/** An ask_post op on `lane` whose payload and out extra are raw JSON text. */
function askPostJson(lane: string, lamport: number, payload: string, outExtra = '1'): string {
  const id = `0123456789abcdef-${(++seq).toString(16).padStart(32, '0')}`;
  return (
    `{"op":"ask_post","id":"${id}","actor":"${MALLORY}","lamport":${lamport},` +
    `"time":"2026-12-03T05:00:00.000Z","args":{"lane_id":"${lane}","kind":"work",` +
    `"title":"t","payload":${payload}},"out":{"ask_id":"ask-0123456789","x":${outExtra}}}`
  );
}

/** A Lane proposed and an Ask posted on it in one commit, out's extra as raw JSON text. */
function proposeAndPost(lane: string, outExtra: string): string {
  const id = `0123456789abcdef-${(++seq).toString(16).padStart(32, '0')}`;
  const propose =
    `{"op":"lane_propose","id":"${id}","actor":"${MALLORY}","lamport":1,` +
    `"time":"2026-12-03T05:00:00.000Z","args":{"lane_id":"${lane}","title":"L"}}`;
  return (
    `two ops by hand\n\nzz-ops [${propose},${askPostJson(lane, 2, '{}', outExtra)}]\n\n` +
    `Zz-Op: lane_propose\nZz-Actor: ${MALLORY}\nZz-Lamport: 1\n` +
    `Zz-Op: ask_post\nZz-Actor: ${MALLORY}\nZz-Lamport: 2\n`
  );
}

/** A commit written straight into the bare remote under `ref` (no parent: a new history). */
function pushCommit(remote: string, ref: string, message: string): string {
  const tree = git(remote, ['mktree']);
  const c = git(remote, ['commit-tree', tree, '-F', '-'], message);
  git(remote, ['update-ref', ref, c]);
  return c;
}

function pushBlob(remote: string, ref: string): string {
  const blob = git(remote, ['hash-object', '-w', '--stdin'], 'not a commit\n');
  git(remote, ['update-ref', ref, blob]);
  return blob;
}

const quarantinedRefs = (r: { quarantined: Array<{ ref: string; reason: string }> }) =>
  Object.fromEntries(r.quarantined.map((q) => [q.ref, q.reason]));

async function twoClones(): Promise<[Clone, Clone, string]> {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await a.sync();
  await b.sync();
  return [a, b, cluster.remote];
}

/** a posts in lanes/web; after b's sync, b holds it: the honest refs still sync. */
async function stillSyncs(a: Clone, b: Clone): Promise<void> {
  const posted = await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'honest' });
  await a.sync();
  await b.sync();
  const asks = (await laneGet(b.repo, OWNER, { lane_id: 'web' })).asks;
  expect(asks.map((x) => x.ask_id)).toContain(posted.ask.ask_id);
}

describe('sync against hand-made commits on the remote', () => {
  it('quarantines an op nested 100,000 deep (args and out) instead of crashing; everything else syncs', async () => {
    const [a, b, remote] = await twoClones();
    pushCommit(
      remote,
      'refs/zz/lanes/deep',
      opMessage('ask_post', askPostJson('deep', 1, nest(100_000)), 1),
    );
    pushCommit(
      remote,
      'refs/zz/lanes/deepout',
      opMessage('ask_post', askPostJson('deepout', 1, '{}', nest(100_000)), 1),
    );
    const report = await b.sync();
    const q = quarantinedRefs(report);
    expect(q['refs/zz/lanes/deep']).toMatch(/nested deeper than 1000 levels/);
    expect(q['refs/zz/lanes/deepout']).toMatch(/nested deeper than 1000 levels/);
    expect(zzRefs(b.dir).has('refs/zz/lanes/deep')).toBe(false);
    expect(sh(b.dir, 'rev-parse', 'refs/zz-quarantine/origin/lanes/deep')).toMatch(
      /^[0-9a-f]{40}$/,
    );
    await stillSyncs(a, b);
    // `zz sync` as a person runs it: exit 0, no internal error; `a` quarantined both in
    // stillSyncs, and its remote tips have not moved: counted, not judged and listed again.
    const r = await zz(a.dir, cliEnv(), 'sync');
    expect(r.stderr).not.toMatch(/internal error|RangeError/);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ {2}2 ref\(s\) still quarantined, unchanged on origin /m);
    // A fresh clone's first import (what `zz init` runs) gets through too.
    const { dir } = makeRepo('zz-fresh-');
    sh(dir, 'remote', 'add', 'origin', remote);
    const init = await zz(dir, cliEnv(), 'init');
    expect(init.stderr).not.toMatch(/internal error|RangeError/);
    expect(init.code, init.stderr + init.stdout).toBe(0);
    expect(zzRefs(dir).has('refs/zz/lanes/web')).toBe(true);
    expect(zzRefs(dir).has('refs/zz/lanes/deep')).toBe(false);
  });

  it('bounds out and args at import: 1,000 levels pass (older MCP writes), 1,001 and more than 64 KiB are quarantined', async () => {
    const [a, b, remote] = await twoClones();
    // out = {ask_id, x: …}: x nested 999 deep makes out 1,000 levels; 1,000 deep, 1,001.
    pushCommit(remote, 'refs/zz/lanes/at1000', proposeAndPost('at1000', nest(999)));
    pushCommit(remote, 'refs/zz/lanes/at1001', proposeAndPost('at1001', nest(1000)));
    const big = JSON.stringify('x'.repeat(65 * 1024));
    pushCommit(
      remote,
      'refs/zz/lanes/bigout',
      opMessage('ask_post', askPostJson('bigout', 1, '{}', big), 1),
    );
    // args deeper than 1,000 in the payload: quarantined.
    pushCommit(
      remote,
      'refs/zz/lanes/args1001',
      opMessage('ask_post', askPostJson('args1001', 1, nest(1000)), 1),
    );
    const report = await b.sync();
    const q = quarantinedRefs(report);
    expect(q['refs/zz/lanes/at1000']).toBeUndefined();
    expect(q['refs/zz/lanes/at1001']).toMatch(/nested deeper than 1000 levels/);
    expect(q['refs/zz/lanes/args1001']).toMatch(/nested deeper than 1000 levels/);
    expect(q['refs/zz/lanes/bigout']).toMatch(/out larger than 64 KiB/);
    expect(report.adopted).toContain('refs/zz/lanes/at1000');
    // What the fold keeps reads (and serialises) without throwing, warm and cold.
    const warm = await laneGet(b.repo, OWNER, { lane_id: 'at1000' });
    expect(warm.asks).toHaveLength(1);
    await onColdRepo(b, async (repo) => {
      const got = await laneGet(repo, OWNER, { lane_id: 'at1000' });
      expect(JSON.stringify(got).length).toBeGreaterThan(0);
    });
    await stillSyncs(a, b);
  });

  it('a deep op a clone already holds (adopted by an older zz) reads as a clear error, not a crash', async () => {
    const [, b] = await twoClones();
    pushCommit(
      b.dir,
      'refs/zz/lanes/old',
      opMessage('ask_post', askPostJson('old', 1, nest(100_000)), 1),
    );
    await onColdRepo(b, async (repo) => {
      const err = await laneGet(repo, OWNER, { lane_id: 'old' }).then(
        () => null,
        (e: unknown) => e as { code?: string; message: string },
      );
      expect(err).not.toBeNull();
      expect(err!.message).not.toMatch(/Maximum call stack/);
      expect(err!.code).not.toBe('internal');
    });
  });

  it('quarantines a tip that is not a commit (config, ladder); the rest syncs', async () => {
    const [a, b, remote] = await twoClones();
    // The ladder: only a's first, so b has none yet; then blobs replace config and ladder.
    const blobConfig = pushBlob(remote, 'refs/zz/config');
    const blobLadder = pushBlob(remote, 'refs/zz/ladder');
    const report = await b.sync();
    const q = quarantinedRefs(report);
    expect(q['refs/zz/config']).toBe('the ref names a blob, not a commit');
    expect(q['refs/zz/ladder']).toBe('the ref names a blob, not a commit');
    expect(report.quarantined.find((x) => x.ref === 'refs/zz/config')?.commit).toBe(blobConfig);
    expect(zzRefs(b.dir).get('refs/zz/ladder')).toBeUndefined();
    expect(zzRefs(b.dir).get('refs/zz/config')).not.toBe(blobConfig);
    expect(blobLadder).toMatch(/^[0-9a-f]{40}$/);
    // A's Lane work still reaches b (the remote's lanes/web is an honest commit).
    const posted = await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'h' });
    await a.sync();
    await b.sync();
    const asks = (await laneGet(b.repo, OWNER, { lane_id: 'web' })).asks;
    expect(asks.map((x) => x.ask_id)).toContain(posted.ask.ask_id);
    const r = await zz(b.dir, cliEnv(), 'sync');
    expect(r.stderr).not.toMatch(/not found/);
    expect(r.code, r.stderr).toBe(0);
  });

  it('a quarantine goes when the remote ref it held goes', async () => {
    const [, b, remote] = await twoClones();
    pushBlob(remote, 'refs/zz/lanes/junk');
    expect(quarantinedRefs(await b.sync())['refs/zz/lanes/junk']).toBeDefined();
    expect(sh(b.dir, 'for-each-ref', '--format=%(refname)', 'refs/zz-quarantine/')).toBe(
      'refs/zz-quarantine/origin/lanes/junk',
    );
    // An owner deletes the junk on the remote: the quarantine was kept for ever (health and
    // repo_state reported it).
    git(remote, ['update-ref', '-d', 'refs/zz/lanes/junk']);
    const report = await b.sync();
    expect(report.quarantined).toEqual([]);
    expect(sh(b.dir, 'for-each-ref', '--format=%(refname)', 'refs/zz-quarantine/')).toBe('');
  });

  it("adopts only zz's layout: junk refs and histories without ops are quarantined, never adopted", async () => {
    const [a, b, remote] = await twoClones();
    const goodOp = (lane: string) => opMessage('ask_post', askPostJson(lane, 1, '{}'), 1);
    pushBlob(remote, 'refs/zz/lanes/blobby');
    pushCommit(remote, 'refs/zz/weird', goodOp('weird'));
    pushCommit(remote, 'refs/zz/x\u202ey', goodOp('x'));
    pushCommit(remote, 'refs/zz/lanes/Bad_Id', goodOp('Bad_Id'));
    pushCommit(remote, 'refs/zz/changesets/nope', 'code\n');
    pushCommit(remote, 'refs/zz/lanes/rootonly', 'zz root refs/zz/lanes/rootonly\n');
    // A changeset is a plain code commit under a changeset id: that is adopted.
    pushCommit(remote, 'refs/zz/changesets/cs-0123456789', 'code\n');
    // Junk an older zz adopted here is not spread to the remote either.
    pushCommit(b.dir, 'refs/zz/stale', goodOp('stale'));
    const report = await b.sync();
    expect(zzRefs(remote).has('refs/zz/stale')).toBe(false);
    expect(report.pushed).toEqual([]);
    const q = quarantinedRefs(report);
    expect(q).toMatchObject({
      'refs/zz/lanes/blobby': 'the ref names a blob, not a commit',
      'refs/zz/weird': expect.stringMatching(/not a ref zz keeps/),
      'refs/zz/x\u202ey': expect.stringMatching(/not a ref zz keeps/),
      'refs/zz/lanes/Bad_Id': 'not a valid Lane id',
      'refs/zz/changesets/nope': 'not a changeset id',
      'refs/zz/lanes/rootonly': 'the history holds no ops',
    });
    expect(report.adopted).toEqual(['refs/zz/changesets/cs-0123456789']);
    expect([...zzRefs(b.dir).keys()].sort()).toEqual(
      [
        'refs/zz/changesets/cs-0123456789',
        'refs/zz/config',
        'refs/zz/lanes/_repo',
        'refs/zz/lanes/web',
        'refs/zz/stale',
      ].sort(),
    );
    // The squatted Lane id stays free, and `zz lane list` shows nothing corrupt.
    await lanePropose(b.repo, OWNER, { lane_id: 'blobby', title: 'Mine' });
    const list = await zz(b.dir, cliEnv(), 'lane', 'list');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^corrupt: -$/m);
    // The terminal sees the bidi override neutralised.
    const r = await zz(b.dir, cliEnv(), 'sync');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('quarantined x<U+202E>y');
    expect(r.stdout).not.toContain('\u202e');
    await stillSyncs(a, b);
  });
});
