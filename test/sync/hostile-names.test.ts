import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { askPost, laneGet, lanePropose } from '../../src/core/index.js';
import { formatSyncReport, syncCounts } from '../../src/cli/sync-command.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { makeCluster, zzRefs, type Clone, type Cluster } from './git-cluster.js';

// A hostile clone pushes refs whose names conflict with others (`lanes/junk` and later
// `lanes/junk/x`: git keeps refs as files, so one cannot be both a file and a directory). One
// such push must not stop anyone's sync: git's own fetch failed on the stale tracking ref
// ("cannot lock ref …: '…/lanes/junk' exists") and the atomic push failed every round.

const OWNER = { actor: 'owner@example.com' };

let cluster: Cluster | null = null;
const cleanups: Array<() => void> = [];
afterEach(() => {
  cluster?.cleanup();
  cluster = null;
  for (const c of cleanups.splice(0)) c();
});

function git(dir: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd: dir, encoding: 'utf8' }).trim();
}

/** Two honest clones sharing Lanes `web` and `api`, and a hostile clone of the hub. */
async function setup(): Promise<{ a: Clone; b: Clone; evil: string }> {
  cluster = await makeCluster(2);
  const [a, b] = cluster.clones as [Clone, Clone];
  await lanePropose(a.repo, OWNER, { lane_id: 'web', title: 'Web' });
  await lanePropose(a.repo, OWNER, { lane_id: 'api', title: 'Api' });
  await a.sync();
  await b.sync();
  const evil = makeRepo('zz-evil-');
  cleanups.push(evil.cleanup);
  git(evil.dir, 'remote', 'add', 'origin', cluster.remote);
  git(evil.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/evil/*');
  return { a, b, evil: evil.dir };
}

/** The hostile clone replaces every ref named in `del` with `put` (plain git pushes). */
function hostile(evil: string, del: string[], put: string[]): void {
  const c = git(evil, 'rev-parse', 'refs/evil/lanes/web');
  for (const r of del) git(evil, 'push', '-q', 'origin', `:refs/zz/${r}`);
  for (const r of put) git(evil, 'push', '-q', 'origin', `${c}:refs/zz/${r}`);
}

/** Each of a and b posts an Ask in `lane` and syncs; both then hold both Asks. */
async function bothWays(a: Clone, b: Clone, lane = 'api'): Promise<void> {
  const pa = await askPost(a.repo, OWNER, { lane_id: lane, kind: 'work', title: 'from a' });
  const pb = await askPost(b.repo, OWNER, { lane_id: lane, kind: 'work', title: 'from b' });
  await a.sync();
  await b.sync();
  await a.sync();
  for (const c of [a, b]) {
    const asks = (await laneGet(c.repo, OWNER, { lane_id: lane })).asks.map((x) => x.ask_id);
    expect(asks).toEqual(expect.arrayContaining([pa.ask.ask_id, pb.ask.ask_id]));
  }
  expect(zzRefs(a.dir).get(`refs/zz/lanes/${lane}`)).toBe(
    zzRefs(cluster!.remote).get(`refs/zz/lanes/${lane}`),
  );
}

const names = (dir: string, prefix: string) =>
  sh(dir, 'for-each-ref', '--format=%(refname)', prefix).split('\n').filter(Boolean);

describe('refs whose names conflict on the remote', () => {
  it('lanes/junk, then lanes/junk/x: the honest clones keep syncing both ways', async () => {
    const { a, b, evil } = await setup();
    hostile(evil, [], ['lanes/junk']);
    await a.sync();
    expect(names(a.dir, 'refs/zz-remotes/origin/lanes/junk')).toEqual([
      'refs/zz-remotes/origin/lanes/junk',
    ]);
    hostile(evil, ['lanes/junk'], ['lanes/junk/x']);
    const r = await a.sync();
    // The junk name is reported, never fetched: no local ref of it to conflict later.
    expect(r.quarantined).toEqual([
      expect.objectContaining({ ref: 'refs/zz/lanes/junk/x', reason: 'not a valid Lane id' }),
    ]);
    expect(names(a.dir, 'refs/zz-remotes/origin/lanes/junk')).toEqual([]);
    expect(names(a.dir, 'refs/zz-quarantine/')).toEqual([]);
    expect(formatSyncReport(r)).toMatch(
      /quarantined lanes\/junk\/x: commit \w{10} not a valid Lane id \(not kept here; an owner deletes it: git push origin :refs\/zz\/lanes\/junk\/x\)/,
    );
    await bothWays(a, b);
  });

  it('lanes/junk/x, then lanes/junk: the honest clones keep syncing both ways', async () => {
    const { a, b, evil } = await setup();
    hostile(evil, [], ['lanes/junk/x']);
    await a.sync();
    // A `git fetch` with zz's refspec (as `git pull` runs it) leaves a tracking ref of the junk.
    git(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
    expect(names(a.dir, 'refs/zz-remotes/origin/lanes/junk')).toEqual([
      'refs/zz-remotes/origin/lanes/junk/x',
    ]);
    hostile(evil, ['lanes/junk/x'], ['lanes/junk']);
    // A name of zz's layout (its history holds another Lane's ops): quarantined and kept.
    const r = await a.sync();
    expect(r.quarantined).toEqual([
      expect.objectContaining({ ref: 'refs/zz/lanes/junk', reason: expect.any(String) }),
    ]);
    expect(names(a.dir, 'refs/zz-remotes/origin/lanes/junk')).toEqual([
      'refs/zz-remotes/origin/lanes/junk',
    ]);
    expect(names(a.dir, 'refs/zz-quarantine/')).toEqual(['refs/zz-quarantine/origin/lanes/junk']);
    await bothWays(a, b);
    // And back again: the quarantine of lanes/junk goes as lanes/junk/x is reported.
    hostile(evil, ['lanes/junk'], ['lanes/junk/x']);
    const back = await a.sync();
    expect(back.quarantined.map((q) => [q.ref, q.kept])).toEqual([['refs/zz/lanes/junk/x', false]]);
    expect(names(a.dir, 'refs/zz-quarantine/')).toEqual([]);
    await bothWays(a, b);
  });

  it('names git takes and zz would not make (lanes/-x, a name past 1,024 characters): reported, their tracking refs pruned', async () => {
    const { a, b, evil } = await setup();
    const long = `lanes/${Array.from({ length: 6 }, () => 'l'.repeat(200)).join('/')}`;
    hostile(evil, [], ['lanes/-x', long, 'weird/-y']);
    // A plain `git fetch` with zz's refspec (as `git pull` runs it) tracks them all.
    git(a.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
    expect(names(a.dir, 'refs/zz-remotes/origin/')).toEqual(
      expect.arrayContaining([
        'refs/zz-remotes/origin/lanes/-x',
        `refs/zz-remotes/origin/${long}`,
        'refs/zz-remotes/origin/weird/-y',
      ]),
    );
    const r = await a.sync();
    expect(r.quarantined.map((q) => [q.ref, q.kept])).toEqual(
      expect.arrayContaining([
        ['refs/zz/lanes/-x', false],
        [`refs/zz/${long}`, false],
        ['refs/zz/weird/-y', false],
      ]),
    );
    expect(names(a.dir, 'refs/zz-remotes/origin/').filter((n) => /-x|-y|lll/.test(n))).toEqual([]);
    await bothWays(a, b);
  });

  it('a name that conflicts with one of our Lanes: that Lane waits, said so; the rest syncs', async () => {
    const { a, b, evil } = await setup();
    hostile(evil, ['lanes/web'], ['lanes/web/x']);
    await askPost(a.repo, OWNER, { lane_id: 'web', kind: 'work', title: 'waits' });
    const r = await a.sync();
    const web = sh(a.dir, 'rev-parse', 'refs/zz/lanes/web');
    expect(r.not_pushed).toEqual([
      { ref: 'refs/zz/lanes/web', commit: web, name_taken_by: 'refs/zz/lanes/web/x' },
    ]);
    expect(r.recreated).toEqual([]);
    expect(formatSyncReport(r)).toContain(
      `not pushed: lanes/web: local commit ${web.slice(0, 10)} stays here while origin holds refs/zz/lanes/web/x, whose name conflicts with it; an owner deletes that ref: git push origin :refs/zz/lanes/web/x`,
    );
    // A new Lane of ours still goes out, and api syncs both ways.
    await lanePropose(a.repo, OWNER, { lane_id: 'new', title: 'New' });
    expect((await a.sync()).pushed).toContain('refs/zz/lanes/new');
    await bothWays(a, b);
    expect(zzRefs(b.dir).get('refs/zz/lanes/new')).toBe(zzRefs(a.dir).get('refs/zz/lanes/new'));
    // The owner deletes the junk: web goes back out.
    git(evil, 'push', '-q', 'origin', ':refs/zz/lanes/web/x');
    const healed = await a.sync();
    expect(healed.not_pushed).toEqual([]);
    expect(healed.pushed).toContain('refs/zz/lanes/web');
    expect(zzRefs(cluster!.remote).get('refs/zz/lanes/web')).toBe(web);
  });

  it('a thousand names outside the layout: counted, the first 10 listed with the command that deletes them', async () => {
    const { a, b } = await setup();
    const c = sh(cluster!.remote, 'rev-parse', 'refs/zz/lanes/web');
    const junk = Array.from(
      { length: 1000 },
      (_, i) => `refs/zz/junk/n${String(i).padStart(4, '0')}`,
    );
    execFileSync('git', ['update-ref', '--stdin'], {
      cwd: cluster!.remote,
      input: junk.map((r) => `create ${r} ${c}\n`).join(''),
    });
    const r = await a.sync();
    expect(r.quarantined.map((q) => [q.ref, q.kept])).toEqual(
      junk.slice(0, 10).map((j) => [j, false]),
    );
    expect(r.outside_layout).toEqual({ count: 1000, shown: 10, truncated: true });
    expect(syncCounts(r).quarantined).toBe(1000);
    const text = formatSyncReport(r);
    expect(text.split('\n').length).toBeLessThan(20);
    expect(text).toContain('quarantined 1000');
    expect(text).toContain(
      "  … and 990 more name(s) outside zz's layout on origin (1000 in all; git ls-remote origin 'refs/zz/*' lists them); an owner deletes each: git push origin :<ref>",
    );
    // A few are listed whole, and nothing is counted twice.
    execFileSync('git', ['update-ref', '--stdin'], {
      cwd: cluster!.remote,
      input: junk
        .slice(3)
        .map((r) => `delete ${r}\n`)
        .join(''),
    });
    const few = await a.sync();
    expect(few.quarantined.map((q) => q.ref)).toEqual(junk.slice(0, 3));
    expect(few.outside_layout).toEqual({ count: 3, shown: 3, truncated: false });
    expect(formatSyncReport(few)).not.toContain('more name(s)');
    await bothWays(a, b);
  });
});
