import { afterEach, describe, expect, it } from 'vitest';
import { lanePropose, roleGrant } from '../../src/core/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { sh } from '../helpers/temp-repo.js';
import { makeCluster, zzRefs, type Cluster } from './git-cluster.js';

// Anyone who can push can put thousands of refs/zz/lanes/* on the remote pointing at a plain
// code commit (hostile review H4). Each is quarantined once; a ref whose remote tip is the one
// already quarantined is not judged again each round (it was a history walk and parse a ref,
// ~20 s of CPU a round for 1,500), and the report counts it instead of listing it.

let cluster: Cluster | null = null;
afterEach(() => {
  cluster?.cleanup();
  cluster = null;
});

describe('refs pushed as spam', () => {
  it('are quarantined once, then counted as unchanged; a moved one is judged again', async () => {
    cluster = await makeCluster(3);
    const [a, b, c] = cluster.clones as [
      Cluster['clones'][0],
      Cluster['clones'][0],
      Cluster['clones'][0],
    ];
    await lanePropose(a.repo, { actor: 'owner@example.com' }, { lane_id: 'web', title: 'Web' });
    await a.sync();
    for (const m of ['code 1', 'code 2', 'code 3'])
      sh(a.dir, 'commit', '-q', '--allow-empty', '-m', m);
    const code = sh(a.dir, 'rev-parse', 'HEAD');
    sh(a.dir, 'push', '-q', 'origin', 'HEAD:refs/heads/main');
    const N = 400;
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['--git-dir', cluster.remote, 'update-ref', '--stdin'], {
      input: Array.from({ length: N }, (_, i) => `create refs/zz/lanes/spam${i} ${code}\n`).join(
        '',
      ),
    });

    // What a person reads: the first 20 named, the rest counted (it was one line a ref).
    const cli = await zz(c.dir, cliEnv(), 'sync');
    expect(cli.code, cli.stderr).toBe(0);
    expect(cli.stdout.match(/^ {2}quarantined lanes\/spam/gm)).toHaveLength(20);
    expect(cli.stdout).toMatch(/^ {2}… and 380 more quarantined ref\(s\) /m);

    const r1 = await b.sync();
    const spamQ = r1.quarantined.filter((q) => q.ref.startsWith('refs/zz/lanes/spam'));
    expect(spamQ).toHaveLength(N);
    // Refused on the tip itself (one commit read), not on the oldest commit of a history
    // walked and parsed whole.
    expect(new Set(spamQ.map((q) => `${q.commit} ${q.reason}`))).toEqual(
      new Set([`${code} no op block (zz-ops) in the commit message`]),
    );
    expect(r1.adopted).toContain('refs/zz/lanes/web');
    expect(r1.still_quarantined).toBe(0);

    const r2 = await b.sync();
    expect(r2.quarantined).toEqual([]);
    expect(r2.still_quarantined).toBe(N);
    // Nothing of the spam became a local ref.
    expect([...zzRefs(b.dir).keys()].filter((r) => r.includes('spam'))).toEqual([]);

    // One of them moves on the remote: that one is judged again.
    sh(a.dir, 'commit', '-q', '--allow-empty', '-m', 'more code');
    const code2 = sh(a.dir, 'rev-parse', 'HEAD');
    sh(a.dir, 'push', '-q', 'origin', `${code2}:refs/zz/lanes/spam7`, '-f');
    const r3 = await b.sync();
    expect(r3.quarantined.map((q) => q.ref)).toEqual(['refs/zz/lanes/spam7']);
    expect(r3.still_quarantined).toBe(N - 1);

    // A bogus refs/zz/config pushed beside the spam is quarantined itself and re-arms nothing:
    // the judgement follows this clone's config, which anyone who pushes cannot set.
    sh(a.dir, 'push', '-q', 'origin', `${code2}:refs/zz/config`, '-f');
    const r4 = await b.sync();
    expect(r4.quarantined.map((q) => q.ref)).toEqual(['refs/zz/config']);
    expect(r4.still_quarantined).toBe(N);
    sh(
      a.dir,
      'push',
      '-q',
      'origin',
      `${zzRefs(a.dir).get('refs/zz/config')!}:refs/zz/config`,
      '-f',
    );
    await b.sync();

    // This clone's config moves (here by a sync; a hook's import or a daemon's round alike):
    // the next round, even a new process's first, judges the quarantine again, once.
    await roleGrant(
      a.repo,
      { actor: 'owner@example.com' },
      { grantee: 'dan@example.com', role: 'owner' },
    );
    await a.sync();
    await b.sync();
    const fresh = await zz(b.dir, cliEnv(), 'sync', '--json');
    expect(fresh.code, fresh.stderr).toBe(0);
    const again = JSON.parse(fresh.stdout) as { still_quarantined: number; quarantined: unknown[] };
    expect(again.still_quarantined).toBe(0);
    expect(again.quarantined).toHaveLength(N);
    const next = await zz(b.dir, cliEnv(), 'sync', '--json');
    expect((JSON.parse(next.stdout) as { still_quarantined: number }).still_quarantined).toBe(N);
  }, 120_000);
});
