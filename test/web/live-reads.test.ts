import { describe, expect, it } from 'vitest';
import { startWebDaemon, useDashboardBrowser, type WebDaemon } from './harness.js';
import { seedLane } from './seed.js';

// What the dashboard reads when commits come in bursts: the Lane list (every page of
// lane_list) is read at most once at a time, plus once more after, never once per commit
// stacked on the daemon, and the list ends showing the last state.

const { cleanups, signedIn } = useDashboardBrowser();

async function daemon(): Promise<WebDaemon> {
  const w = await startWebDaemon();
  cleanups.push(() => w.close());
  return w;
}

const BURST = 20;

describe('dashboard reads under a burst of commits', () => {
  it('a burst of Lane commits costs a few lane_list reads, and the list ends current', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    await page.locator('.lanes li').first().waitFor();
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    // Each lane_list answer held back a while (as a repository of many Lanes answers it), so
    // that commits arrive while a read runs: every read of the list is counted.
    let reads = 0;
    let inFlight = 0;
    let most = 0;
    await page.route('**/tools/lane_list', async (route) => {
      reads++;
      most = Math.max(most, ++inFlight);
      try {
        const answer = await route.fetch();
        await new Promise((r) => setTimeout(r, 1500));
        await route.fulfill({ response: answer });
      } finally {
        inFlight--;
      }
    });
    // One commit at a time, each a while after the last: more than the page's wait for a
    // quiet moment (150 ms), so without coalescing each would start a read of its own.
    for (let i = 0; i < BURST; i++) {
      await w.call(seeded.owner, 'lane_propose', {
        lane_id: `burst-${String(i).padStart(2, '0')}`,
        title: `Burst ${i}`,
      });
      await new Promise((r) => setTimeout(r, 250));
    }
    const total = (await w.call(seeded.owner, 'lane_list', { limit: 1000 })).total as number;
    // The last state shows: every Lane, the last one proposed among them.
    await expect.poll(() => page.locator('.lanes li').count(), { timeout: 60_000 }).toBe(total);
    await page.locator('.lanes li', { hasText: `Burst ${BURST - 1}` }).waitFor();
    expect(most).toBe(1);
    expect(reads).toBeGreaterThan(0);
    expect(reads).toBeLessThanOrEqual(BURST / 2);
    expect(page.errors).toEqual([]);
  });

  it('a burst of Ask commits on a board: one ask_get at a time, and the board ends current', async () => {
    const w = await daemon();
    const seeded = await seedLane(w);
    const page = await signedIn(w, seeded.owner, '#/lane/web');
    await page.locator('.card').first().waitFor();
    await expect.poll(() => page.locator('.live').textContent()).toBe('live');
    // Every ask_get counted; the first answer held back longest, so that an update per commit
    // would put it (the Ask's oldest state) on the board after the newer ones.
    let gets = 0;
    let inFlight = 0;
    let most = 0;
    await page.route('**/tools/ask_get', async (route) => {
      const n = ++gets;
      most = Math.max(most, ++inFlight);
      try {
        const answer = await route.fetch();
        await new Promise((r) => setTimeout(r, n === 1 ? 3000 : 300));
        await route.fulfill({ response: answer });
      } finally {
        inFlight--;
      }
    });
    const lane_id = 'web';
    const posted = await w.call(seeded.owner, 'ask_post', {
      lane_id,
      kind: 'work',
      title: 'Burst target',
    });
    const ask_id = (posted.ask as { ask_id: string }).ask_id;
    await new Promise((r) => setTimeout(r, 250));
    await w.call(seeded.owner, 'ask_claim', { lane_id, ask_id });
    await new Promise((r) => setTimeout(r, 250));
    await w.call(seeded.owner, 'ask_answer', {
      lane_id,
      ask_id,
      outcome: 'complete',
      result: 'done',
    });
    const answered = page.locator('.column[data-state="answered"] .card', {
      hasText: 'Burst target',
    });
    await answered.waitFor({ timeout: 30_000 });
    // Settled: every held answer delivered, and the card is still the answered one.
    await expect.poll(() => inFlight, { timeout: 30_000 }).toBe(0);
    await new Promise((r) => setTimeout(r, 500));
    expect(await answered.count()).toBe(1);
    expect(
      await page
        .locator('.column:not([data-state="answered"]) .card', { hasText: 'Burst target' })
        .count(),
    ).toBe(0);
    expect(most).toBe(1);
    expect(page.errors).toEqual([]);
  });
});
