import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { askAnswer, askClaim, initRepo, ladderBuild, ZzRepo } from '../../src/core/index.js';
import { syncRepo } from '../../src/core/sync/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { OWNER, startWebDaemon, useDashboardBrowser, type WebDaemon } from './harness.js';
import { AGENT, seedLane } from './seed.js';

// More of issue 16 in the system Chromium, each shaped like what a person would do: the
// board with cancelled Asks and the Mine filter, refusals from sync on an Ask, search hits from
// another repository, owner-only revoke, the keyboard alone, a 375 px window.

const { cleanups, signedIn } = useDashboardBrowser();

async function daemon(opts: Parameters<typeof startWebDaemon>[0] = {}): Promise<WebDaemon> {
  const w = await startWebDaemon(opts);
  cleanups.push(() => w.close());
  return w;
}

const column = (page: Page, state: string) => page.locator(`.column[data-state="${state}"]`);
const titles = (page: Page, state: string) =>
  column(page, state).locator('.card-title').allTextContents();

describe('dashboard views (audit of issue 16)', () => {
  it('a Lane with a cancelled Ask still shows its board; the card says cancelled', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    await w.call(seeded.owner, 'ask_cancel', {
      lane_id: 'web',
      ask_id: seeded.ids.docs,
      reason: 'not needed',
    });
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    const card = column(page, 'answered').locator('.card', {
      hasText: 'Screenshots in the README',
    });
    await card.waitFor();
    expect(await card.locator('.outcome').textContent()).toBe('cancelled');
    expect(await titles(page, 'open')).toContain('Review the board');
    // Cancelled live, from another client, too.
    await w.call(seeded.owner, 'ask_cancel', { lane_id: 'web', ask_id: seeded.ids.review });
    await column(page, 'answered').locator('.card', { hasText: 'Review the board' }).waitFor();
    expect(page.errors).toEqual([]);
  });

  it('Mine keeps the Asks the viewer holds or posted', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    // The agent posts one of its own; it holds one claim and answered another.
    await w.call(seeded.agent, 'ask_post', { lane_id: 'web', kind: 'work', title: 'Agent idea' });
    const page = await signedIn(w, seeded.agent, '#/lane/web');
    await column(page, 'answered').locator('.card').first().waitFor();
    await page.getByLabel('Mine').check();
    await expect.poll(() => titles(page, 'open')).toEqual(['Agent idea']);
    expect(await titles(page, 'claimed')).toEqual(['Lanes board with live updates']);
    // It answered one: still its own.
    expect(await titles(page, 'answered')).toEqual(['Fix the lease countdown rounding']);
    await page.getByLabel('Mine').uncheck();
    await expect.poll(async () => (await titles(page, 'open')).length).toBeGreaterThan(1);
  });

  it('a claim whose lease runs out while the page is open moves to open, without a write', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const r = await w.call(seeded.owner, 'ask_post', {
      lane_id: 'web',
      kind: 'work',
      title: 'Short lease',
    });
    const id = (r.ask as { ask_id: string }).ask_id;
    await w.call(seeded.agent, 'ask_claim', { lane_id: 'web', ask_id: id, lease_seconds: 60 });
    const page = await signedIn(w, seeded.owner);
    // The page's clock is the test's: a minute passes in an instant, no write in between.
    await page.clock.install();
    await page.goto(`${w.url}/#/lane/web`);
    const card = (state: string) =>
      column(page, state).locator('.card', { hasText: 'Short lease' });
    await card('claimed').waitFor();
    await page.clock.fastForward('01:01');
    await card('open').waitFor();
    expect(await card('open').locator('.lease').textContent()).toBe('lease expired');
    expect(await card('open').locator('.holder').textContent()).toBe(AGENT);
  });

  it('shows what agents write as text, never as markup', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const evil = '<img src=x onerror="document.title=1">';
    await w.call(seeded.agent, 'ask_post', {
      lane_id: 'web',
      kind: 'work',
      title: `Title ${evil}`,
      body: `Body ${evil}`,
      payload: { note: evil },
    });
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    const card = column(page, 'open').locator('.card', { hasText: 'Title <img' });
    await card.waitFor();
    expect(await card.locator('.card-title').textContent()).toBe(`Title ${evil}`);
    await card.click();
    await page.locator('.ask pre.body').waitFor();
    expect(await page.locator('.ask pre.body').textContent()).toBe(`Body ${evil}`);
    expect(await page.locator('.payload').textContent()).toContain('onerror');
    expect(await page.locator('img').count()).toBe(0);
    expect(await page.title()).toBe('zz dashboard');
    expect(page.errors).toEqual([]);
  });

  it('an Ask shows a claim lost and a conflicting answer once the daemon syncs, live', async () => {
    // The daemon syncs by itself soon after a plain `git fetch` moves refs/zz-remotes/*
    // (DESIGN §7); its timer is pushed out of the test's way.
    const w = await daemon({ daemon: { sync: { intervalMs: 3_600_000, watchMs: 100 } } });
    const seeded = await seedLane(w);
    const post = async (title: string) => {
      const r = await w.call(seeded.owner, 'ask_post', { lane_id: 'web', kind: 'work', title });
      return (r.ask as { ask_id: string }).ask_id;
    };
    const lost = await post('Contended');
    const twice = await post('Answered twice');
    await w.call(seeded.agent, 'ask_claim', { lane_id: 'web', ask_id: twice });
    // A second replica of the same repository through a bare remote (plain git pushes what
    // the daemon has: its tracking refs do not move, so it does not sync yet).
    const remote = mkdtempSync(join(tmpdir(), 'zz-web-remote-'));
    cleanups.push(() => rmSync(remote, { recursive: true, force: true }));
    sh(remote, 'init', '-q', '--bare', '-b', 'main');
    sh(w.dir, 'remote', 'add', 'origin', remote);
    sh(w.dir, 'push', '-q', 'origin', 'main', '+refs/zz/*:refs/zz/*');
    const other = makeRepo('zz-web-replica-');
    cleanups.push(other.cleanup);
    sh(other.dir, 'remote', 'add', 'origin', remote);
    const replica = await ZzRepo.open(other.dir, { key: w.key });
    cleanups.push(() => replica.close());
    const sync = () => syncRepo(replica, undefined, { backoff: async () => {} });
    await sync();
    // Offline from each other: Alice claims on the replica, Bob on the daemon; the agent,
    // holding `twice` on both, answers it on both.
    await askClaim(replica, { actor: 'alice@example.com' }, { lane_id: 'web', ask_id: lost });
    await askAnswer(
      replica,
      { actor: AGENT },
      { lane_id: 'web', ask_id: twice, outcome: 'complete', result: 'on the replica' },
    );
    await sync();
    const bob = await w.token('bob@example.com');
    await w.call(bob, 'ask_claim', { lane_id: 'web', ask_id: lost });
    await w.call(seeded.agent, 'ask_answer', {
      lane_id: 'web',
      ask_id: twice,
      outcome: 'deny',
      result: 'on the daemon',
    });
    const page = await signedIn(w, seeded.owner, `#/ask/web/${lost}`);
    await expect.poll(() => page.locator('.history li').count()).toBe(2); // posted, claimed
    expect(await page.locator('.ask .holder').textContent()).toBe('held by bob@example.com');
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    sh(w.dir, 'fetch', '-q', 'origin', '+refs/zz/*:refs/zz-remotes/origin/*');
    // Without a reload: the refused claim names the winner.
    await expect
      .poll(() => page.locator('.history .rejected').allTextContents(), { timeout: 20_000 })
      .toEqual(['claim lost to alice@example.com']);
    expect(await page.locator('.ask .holder').textContent()).toBe('held by alice@example.com');
    await page.goto(`${w.url}/#/ask/web/${twice}`);
    const conflict = page.locator('.history .rejected');
    await expect
      .poll(() => conflict.allTextContents())
      .toEqual([expect.stringMatching(/^conflicting answer: sent to ask-[0-9a-f]{10}$/)]);
    const resolveId = /ask-[0-9a-f]{10}/.exec((await conflict.textContent())!)![0];
    await page.goto(`${w.url}/#/lane/web`);
    await column(page, 'open').locator(`a.card[href$="/${resolveId}"]`).waitFor();
    expect(page.errors).toEqual([]);
  });

  it('reconnects when the restarting daemon first answers the stream with an error', async () => {
    // EventSource retries a dropped connection by itself, but gives up for good on an error
    // status (a daemon shutting down answers 503): the page must open a new stream itself.
    const first = await startWebDaemon();
    const { dir } = first;
    const port = first.daemon.port;
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const seeded = await seedLane(first);
    const page = await signedIn(first, seeded.owner, '#/lane/web');
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    await first.close({ keepRepo: true });
    let refused = 0;
    const stub = createServer((req, res) => {
      if (req.url?.includes('/events')) refused++;
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end('{"error":"the daemon is shutting down","code":"unavailable"}');
    });
    await new Promise<void>((r) => stub.listen(port, '127.0.0.1', r));
    await expect.poll(() => refused, { timeout: 15_000 }).toBeGreaterThan(0);
    await new Promise((r) => stub.close(r));
    stub.closeAllConnections();
    const again = await daemon({ dir, port });
    await expect.poll(() => page.locator('.live').textContent(), { timeout: 15_000 }).toBe('live');
    await again.call(seeded.agent, 'ask_post', {
      lane_id: 'web',
      kind: 'work',
      title: 'Posted after the refusal',
    });
    await column(page, 'open').locator('.card', { hasText: 'Posted after the refusal' }).waitFor();
  });

  it('search finds rungs of every served repository the actor may read; another repository’s hit is not opened as ours', async () => {
    const other = makeRepo('zz-web-other-');
    cleanups.push(other.cleanup);
    const w = await daemon({ repos: [other.dir] });
    const otherKey = [...w.daemon.repos.keys()].find((k) => k !== w.key)!;
    const otherRepo = w.daemon.repos.get(otherKey)!;
    await initRepo(otherRepo, { owner: OWNER, default_branch: 'main' });
    await ladderBuild(w.daemon.repos.get(w.key)!, { actor: OWNER });
    await ladderBuild(otherRepo, { actor: OWNER });
    // The other repository is private: its rungs are searchable here because the owner holds a
    // token of its own too (test/search/search-access.test.ts has the refusals).
    await w.daemon.tokensFor(otherKey)!.create(OWNER, 'login');
    const page = await signedIn(w, await w.token(OWNER), '#/ladder');
    await page.getByLabel('Search the Ladder').fill('demo');
    await page.getByRole('button', { name: 'Search' }).click();
    const hits = page.getByRole('list', { name: 'Search results' });
    await expect.poll(() => hits.locator('.repo').allTextContents()).toContain(otherKey);
    expect(await hits.locator('.repo').allTextContents()).toContain(w.key);
    // Ours opens the rung here; the other repository's shows what the hit carries, no link.
    const ours = hits.locator('li', { has: page.locator('.repo', { hasText: w.key }) }).first();
    const theirs = hits
      .locator('li', { has: page.locator('.repo', { hasText: otherKey }) })
      .first();
    expect(await theirs.locator('a').count()).toBe(0);
    expect(await theirs.textContent()).toContain('README.md');
    await ours.getByRole('link').first().click();
    await page.locator('.rung').waitFor();
    expect(page.errors).toEqual([]);
  });

  it('only an owner may revoke: a member’s revoke through the session is refused in the API’s words', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const member = await w.token('member@example.com');
    const page = await signedIn(w, member, '#/agents');
    await page.locator('table.tokens').waitFor();
    const key = w.key;
    const res = await page.evaluate(
      async ([k, actor]) => {
        const r = await fetch(`/api/repos/${k}/tools/token_revoke`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            // As the page's own calls do: the session's page key beside the cookie.
            'x-zz-session':
              (
                globalThis as unknown as { sessionStorage: { getItem(k: string): string | null } }
              ).sessionStorage.getItem('zz_session_key') ?? '',
          },
          body: JSON.stringify({ actor }),
        });
        return { status: r.status, body: (await r.json()) as unknown };
      },
      [key, AGENT] as const,
    );
    expect(res).toEqual({
      status: 403,
      body: { error: 'only an owner may revoke tokens', code: 'forbidden' },
    });
    expect(await w.call(seeded.agent, 'repo_state', {})).toMatchObject({ actor: AGENT });
    // Who is active and when each token was last used (the agent's was used just now; a
    // token minted and never used is idle).
    await w.token('owner@example.com[codex]', 'codex');
    const ownerView = await signedIn(w, seeded.owner, '#/agents');
    const row = (actor: string) =>
      ownerView.locator('table.tokens tbody tr', {
        has: ownerView.getByText(actor, { exact: true }),
      });
    await row(AGENT).waitFor();
    expect(await row(AGENT).locator('.dot').getAttribute('aria-label')).toBe('active');
    expect(await row(AGENT).locator('td').nth(3).textContent()).toMatch(/^\d+s ago$/);
    expect(await row('owner@example.com[codex]').locator('.dot').getAttribute('aria-label')).toBe(
      'idle',
    );
    expect(await row('owner@example.com[codex]').locator('td').nth(3).textContent()).toBe('never');
    // The owner grants ownership from the same form; the member's next view shows it.
    const owner = await signedIn(w, seeded.owner, '#/agents');
    await owner.getByLabel('Actor').fill('member@example.com');
    await owner.getByRole('button', { name: 'Apply' }).click();
    await expect
      .poll(() => owner.locator('.grant .ok').textContent())
      .toContain('member@example.com');
    await page.reload();
    await page.getByRole('button', { name: `Revoke ${AGENT} claude` }).waitFor();
  });

  it('a page whose tokens are revoked says it is signed out', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const member = await w.token('member@example.com');
    const page = await signedIn(w, member, '#/lane/web');
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    let tries = 0;
    page.on('request', (r) => r.url().includes('/events') && tries++);
    await w.call(seeded.owner, 'token_revoke', { actor: 'member@example.com' });
    // The daemon ends the stream at the next commit it would have carried.
    await w.call(seeded.owner, 'ask_post', { lane_id: 'web', kind: 'work', title: 'After' });
    await expect
      .poll(() => page.locator('.live').textContent(), { timeout: 15_000 })
      .toBe('signed out');
    expect(await page.locator('main .error').first().textContent()).toMatch(
      /^Signed out: .*run `zz dashboard`/,
    );
    expect(await page.locator('.card', { hasText: 'After' }).count()).toBe(0);
    expect(tries).toBeLessThanOrEqual(2);
  });

  it('works from the keyboard alone: Tab to New Ask, post, Tab to the card, open, release', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    await column(page, 'answered').locator('.card').first().waitFor();
    // Strings, evaluated in the page (this file has no DOM types).
    const focused = () =>
      page.evaluate(`(() => {
        const el = document.activeElement;
        return {
          text: (el && el.textContent || '').trim(),
          name: el && el.getAttribute('name') || '',
          outline: el ? getComputedStyle(el).outlineStyle : 'none',
        };
      })()`) as Promise<{ text: string; name: string; outline: string }>;
    /** Presses Tab until the focused element matches (at most `max` presses). */
    const tabTo = async (match: (f: { text: string; name: string }) => boolean, max = 60) => {
      for (let i = 0; i < max; i++) {
        await page.keyboard.press('Tab');
        const f = await focused();
        if (match(f)) return f;
      }
      throw new Error('never reached by Tab');
    };
    const newAsk = await tabTo((f) => f.text === 'New Ask');
    expect(newAsk.outline).not.toBe('none'); // the focus is visible
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await focused()).name).toBe('title');
    await page.keyboard.type('Posted by keyboard');
    await tabTo((f) => f.text === 'Post Ask');
    await page.keyboard.press('Enter');
    await column(page, 'open').locator('.card', { hasText: 'Posted by keyboard' }).waitFor();
    // Open a claimed card the viewer holds and release it, keys only.
    await tabTo((f) => f.text.startsWith('Measure first paint'));
    await page.keyboard.press('Enter');
    await page.locator('.ask h2', { hasText: 'Measure first paint' }).waitFor();
    await tabTo((f) => f.text === 'Release my claim');
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.ask .state').first().textContent()).toBe('open');
  });

  it('is readable at 375 px: no sideways scrolling on any view, controls within the window; nothing fetched from elsewhere', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    await ladderBuild(w.daemon.repos.get(w.key)!, { actor: OWNER });
    const page = await signedIn(w, seeded.owner, '', { width: 375, height: 740 });
    // Offline: nothing is fetched from anywhere but the daemon (no CDN, no fonts).
    const elsewhere: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(`${w.url}/`) && !r.url().startsWith('data:')) elsewhere.push(r.url());
    });
    const views: Array<[string, string]> = [
      ['#/lane/web', '.column[data-state="answered"] .card'],
      [`#/ask/web/${seeded.ids.fix}`, '.diff-file'],
      [`#/ask/web/${seeded.ids.board}`, '.payload'],
      ['#/ladder/README.md', '.rung'],
      ['#/agents', 'table.tokens tbody tr'],
    ];
    for (const [hash, ready] of views) {
      await page.goto(`${w.url}/${hash}`);
      await page.locator(ready).first().waitFor();
      // What sticks out past 375 px, leaving out boxes that scroll by themselves (diff
      // hunks, the virtual lists).
      const m = await page.evaluate(`(() => {
        const out = [];
        for (const el of document.querySelectorAll('button, a, input, select, h2, .card')) {
          const r = el.getBoundingClientRect();
          if (r.width > 0 && r.right > 376 && !el.closest('pre, .vlist'))
            out.push(el.tagName + ' ' + (el.textContent || '').trim().slice(0, 30) + ' ' + r.right);
        }
        return { width: document.documentElement.scrollWidth, outside: out };
      })()`);
      expect(m, hash).toEqual({ width: 375, outside: [] });
    }
    expect(elsewhere).toEqual([]);
    expect(page.errors).toEqual([]);
  });
});
