import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { syncRepo } from '../../src/core/sync/index.js';
import { UNSAFE_CLASS } from '../../src/schema/control-chars.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeProject, sh } from '../helpers/temp-repo.js';
import { OWNER, startWebDaemon, useDashboardBrowser } from './harness.js';

// What the daemon's syncing will not bring in, where the dashboard shows the repository:
// a remote holding another project's zz state (repo_state.sync_refused) and refs kept aside
// (repo_state.quarantined), and refs of ours sync did not push (repo_state.held_back). And every character the CLI neutralises is a mark here too.

const { cleanups, signedIn } = useDashboardBrowser();

/** A zz project with a root commit of its own, initialised (its roots recorded) and pushed. */
async function project(label: string): Promise<{ dir: string; remote: string }> {
  const p = makeProject(label);
  const env = cliEnv();
  expect((await zz(p.dir, env, 'init')).code).toBe(0);
  expect((await zz(p.dir, env, 'sync')).code).toBe(0);
  return p;
}

describe('dashboard: repository health', { timeout: 120_000 }, () => {
  it('warns of a refused remote and of quarantined refs, saying what to do; nothing when all is well', async () => {
    // No automatic sync: it would clear the quarantine planted below, whose ref origin lacks
    // (a quarantine goes with the remote ref it held).
    const w = await startWebDaemon({ dir: (await project('alpha')).dir, daemon: { sync: false } });
    cleanups.push(() => w.close());
    const token = await w.token(OWNER);
    await w.call(token, 'lane_propose', { lane_id: 'web', title: 'Web' });
    const page = await signedIn(w, token);
    await page.locator('.lanes a').first().waitFor();
    expect(await page.locator('.health').count()).toBe(0);

    // A remote URL that names another project's repository: the sync is refused.
    sh(w.dir, 'remote', 'add', 'beta', (await project('beta')).remote);
    const repo = w.daemon.repos.get(w.key)!;
    await expect(syncRepo(repo, 'beta')).rejects.toThrow(/refused to sync with beta/);
    // A value fetched from a remote that failed validation, kept aside (as sync keeps it).
    const head = sh(w.dir, 'rev-parse', 'HEAD');
    sh(w.dir, 'update-ref', 'refs/zz-quarantine/origin/lanes/e\u202evil', head);

    const again = await signedIn(w, token);
    const refused = again.locator('.health-warning', { hasText: 'is refused' });
    await refused.waitFor();
    const text = (await refused.textContent())!.replace(/\s+/g, ' ');
    expect(text).toContain(
      'Sync with beta is refused. refused to sync with beta: its zz state belongs to another project',
    );
    expect(text).toContain('Nothing was merged or pushed');
    expect(text).toContain('git remote get-url beta');
    expect(text).toContain('zz sync beta --allow-unrelated');
    const kept = (await again
      .locator('.health-warning', { hasText: 'failed validation' })
      .textContent())!.replace(/\s+/g, ' ');
    expect(kept).toContain('1 ref from origin failed validation and is kept aside');
    expect(kept).toContain('zz sync origin');
    // The ref's name came from elsewhere: its bidi override is a mark, not reordered text.
    expect(kept).toContain('refs/zz/lanes/e⟨U+202E⟩vil');
    expect(kept).not.toContain('\u202e');
  });

  it('an open dashboard shows a warning as it appears, with no Lane written, and drops it once cleared', async () => {
    // No automatic sync: the warnings come from what this test does, and from nothing else.
    const w = await startWebDaemon({ dir: (await project('gamma')).dir, daemon: { sync: false } });
    cleanups.push(() => w.close());
    const token = await w.token(OWNER);
    await w.call(token, 'lane_propose', { lane_id: 'web', title: 'Web' });
    const page = await signedIn(w, token);
    await page.locator('.lanes a').first().waitFor();
    // The event stream is open: what follows reaches the page through it, not its first reads.
    await page.locator('.live-live').waitFor();
    expect(await page.locator('.health').count()).toBe(0);
    const zzRefs = () => sh(w.dir, 'for-each-ref', 'refs/zz/');
    const before = zzRefs();

    // A refused sync, as the daemon's automatic one meets it.
    sh(w.dir, 'remote', 'add', 'delta', (await project('delta')).remote);
    const repo = w.daemon.repos.get(w.key)!;
    await expect(syncRepo(repo, 'delta')).rejects.toThrow(/refused to sync with delta/);
    const refused = page.locator('.health-warning', { hasText: 'is refused' });
    await refused.waitFor();
    // A ref kept aside by another process (git itself here).
    sh(w.dir, 'update-ref', 'refs/zz-quarantine/origin/lanes/web', sh(w.dir, 'rev-parse', 'HEAD'));
    const kept = page.locator('.health-warning', { hasText: 'failed validation' });
    await kept.waitFor();
    // Neither came with a commit on refs/zz/*.
    expect(zzRefs()).toBe(before);

    // Cleared (by hand here; a sync that passes validation drops the ref): the warnings go.
    sh(w.dir, 'update-ref', '-d', 'refs/zz-quarantine/origin/lanes/web');
    await kept.waitFor({ state: 'detached' });
    await expect(refused.count()).resolves.toBe(1);
    sh(w.dir, 'update-ref', '-d', 'refs/zz-remotes/delta/config');
    await page.locator('.health').waitFor({ state: 'detached' });
    expect(zzRefs()).toBe(before);
    expect(page.errors).toEqual([]);
  });

  it('shows, as it happens, a ref of ours that sync held back and why', async () => {
    // `zz init` registered the owner's key from another environment; this daemon holds no key
    // for them (no signingEnv), so its owner-level op is unsigned and sync holds the config back.
    const w = await startWebDaemon({ dir: (await project('eta')).dir, daemon: { sync: false } });
    cleanups.push(() => w.close());
    const token = await w.token(OWNER);
    await w.call(token, 'lane_propose', { lane_id: 'web', title: 'Web' });
    const page = await signedIn(w, token);
    await page.locator('.lanes a').first().waitFor();
    await page.locator('.live-live').waitFor();
    expect(await page.locator('.health').count()).toBe(0);
    await w.call(token, 'role_grant', { grantee: 'carol@example.com', role: 'owner' });
    const r = await syncRepo(w.daemon.repos.get(w.key)!);
    expect(r.held_back.map((h) => h.ref)).toEqual(['refs/zz/config']);
    const held = page.locator('.health-warning', { hasText: 'not pushed to' });
    await held.waitFor();
    const text = (await held.textContent())!.replace(/\s+/g, ' ');
    expect(text).toContain('1 ref of this clone not pushed to origin');
    expect(text).toContain('refs/zz/config');
    expect(text).toContain("is not signed by an owner's key");
    expect(page.errors).toEqual([]);
  });

  it('names the first 50 quarantined refs and counts the rest', async () => {
    const w = await startWebDaemon();
    cleanups.push(() => w.close());
    const token = await w.token(OWNER);
    const head = sh(w.dir, 'rev-parse', 'HEAD');
    const refs = Array.from({ length: 53 }, (_, i) => `refs/zz-quarantine/origin/lanes/q${i}`);
    execFileSync('git', ['update-ref', '--stdin'], {
      cwd: w.dir,
      input: refs.map((r) => `create ${r} ${head}\n`).join(''),
    });
    const page = await signedIn(w, token);
    const kept = page.locator('.health-warning', { hasText: 'failed validation' });
    await kept.waitFor();
    expect((await kept.textContent())!.replace(/\s+/g, ' ')).toContain(
      '50 refs from origin failed validation',
    );
    expect(await kept.locator('li').count()).toBe(50);
    const more = (await page
      .locator('.health-warning', { hasText: 'more refs kept aside' })
      .textContent())!.replace(/\s+/g, ' ');
    expect(more).toContain('3 more refs kept aside');
    expect(more).toContain('git for-each-ref refs/zz-quarantine/');
  });

  it('marks every character the CLI neutralises, from the one definition the daemon serves', async () => {
    const w = await startWebDaemon();
    cleanups.push(() => w.close());
    const token = await w.token(OWNER);
    const odd = [
      '\u200e',
      '\u200f',
      '\u061c',
      '\u2028',
      '\u2029',
      '\u202e',
      '\u2066',
      '\x1b',
      '\x07',
      '\x9b',
      '\x7f',
    ];
    const title = `T${odd.join('x')}end`;
    await w.call(token, 'lane_propose', { lane_id: 'odd', title });
    const page = await signedIn(w, token);
    const link = page.locator('.lanes .lane-title', { hasText: 'end' });
    await link.waitFor();
    const shown = (await link.textContent())!;
    for (const ch of odd) {
      expect(shown).not.toContain(ch);
      expect(shown).toContain(
        `⟨U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}⟩`,
      );
    }
    // The set is served by the daemon from src/schema/control-chars.ts, not copied into the page.
    const served = await page.evaluate(
      "import('/assets/control-chars.js').then((m) => m.UNSAFE_CLASS)",
    );
    expect(served).toBe(UNSAFE_CLASS);
  });
});
