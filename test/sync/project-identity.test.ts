import { afterEach, describe, expect, it } from 'vitest';
import { initRepo, repoState, ZzRepo } from '../../src/core/index.js';
import { startAutoSync, type AutoSync } from '../../src/core/sync/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeProject, sh } from '../helpers/temp-repo.js';

// `zz sync` must not merge another project's zz state (DESIGN §7). Singleton refs start from
// one deterministic root, so two projects' configs merge as readily as two clones' of one
// project; `zz init` records the checkout's root commits in refs/zz/config, and sync refuses
// a remote whose config names only other roots, before anything moves, unless
// --allow-unrelated. All on real git: bare remotes, checkouts, the CLI in-process.

const project = makeProject;

/** What a sync must leave as it was: zz's refs in a checkout, every ref of a bare remote. */
const localRefs = (dir: string): string =>
  sh(dir, 'for-each-ref', 'refs/zz/', 'refs/zz-sync/', 'refs/zz-quarantine/');
const allRefs = (bare: string): string => sh(bare, 'for-each-ref');
const rootOf = (dir: string): string => sh(dir, 'rev-list', '--max-parents=0', 'HEAD');

/** A project with zz initialised (roots recorded) and a Lane of its own, pushed. */
async function zzProject(label: string, env: NodeJS.ProcessEnv) {
  const p = project(label);
  const init = await zz(p.dir, env, 'init', '--json');
  expect(init.code).toBe(0);
  expect(init.json().project_roots_recorded).toEqual([rootOf(p.dir)]);
  const lane = await zz(p.dir, env, 'lane', 'propose', '--lane-id', label, '--title', label);
  expect(lane.code).toBe(0);
  expect((await zz(p.dir, env, 'sync')).code).toBe(0);
  return p;
}

let auto: AutoSync | null = null;
const opened: ZzRepo[] = [];
afterEach(async () => {
  await auto?.close();
  auto = null;
  for (const r of opened.splice(0)) r.close();
});

describe('zz sync and another project', () => {
  it('refuses a remote holding another project’s zz state: nothing merged, nothing pushed, exit 6', async () => {
    const envA = cliEnv();
    const a = await zzProject('alpha', envA);
    const b = await zzProject('beta', cliEnv());
    // A typo in the URL: alpha's origin now names beta's repository.
    sh(a.dir, 'remote', 'set-url', 'origin', b.remote);
    const [mineBefore, theirsBefore] = [localRefs(a.dir), allRefs(b.remote)];
    const r = await zz(a.dir, envA, 'sync');
    expect(r.code).toBe(6);
    expect(r.stdout).toBe('');
    const short = (dir: string) => rootOf(dir).slice(0, 10);
    expect(r.stderr).toContain('refused to sync with origin');
    expect(r.stderr).toContain(`starts at ${short(b.dir)}, this one's at ${short(a.dir)}`);
    expect(r.stderr).toContain('Nothing was merged or pushed');
    expect(r.stderr).toContain('zz sync origin --allow-unrelated');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(localRefs(a.dir)).toBe(mineBefore);
    expect(allRefs(b.remote)).toBe(theirsBefore);
    expect(sh(a.dir, 'for-each-ref', 'refs/zz/lanes/')).not.toMatch(/beta/);
    // --json is refused the same way (no report, the same exit code).
    expect((await zz(a.dir, envA, 'sync', '--json')).code).toBe(6);
    // repo_state says which remote and why.
    const state = JSON.parse((await zz(a.dir, envA, 'repo', 'state', '--json')).stdout);
    expect(state.project_roots).toEqual([rootOf(a.dir)]);
    expect(state.sync_refused).toEqual([
      expect.objectContaining({
        remote: 'origin',
        local_roots: [rootOf(a.dir)],
        remote_roots: [rootOf(b.dir)],
      }),
    ]);
    // A `git pull` from there (the post-merge hook's fast-forward) adopts nothing either.
    const hook = await zz(a.dir, envA, 'hook', 'post-merge', '0');
    expect(hook.stderr).toContain('refused to sync with origin');
    expect(localRefs(a.dir)).toBe(mineBefore);
  });

  it('still merges two clones of one project that each ran zz init', async () => {
    const a = project('gamma');
    const bob = tempDir('zz-gamma-bob-');
    sh(bob, 'clone', '-q', a.remote, '.');
    sh(bob, 'config', 'user.email', 'bob@example.com');
    const [envA, envB] = [cliEnv(), cliEnv()];
    for (const [dir, env] of [
      [a.dir, envA],
      [bob, envB],
    ] as const) {
      const init = await zz(dir, env, 'init', '--json');
      // Both record the project's root, each in a config of its own.
      expect(init.json()).toMatchObject({
        created_config: true,
        project_roots_recorded: [rootOf(a.dir)],
      });
    }
    expect((await zz(bob, envB, 'lane', 'propose', '--lane-id', 'b', '--title', 'B')).code).toBe(0);
    expect((await zz(bob, envB, 'sync')).code).toBe(0);
    const r = await zz(a.dir, envA, 'sync', '--json');
    expect(r.code).toBe(0);
    expect(r.json().merged.map((m: { ref: string }) => m.ref)).toContain('refs/zz/config');
    expect(r.json().pushed).toContain('refs/zz/config');
    expect(localRefs(a.dir)).toMatch(/refs\/zz\/lanes\/b/);
  });

  it('merges with --allow-unrelated, and later syncs with either project are not refused', async () => {
    const envA = cliEnv();
    const a = await zzProject('delta', envA);
    const b = await zzProject('epsilon', cliEnv());
    sh(a.dir, 'remote', 'add', 'other', b.remote);
    sh(a.dir, 'config', 'zz.remote', 'other');
    expect((await zz(a.dir, envA, 'sync')).code).toBe(6);
    const r = await zz(a.dir, envA, 'sync', '--allow-unrelated', '--json');
    expect(r.code).toBe(0);
    expect(r.json().pushed).toEqual(
      expect.arrayContaining(['refs/zz/config', 'refs/zz/lanes/delta']),
    );
    // The merged config names both projects' roots: a sync with beta's remote, and one with
    // alpha's own (its config still names only delta's root), are both the same project now.
    const repo = await ZzRepo.open(a.dir);
    opened.push(repo);
    expect((await repo.config.read()).state.roots).toEqual([rootOf(a.dir), rootOf(b.dir)].sort());
    expect((await zz(a.dir, envA, 'sync')).code).toBe(0);
    const home = await zz(a.dir, envA, 'sync', 'origin');
    expect(home.stderr).toBe('');
    expect(home.code).toBe(0);
    // And beta's own checkout takes the merged state from its remote.
    const beta = await zz(b.dir, cliEnv(), 'sync', '--json');
    expect(beta.code).toBe(0);
    expect(sh(b.dir, 'for-each-ref', 'refs/zz/lanes/')).toMatch(/delta/);
  });

  it('syncs as before when a config records no roots (made before the check)', async () => {
    const envA = cliEnv();
    const a = await zzProject('zeta', envA);
    const old = project('eta');
    // An older zz's init: no project_roots in repo_init.
    const repo = await ZzRepo.open(old.dir);
    opened.push(repo);
    await initRepo(repo, { owner: 'owner@example.com', default_branch: 'main' });
    expect((await repo.config.read()).state.roots).toEqual([]);
    sh(a.dir, 'remote', 'set-url', 'origin', old.remote);
    expect((await zz(old.dir, cliEnv(), 'sync')).code).toBe(0);
    const r = await zz(a.dir, envA, 'sync', '--json');
    expect(r.code).toBe(0);
    expect(r.json().merged.map((m: { ref: string }) => m.ref)).toContain('refs/zz/config');
  });

  it('never crashes on a remote config whose roots are garbage: it is quarantined, nothing merged into config', async () => {
    const envA = cliEnv();
    const a = await zzProject('theta', envA);
    const b = await zzProject('iota', cliEnv());
    // beta's repo_init rewritten with a root list no zz writes (too many, not commit names).
    const tip = sh(b.remote, 'rev-parse', 'refs/zz/config');
    expect(sh(b.remote, 'log', '-1', '--format=%s', tip)).toMatch(/^repo_init/);
    const parent = sh(b.remote, 'rev-parse', `${tip}^`);
    const garbage = JSON.stringify([...Array(40)].map((_, i) => 'x'.repeat(1000) + i));
    const message = sh(b.remote, 'log', '-1', '--format=%B', tip).replace(
      /"project_roots":\[[^\]]*\]/,
      `"project_roots":${garbage}`,
    );
    expect(message).toContain('xxxx');
    const forged = sh(
      b.remote,
      '-c',
      'user.name=x',
      '-c',
      'user.email=x@example.com',
      'commit-tree',
      `${tip}^{tree}`,
      '-p',
      parent,
      '-m',
      message,
    );
    sh(b.remote, 'update-ref', 'refs/zz/config', forged);
    sh(a.dir, 'remote', 'set-url', 'origin', b.remote);
    const configBefore = sh(a.dir, 'rev-parse', 'refs/zz/config');
    const r = await zz(a.dir, envA, 'sync', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.json().quarantined).toEqual([
      expect.objectContaining({
        ref: 'refs/zz/config',
        commit: forged,
        reason: expect.stringMatching(/project_roots/),
      }),
    ]);
    expect(sh(a.dir, 'rev-parse', 'refs/zz/config')).toBe(configBefore);
  });
});

describe('zz init and the project’s roots', () => {
  it('records none in a shallow clone and says so; a later init of an owner adds them', async () => {
    const p = project('kappa');
    const shallow = tempDir('zz-kappa-shallow-');
    sh(p.dir, 'commit', '-q', '--allow-empty', '-m', 'second');
    sh(p.dir, 'push', '-q', 'origin', 'main');
    sh(shallow, 'clone', '-q', '--depth', '1', `file://${p.remote}`, '.');
    sh(shallow, 'config', 'user.email', 'owner@example.com');
    const env = cliEnv();
    const first = await zz(shallow, env, 'init', '--json');
    expect(first.code).toBe(0);
    expect(first.json().project_roots_recorded).toBeNull();
    expect(first.json().notes.join('\n')).toMatch(/shallow clone: run git fetch --unshallow/);
    sh(shallow, 'fetch', '-q', '--unshallow', 'origin');
    const again = await zz(shallow, env, 'init', '--json');
    expect(again.json()).toMatchObject({
      created_config: false,
      project_roots_recorded: [rootOf(p.dir)],
      nothing_changed: false,
    });
    expect(sh(shallow, 'log', '-1', '--format=%B', 'refs/zz/config')).toMatch(
      /"op":"repo_add_roots"/,
    );
    // Recorded once: a third init has nothing to add.
    expect((await zz(shallow, env, 'init', '--json')).json().project_roots_recorded).toBeNull();
  });

  it('a fresh clone whose remote holds another project’s zz state does not adopt it', async () => {
    const b = await zzProject('lambda', cliEnv());
    const a = project('mu');
    sh(a.dir, 'remote', 'set-url', 'origin', b.remote);
    const r = await zz(a.dir, cliEnv(), 'init', '--json');
    expect(r.code).toBe(0);
    expect(r.json()).toMatchObject({
      created_config: true,
      adopted: [],
      refused_remotes: ['origin'],
    });
    expect(sh(a.dir, 'for-each-ref', 'refs/zz/lanes/')).not.toMatch(/lambda/);
  });
});

describe('the daemon’s own syncing and another project', () => {
  it('refuses every round, says it once, and repo_state shows why', async () => {
    const envA = cliEnv();
    const a = await zzProject('nu', envA);
    const b = await zzProject('xi', cliEnv());
    sh(a.dir, 'remote', 'set-url', 'origin', b.remote);
    const repo = await ZzRepo.open(a.dir);
    opened.push(repo);
    const logs: string[] = [];
    const errors: Error[] = [];
    auto = startAutoSync(new Map([['a', repo]]), {
      intervalMs: 3_600_000,
      watchMs: 3_600_000,
      log: (l) => logs.push(l),
      onError: (_r, e) => errors.push(e),
    });
    await auto.ready;
    const [mineBefore, theirsBefore] = [localRefs(a.dir), allRefs(b.remote)];
    await auto.syncNow();
    await auto.syncNow();
    expect(errors).toHaveLength(2);
    expect(logs.filter((l) => l.includes('refused to sync with origin'))).toHaveLength(1);
    expect(localRefs(a.dir)).toBe(mineBefore);
    expect(allRefs(b.remote)).toBe(theirsBefore);
    const state = await repoState(repo, null);
    expect(state.sync_refused.map((s) => s.remote)).toEqual(['origin']);
    expect(state.sync_refused[0]!.message).toContain('--allow-unrelated');
    // Back to the right URL: the next round syncs, and says so once.
    sh(a.dir, 'remote', 'set-url', 'origin', a.remote);
    await auto.syncNow();
    expect(errors).toHaveLength(2);
    expect(logs.at(-1)).toMatch(/synced again/);
    expect((await repoState(repo, null)).sync_refused).toEqual([]);
  });
});
