import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { ladderBuild } from '../../src/core/index.js';
import { sh } from '../helpers/temp-repo.js';
import { OWNER, startWebDaemon, useDashboardBrowser, type WebDaemon } from './harness.js';
import { AGENT, seedLane } from './seed.js';

// The dashboard in a real browser (the system Chromium through playwright-core) against a
// real daemon on 127.0.0.1. Waits are for what the page shows, never fixed sleeps.

const { cleanups, newContext, signedIn } = useDashboardBrowser();

async function daemon(opts: Parameters<typeof startWebDaemon>[0] = {}): Promise<WebDaemon> {
  const w = await startWebDaemon(opts);
  cleanups.push(() => w.close());
  return w;
}

const column = (page: Page, state: string) => page.locator(`.column[data-state="${state}"]`);

describe('dashboard in Chromium', () => {
  it('signs in with the one-time code after asking; only the page key is in storage; a reload keeps the session', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const token = seeded.owner;
    const url = await w.loginUrl(token);
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(url);
    // Signed out, the link still asks whom it signs in as (any page can open one: login CSRF).
    const dialog = page.locator('[role="dialog"]');
    await expect.poll(() => dialog.textContent()).toContain(`This link signs in as ${OWNER}`);
    expect(page.url()).toBe(`${w.url}/`);
    // Its sentences apart (htm drops whitespace holding a line break: "….Go ahead" once).
    expect(await dialog.locator('p').textContent()).toMatch(
      /\. Go ahead only if you ran zz dashboard /,
    );
    await dialog.getByRole('button', { name: `Sign in as ${OWNER}` }).click();
    await expect.poll(() => page.locator('.top .me').textContent()).toBe(OWNER);
    // A string: this runs in the page, not under Node's types.
    const seen = (await page.evaluate(
      '({ cookie: document.cookie, local: localStorage.length, keys: Object.keys(sessionStorage), key: sessionStorage.getItem("zz_session_key") })',
    )) as { cookie: string; local: number; keys: string[]; key: string };
    expect(seen).toMatchObject({ cookie: '', local: 0, keys: ['zz_session_key'] });
    expect(seen.key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(seen.key).not.toContain(token);
    const cookies = await context.cookies(w.url);
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({
      name: `zz_session_${w.daemon.port}`,
      httpOnly: true,
      sameSite: 'Strict',
      path: '/',
    });
    expect(cookies[0]!.value).not.toContain(token);
    expect(cookies[0]!.value).not.toBe(seen.key);
    // The dashboard works end to end on the page key: the board, the live stream, a write.
    const live = () => page.locator('.live').textContent();
    await column(page, 'open').locator('.card').first().waitFor();
    await expect.poll(live).toBe('live');
    // A reload keeps the session (sessionStorage outlives it): no prompt, the stream comes back
    // and a write from another client still arrives without a reload.
    await page.reload();
    await expect.poll(() => page.locator('.top .me').textContent()).toBe(OWNER);
    await expect.poll(live).toBe('live');
    await w.call(seeded.agent, 'ask_post', { lane_id: 'web', kind: 'work', title: 'After reload' });
    await column(page, 'open').locator('.card', { hasText: 'After reload' }).waitFor();
    // The same link in another browser is refused: the code worked once.
    const other = await newContext();
    const second = await other.newPage();
    await second.goto(url);
    await expect
      .poll(() => second.locator('.error').textContent())
      .toContain('this login code is unknown, used or expired');
  });

  it('shows each Lane as a board: state columns, holder, lease, priority, kind, blocked-by; filters', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    const titles = (state: string) => column(page, state).locator('.card-title').allTextContents();
    await column(page, 'answered').locator('.card').first().waitFor();
    // Answering with a changeset also posted a follow-up review Ask.
    expect(await titles('open')).toEqual(
      expect.arrayContaining(['Review the board', 'Screenshots in the README']),
    );
    expect((await titles('claimed')).sort()).toEqual([
      'Lanes board with live updates',
      'Measure first paint of 5,000 Asks',
    ]);
    expect(await titles('answered')).toEqual(['Fix the lease countdown rounding']);
    const claimed = column(page, 'claimed').locator('.card', { hasText: 'Lanes board' });
    await expect.poll(() => claimed.textContent()).toContain(AGENT);
    expect(await claimed.textContent()).toMatch(/P1.*work.*\d+m \d\ds left/);
    const review = column(page, 'open').locator('.card', { hasText: 'Review the board' });
    expect(await review.textContent()).toContain(`blocked by ${seeded.ids.board}`);
    // Mine: what I hold or posted (the owner posted everything, holds one).
    await page.getByLabel('Holder').selectOption(AGENT);
    await expect.poll(() => column(page, 'claimed').locator('.card').count()).toBe(1);
    expect(await column(page, 'open').locator('.card').count()).toBe(0);
    await page.getByLabel('Holder').selectOption('');
    await page.getByLabel('Kind').selectOption('review');
    await expect.poll(() => titles('open')).toContain('Review the board');
    expect(await titles('open')).not.toContain('Screenshots in the README');
    expect(await column(page, 'claimed').locator('.card').count()).toBe(0);
  });

  it('a write from another client appears without a reload', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    await column(page, 'open').locator('.card').first().waitFor();
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    await page.evaluate(() => ((globalThis as unknown as { marker: number }).marker = 42));
    const posted = await w.call(seeded.agent, 'ask_post', {
      lane_id: 'web',
      kind: 'work',
      title: 'Posted by an agent just now',
    });
    const card = column(page, 'open').locator('.card', { hasText: 'Posted by an agent just now' });
    await card.waitFor();
    await w.call(seeded.agent, 'ask_claim', {
      lane_id: 'web',
      ask_id: (posted.ask as { ask_id: string }).ask_id,
    });
    await column(page, 'claimed').locator('.card', { hasText: 'Posted by an agent' }).waitFor();
    // Answering an Ask unblocks those that depend on it, live too.
    const review = column(page, 'open').locator('.card', { hasText: 'Review the board' });
    expect(await review.textContent()).toContain('blocked by');
    await w.call(seeded.agent, 'ask_answer', {
      lane_id: 'web',
      ask_id: seeded.ids.board,
      outcome: 'complete',
      result: 'done',
    });
    await column(page, 'answered').locator('.card', { hasText: 'Lanes board' }).waitFor();
    await expect.poll(() => review.textContent()).not.toContain('blocked by');
    expect(await page.evaluate(() => (globalThis as unknown as { marker?: number }).marker)).toBe(
      42,
    );
  });

  it('reconnects after the daemon restarts and keeps the session', async () => {
    const first = await startWebDaemon();
    const { dir } = first;
    const port = first.daemon.port;
    const seeded = await seedLane(first);
    const page = await signedIn(first, seeded.owner, '#/lane/web');
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    await first.close({ keepRepo: true });
    await expect.poll(() => page.locator('.live').textContent()).toBe('reconnecting');
    // The same port again (the page's origin); the session file outlived the process.
    const again = await daemon({ dir, port });
    cleanups.push(() => import('node:fs').then((fs) => fs.rmSync(dir, { recursive: true })));
    await expect.poll(() => page.locator('.live').textContent(), { timeout: 15_000 }).toBe('live');
    await again.call(seeded.agent, 'ask_post', {
      lane_id: 'web',
      kind: 'work',
      title: 'Posted after the restart',
    });
    await column(page, 'open').locator('.card', { hasText: 'Posted after the restart' }).waitFor();
  });

  it('an action the scope refuses shows the API message; owners-only controls are absent', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const member = await w.token('member@example.com');
    const page = await signedIn(w, member, '#/agents');
    await page.locator('table.tokens').waitFor();
    // A member sees only their own tokens and no revoke buttons.
    expect(await page.locator('table.tokens tbody tr').count()).toBe(1);
    expect(await page.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
    await page.getByLabel('Actor').fill('member@example.com');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect
      .poll(() => page.locator('.grant .error').textContent())
      .toBe('only an owner may grant or revoke ownership');
    // The owner may revoke: the agent's token stops working at once.
    const owner = await signedIn(w, seeded.owner, '#/agents');
    await owner.getByRole('button', { name: `Revoke ${AGENT} claude` }).click();
    await expect.poll(() => owner.locator('table.tokens').textContent()).not.toContain(AGENT);
    await expect(w.call(seeded.agent, 'repo_state', {})).rejects.toThrow(/401/);
  });

  it('is usable from the keyboard: post an Ask from the form, open it with Enter', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    await column(page, 'open').locator('.card').first().waitFor();
    // While the rest of the Lane's pages arrive, the first key press can land between renders;
    // press again until the form is open (a second press would close it, so only while shut).
    const newAsk = page.getByRole('button', { name: 'New Ask' });
    await expect
      .poll(async () => {
        if ((await newAsk.getAttribute('aria-expanded')) !== 'true') {
          await newAsk.focus();
          await page.keyboard.press('Enter');
        }
        return newAsk.getAttribute('aria-expanded');
      })
      .toBe('true');
    // The title field takes focus by itself; type, Tab through, submit with Enter.
    await expect
      // A string, evaluated in the page (this file has no DOM types).
      .poll(() => page.evaluate('document.activeElement && document.activeElement.name'))
      .toBe('title');
    await page.keyboard.type('Typed without a mouse');
    await page.getByLabel('Body').focus();
    await page.keyboard.type('All by keyboard.');
    await page.getByRole('button', { name: 'Post Ask' }).focus();
    await page.keyboard.press('Enter');
    const card = column(page, 'open').locator('.card', { hasText: 'Typed without a mouse' });
    await card.waitFor();
    await card.focus();
    await page.keyboard.press('Enter');
    await expect.poll(() => page.locator('.ask h2').textContent()).toBe('Typed without a mouse');
    expect(await page.locator('.ask pre.body').textContent()).toBe('All by keyboard.');
  });

  it('a refused post shows the API message in the form', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    await page.getByRole('button', { name: 'New Ask' }).click();
    await page.getByLabel('Title').fill('Depends on nothing real');
    await page.getByLabel('Depends on').fill('ask-0000000000');
    await page.getByRole('button', { name: 'Post Ask' }).click();
    // Word for word what the API answers any client for the same call.
    const api = await w
      .call(seeded.owner, 'ask_post', {
        lane_id: 'web',
        kind: 'work',
        title: 'Depends on nothing real',
        body: '',
        priority: 2,
        depends_on: ['ask-0000000000'],
      })
      .then(
        () => 'accepted',
        (e: Error) => e.message.replace(/^ask_post: \d+ /, ''),
      );
    expect(api).toMatch(/ask-0000000000/);
    await expect.poll(() => page.locator('.post-ask .error').textContent()).toBe(api);
  });

  it('releases a claim the viewer holds, through ask_release', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, `#/ask/web/${seeded.ids.bench}`);
    await page.getByRole('button', { name: 'Release my claim' }).click();
    await expect.poll(() => page.locator('.ask .state').first().textContent()).toBe('open');
    // Someone else's claim offers no release button.
    await page.goto(`${w.url}/#/ask/web/${seeded.ids.board}`);
    await page.locator('.ask h2').waitFor();
    expect(await page.getByRole('button', { name: 'Release my claim' }).count()).toBe(0);
  });

  it('a page on another origin cannot act with the cookie', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner);
    // Another server on 127.0.0.1: the same *site* as the daemon, so SameSite alone would
    // let the cookie through; the Origin check must stop it.
    const evil: Server = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<script>
        fetch(${JSON.stringify(`${w.url}/api/repos/${w.key}/tools/ask_post`)}, {
          method: 'POST', mode: 'no-cors', credentials: 'include',
          headers: { 'content-type': 'text/plain' },
          body: JSON.stringify({ lane_id: 'web', kind: 'work', title: 'forged' }),
        }).finally(() => { document.title = 'sent'; });
      </script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => evil.close(r)));
    const evilPage = await page.context().newPage();
    await evilPage.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
    await expect.poll(() => evilPage.title()).toBe('sent');
    const lane = await w.call(seeded.owner, 'lane_get', { lane_id: 'web', include_history: false });
    expect((lane.asks as Array<{ title: string }>).map((a) => a.title)).not.toContain('forged');
    expect(w.logs.some((l) => /tools\/ask_post - 403 /.test(l))).toBe(true);
  });

  it('shows an Ask with payload, history, dependencies and the changeset diff by file and hunk', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, `#/ask/web/${seeded.ids.board}`);
    await page.locator('.graph').waitFor();
    expect(await page.locator('.payload').textContent()).toContain('"estimate": "S"');
    const blocks = page.locator('.graph-col', { hasText: 'Blocks' });
    // What it blocks and its history come with the Ask (one ask_get; ask-detail.test.ts).
    await expect.poll(() => blocks.locator('.dep').count()).toBe(2);
    expect(await blocks.locator('.dep code').allTextContents()).toEqual(
      expect.arrayContaining([seeded.ids.review, seeded.ids.docs]),
    );
    await expect.poll(() => page.locator('.history li').count()).toBe(2); // posted, claimed
    // The other direction: what blocks the review Ask.
    await page.goto(`${w.url}/#/ask/web/${seeded.ids.review}`);
    const blockedBy = page.locator('.graph-col', { hasText: 'Blocked by' });
    await expect
      .poll(() => blockedBy.locator('.dep code').allTextContents())
      .toEqual([seeded.ids.board]);
    expect(await blockedBy.locator('.dep .state').textContent()).toBe('claimed');
    await page.goto(`${w.url}/#/ask/web/${seeded.ids.fix}`);
    await page.locator('.diff-file').first().waitFor();
    expect(await page.locator('.diff-file summary').allTextContents()).toEqual([
      'README.md modified',
      'src/lease.js added',
    ]);
    expect(await page.locator('.hunk .add').first().textContent()).toContain('+');
  });

  it('shows bidirectional controls in a diff and a body as marks, not as reordered text', async () => {
    // Trojan Source: U+202E in a changeset's line made the reviewer's diff show code in an
    // order other than the one that runs (`/* admin only */ if (isAdmin)` and the like).
    const w = await daemon();
    const seeded = await seedLane(w);
    const rlo = '\u202e';
    const line = `const access = "user${rlo} // admin only${'\u2066'}";`;
    const ask = (
      (await w.call(seeded.owner, 'ask_post', {
        lane_id: 'web',
        kind: 'work',
        title: `Rename ${rlo}gnp.exe`,
        body: `See ${rlo}gnp.exe`,
      })) as { ask: { ask_id: string } }
    ).ask.ask_id;
    await w.call(seeded.agent, 'ask_claim', { lane_id: 'web', ask_id: ask });
    await w.call(seeded.agent, 'ask_answer', {
      lane_id: 'web',
      ask_id: ask,
      outcome: 'complete',
      result: `Done ${rlo}gnp.exe`,
      changeset: {
        base: sh(w.dir, 'rev-parse', 'HEAD'),
        message: 'access',
        files: [{ path: 'src/access.js', content: `${line}\n` }],
      },
    });
    const page = await signedIn(w, seeded.owner, `#/ask/web/${ask}`);
    await page.locator('.hunk .add').first().waitFor();
    const added = (await page.locator('.hunk .add').first().textContent())!;
    expect(added).not.toContain(rlo);
    expect(added).toContain('U+202E');
    expect(added).toContain('U+2066');
    const body = (await page.locator('pre.body').textContent())!;
    expect(body).not.toContain(rlo);
    expect(body).toContain('U+202E');
    // Every other text of the Ask a reviewer reads: its title, its answer, its card.
    for (const shown of [
      await page.locator('section.ask h2').textContent(),
      await page.locator('.panel.answer pre').textContent(),
    ]) {
      expect(shown).not.toContain(rlo);
      expect(shown).toContain('U+202E');
    }
    expect(await page.locator('.diff-file .bidi-warning').count()).toBe(1);
    const board = await signedIn(w, seeded.owner, '#/lane/web');
    const cards = board.locator('.card-title', { hasText: 'Rename' });
    await cards.first().waitFor();
    for (const t of await cards.allTextContents()) {
      expect(t).not.toContain(rlo);
      expect(t).toContain('U+202E');
    }
  });

  it('shows the Ladder tree with stale markers, a rung with its anchor, and search', async () => {
    const w = await daemon();
    const repo = w.daemon.repos.get(w.key)!;
    await ladderBuild(repo, { actor: OWNER });
    const token = await w.token(OWNER);
    const page = await signedIn(w, token, '#/ladder/README.md');
    await page.locator('.rung').waitFor();
    const anchor = sh(w.dir, 'rev-parse', 'HEAD');
    expect(await page.locator('.rung code[title]').getAttribute('title')).toBe(anchor);
    expect(await page.locator('.rung .fresh').textContent()).toBe('current');
    expect(await page.locator('.tree .stale').count()).toBe(0);
    // README.md changes on the branch: its rung (and the folders above) are stale now.
    writeFileSync(join(w.dir, 'README.md'), '# demo\n\nChanged after the Ladder was built.\n');
    sh(w.dir, 'commit', '-q', '-am', 'change the README');
    await page.reload();
    await expect.poll(() => page.locator('.rung .stale').count()).toBe(1);
    // The tree and the rung are fetched and drawn apart: one may be on screen before the other.
    await expect.poll(() => page.locator('.tree .stale').count()).toBeGreaterThan(0);
    await page.getByLabel('Search the Ladder').fill('demo');
    await page.getByRole('button', { name: 'Search' }).click();
    const hits = page.getByRole('list', { name: 'Search results' });
    await expect.poll(() => hits.textContent()).toContain(w.key);
    await hits.getByRole('link', { name: 'README.md' }).click();
    await expect.poll(() => page.url()).toContain('#/ladder/README.md');
  });

  it('draws a Ladder past one page of ladder_tree (4 MiB): rungs of every page are in the tree', async () => {
    const w = await daemon();
    const token = await w.token(OWNER);
    await w.call(token, 'lane_propose', { lane_id: 'lad', title: 'Ladder' });
    const { ask } = (await w.call(token, 'ask_post', {
      lane_id: 'lad',
      kind: 'ladder_update',
      title: 'rungs',
    })) as { ask: { ask_id: string } };
    await w.call(token, 'ask_claim', { lane_id: 'lad', ask_id: ask.ask_id });
    // ~4.4 KB a rung: 1,200 are past one page.
    const fill = 'x'.repeat(4000);
    for (let i = 0; i < 1200; i += 200) {
      await w.call(token, 'ladder_write_rung', {
        lane_id: 'lad',
        ask_id: ask.ask_id,
        rungs: Array.from({ length: 200 }, (_, j) => ({
          path: `_topics/big/${String(i + j).padStart(4, '0')}`,
          kind: 'topic',
          title: `rung ${i + j}`,
          summary: fill,
        })),
      });
    }
    const first = await w.call(token, 'ladder_tree', {});
    expect(first.next_cursor).toEqual(expect.any(String));
    const page = await signedIn(w, token, '#/ladder');
    await page.getByRole('button', { name: 'Expand _topics/big' }).click();
    // The last rung is on the last page: drawn only when the view followed next_cursor.
    await page
      .locator(`.tree a[href="#/ladder/${encodeURIComponent('_topics/big/1199')}"]`)
      .waitFor();
    expect(await page.locator('.tree li.leaf').count()).toBe(1200);
  });
});
