import type { Browser, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, OWNER, startWebDaemon, type WebDaemon, openLoginLink } from './harness.js';
import { AGENT } from './seed.js';

// Opening one Ask reads what it shows in one bounded request (ask_get with a page of what it
// blocks and of its history), however long its Lane; the rest comes a page at a time, on
// request. Before, the page read the whole Lane's Asks and history through lane_get, page by
// page, to find the few that concern one Ask.

const DEPENDENTS = 105;
const CYCLES = 50; // claim + release: with the post, 101 history entries of the Ask

let browser: Browser;
let w: WebDaemon;
let owner: string;
let hub: string;

beforeAll(async () => {
  browser = await launchChromium();
  w = await startWebDaemon();
  owner = await w.token(OWNER);
  const agent = await w.token(AGENT, 'claude');
  await w.call(owner, 'lane_propose', { lane_id: 'web', title: 'Web' });
  const post = async (title: string, extra: Record<string, unknown> = {}) =>
    (
      (await w.call(owner, 'ask_post', { lane_id: 'web', kind: 'work', title, ...extra })).ask as {
        ask_id: string;
      }
    ).ask_id;
  hub = await post('The hub everything waits for');
  // Dependents from four clients at once (group commits), then the hub's own history.
  let n = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (n < DEPENDENTS) {
        const i = n++;
        await post(`waits ${String(i).padStart(3, '0')}`, { depends_on: [hub] });
      }
    }),
  );
  for (let i = 0; i < CYCLES; i++) {
    await w.call(agent, 'ask_claim', { lane_id: 'web', ask_id: hub });
    await w.call(agent, 'ask_release', { lane_id: 'web', ask_id: hub });
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await w?.close();
});

describe('an Ask in the dashboard', () => {
  it('opens with one ask_get, and pages what it blocks and its history on request', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const page = await context.newPage();
      await openLoginLink(page, await w.loginUrl(owner));
      await page.goto('about:blank'); // a fresh load of the page, straight onto the Ask
      const calls: Array<{ tool: string; args: Record<string, unknown> }> = [];
      page.on('request', (r: Request) => {
        const m = /\/tools\/(\w+)$/.exec(new URL(r.url()).pathname);
        // (lane_list and repo_state: the page's shell lists the Lanes and reads the repository's
        // health once on load, whatever it shows.)
        if (m && m[1] !== 'lane_list' && m[1] !== 'repo_state')
          calls.push({ tool: m[1]!, args: JSON.parse(r.postData() ?? '{}') as never });
      });
      await page.goto(`${w.url}/#/ask/web/${hub}`);
      const blocks = page.locator('.graph-col', { hasText: 'Blocks' }).locator('.dep');
      const history = page.locator('.history li');
      await expect.poll(() => blocks.count()).toBe(100);
      await expect.poll(() => history.count()).toBe(100);
      expect(calls).toEqual([
        {
          tool: 'ask_get',
          args: {
            lane_id: 'web',
            ask_id: hub,
            include_dependents: true,
            include_history: true,
            limit: 100,
          },
        },
      ]);
      // The rest, a page at a time; then no more to ask for.
      await page.getByRole('button', { name: 'More it blocks' }).click();
      await expect.poll(() => blocks.count()).toBe(DEPENDENTS);
      await page.getByRole('button', { name: 'More history' }).click();
      await expect.poll(() => history.count()).toBe(1 + 2 * CYCLES);
      expect(await page.locator('button.more').count()).toBe(0);
      expect(await blocks.locator('code').allTextContents()).toHaveLength(
        new Set(await blocks.locator('code').allTextContents()).size,
      );
      expect(calls.map((c) => c.tool)).toEqual(['ask_get', 'ask_get', 'ask_get']);
      expect(calls[1]!.args).toMatchObject({ include_dependents: true, dependents_offset: 100 });
      expect(calls[2]!.args).toMatchObject({ include_history: true, history_offset: 100 });
      expect(await history.first().locator('strong').textContent()).toBe('ask_post');
      expect(await history.last().locator('strong').textContent()).toBe('ask_release');
    } finally {
      await context.close();
    }
  });
});
