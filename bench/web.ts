import { pathToFileURL } from 'node:url';
import { launchChromium, openLoginLink, OWNER, startWebDaemon } from '../test/web/harness.js';
import { median, printTable } from './util.js';

// First paint of the dashboard for a Lane of 5,000 Asks (1,000 of them claimed), in the system
// Chromium against a real daemon: from navigation start to the first Ask card on screen, and to
// every page of the Lane loaded. Goal: first card well under a second. Not a test: a figure.

const ASKS = 5_000;
const CLAIMED = 1_000;
const CLIENTS = 16;
const RUNS = 5;

export async function benchWeb(): Promise<Record<string, unknown>> {
  const w = await startWebDaemon();
  const browser = await launchChromium();
  try {
    const token = await w.token(OWNER);
    await w.call(token, 'lane_propose', {
      lane_id: 'big',
      title: 'A big Lane',
      ask_kinds: { review: 'member' },
    });
    const ids: string[] = [];
    let next = 0;
    let t = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < ASKS) {
          const i = next++;
          const r = await w.call(token, 'ask_post', {
            lane_id: 'big',
            kind: i % 7 === 0 ? 'review' : 'work',
            title: `Ask number ${i}: do the thing in module ${i % 97}`,
            body: 'x'.repeat(200),
            priority: i % 5,
          });
          ids.push((r.ask as { ask_id: string }).ask_id);
        }
      }),
    );
    const seedPost = performance.now() - t;
    next = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < CLAIMED) {
          const i = next++;
          await w.call(token, 'ask_claim', { lane_id: 'big', ask_id: ids[i]! });
        }
      }),
    );
    console.log(`seeded ${ASKS} Asks in ${(seedPost / 1000).toFixed(1)} s`);

    t = performance.now();
    const first = await fetch(`${w.url}/api/repos/${w.key}/tools/lane_get`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ lane_id: 'big', include_history: false, asks_limit: 200 }),
    });
    await first.arrayBuffer();
    const firstPageMs = performance.now() - t;

    const firstCard: number[] = [];
    const allLoaded: number[] = [];
    const liveUpdate: number[] = [];
    const cardsInDom: number[] = [];
    const laneGets: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      // Timed inside the page: the first frame after the first card is in the DOM, and the one
      // after the open column shows every open Ask (Playwright's own calls wait for a busy
      // main thread, which would blur the figure).
      await context.addInitScript(`
        new MutationObserver((_, obs) => {
          const w = window;
          if (!w.firstCard && document.querySelector('.column .card'))
            requestAnimationFrame(() => (w.firstCard = performance.now()));
          const n = document.querySelector('.column[data-state="open"] .n');
          if (!w.allLoaded && n && n.textContent === '${ASKS - CLAIMED + run}')
            requestAnimationFrame(() => (w.allLoaded = performance.now()));
          if (w.firstCard && w.allLoaded) obs.disconnect();
        }).observe(document, { childList: true, subtree: true, characterData: true });
      `);
      const page = await context.newPage();
      // Every lane_get the page sends: none may ask for the whole Lane at once.
      page.on('request', (r) => {
        if (!r.url().endsWith('/tools/lane_get')) return;
        const args = JSON.parse(r.postData() ?? '{}') as { asks_limit?: number };
        laneGets.push(args.asks_limit ?? Infinity);
      });
      await openLoginLink(page, await w.loginUrl(token));
      await page.goto('about:blank');
      await page.goto(`${w.url}/#/lane/big`);
      // A function, not a string: the page's CSP forbids eval.
      await page.waitForFunction(
        () => {
          const g = globalThis as unknown as { firstCard?: number; allLoaded?: number };
          return g.firstCard !== undefined && g.allLoaded !== undefined;
        },
        null,
        { timeout: 60_000 },
      );
      // Virtualised: the DOM holds a screenful of cards, not the Lane.
      cardsInDom.push((await page.evaluate("document.querySelectorAll('.card').length")) as number);
      firstCard.push((await page.evaluate('window.firstCard')) as number);
      allLoaded.push((await page.evaluate('window.allLoaded')) as number);
      // A write from another client: from the call to the open column counting it.
      const want = String(ASKS - CLAIMED + run + 1);
      const t0 = performance.now();
      await w.call(token, 'ask_post', { lane_id: 'big', kind: 'work', title: `live ${run}` });
      await page
        .locator('.column[data-state="open"] .n', { hasText: new RegExp(`^${want}$`) })
        .waitFor({ timeout: 30_000 });
      liveUpdate.push(performance.now() - t0);
      await context.close();
    }
    // One Ask of the big Lane: the Ask with a page of what it blocks and of its history, one
    // ask_get (the page read the whole Lane for them before).
    const askTimes: number[][] = [];
    {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await openLoginLink(page, await w.loginUrl(token));
      for (let run = 0; run < 3; run++) {
        await page.goto('about:blank');
        const t0 = performance.now();
        await page.goto(`${w.url}/#/ask/big/${ids[run]!}`);
        await page.locator('.ask h2').waitFor({ timeout: 60_000 });
        const shown = performance.now() - t0;
        await page.locator('.history li').first().waitFor({ timeout: 60_000 });
        askTimes.push([shown, performance.now() - t0]);
      }
      await context.close();
    }
    const rows = [
      {
        what: `first Ask card on screen (${ASKS} Asks)`,
        median_ms: Math.round(median(firstCard)),
        min_ms: Math.round(Math.min(...firstCard)),
        max_ms: Math.round(Math.max(...firstCard)),
      },
      {
        what: 'every page of the Lane loaded',
        median_ms: Math.round(median(allLoaded)),
        min_ms: Math.round(Math.min(...allLoaded)),
        max_ms: Math.round(Math.max(...allLoaded)),
      },
      {
        what: 'a write from another client on screen',
        median_ms: Math.round(median(liveUpdate)),
        min_ms: Math.round(Math.min(...liveUpdate)),
        max_ms: Math.round(Math.max(...liveUpdate)),
      },
      {
        what: 'an Ask of the Lane on screen (ask_get)',
        median_ms: Math.round(median(askTimes.map((t) => t[0]!))),
        min_ms: Math.round(Math.min(...askTimes.map((t) => t[0]!))),
        max_ms: Math.round(Math.max(...askTimes.map((t) => t[0]!))),
      },
      {
        what: 'its blockers and history on screen',
        median_ms: Math.round(median(askTimes.map((t) => t[1]!))),
        min_ms: Math.round(Math.min(...askTimes.map((t) => t[1]!))),
        max_ms: Math.round(Math.max(...askTimes.map((t) => t[1]!))),
      },
      {
        what: 'lane_get first page (200 Asks) over HTTP',
        median_ms: Math.round(firstPageMs),
        min_ms: Math.round(firstPageMs),
        max_ms: Math.round(firstPageMs),
      },
    ];
    printTable(`dashboard first paint, ${RUNS} runs, Chromium headless`, rows);
    console.log(
      `cards in the DOM with every page loaded: ${Math.max(...cardsInDom)} of ${ASKS}; ` +
        `lane_get calls per load: ${laneGets.length / RUNS}, largest asks_limit ${Math.max(...laneGets)}`,
    );
    return {
      asks: ASKS,
      first_card_ms: Math.round(median(firstCard)),
      all_pages_ms: Math.round(median(allLoaded)),
      live_update_ms: Math.round(median(liveUpdate)),
      lane_get_first_page_ms: Math.round(firstPageMs),
      cards_in_dom: Math.max(...cardsInDom),
      largest_asks_limit: Math.max(...laneGets),
    };
  } finally {
    await browser.close();
    await w.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchWeb(), null, 2));
}
