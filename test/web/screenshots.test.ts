import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ladderBuild } from '../../src/core/index.js';
import { launchChromium, OWNER, startWebDaemon, openLoginLink } from './harness.js';
import { seedLane } from './seed.js';

// Regenerates docs/screenshots/*.png (shown in the README): ZZ_SCREENSHOTS=1 npx vitest run
// test/web/screenshots.test.ts. Skipped otherwise, so a normal run never rewrites docs/.

const OUT = join(import.meta.dirname, '..', '..', 'docs', 'screenshots');

describe.skipIf(!process.env.ZZ_SCREENSHOTS)('dashboard screenshots', () => {
  it('captures each main view', async () => {
    mkdirSync(OUT, { recursive: true });
    const w = await startWebDaemon();
    const browser = await launchChromium();
    try {
      const seeded = await seedLane(w);
      await ladderBuild(w.daemon.repos.get(w.key)!, { actor: OWNER });
      await w.token('owner@example.com[codex]', 'codex');
      await w.call(seeded.agent, 'lane_list', {});
      const context = await browser.newContext({ viewport: { width: 1280, height: 760 } });
      const page = await context.newPage();
      await openLoginLink(page, await w.loginUrl(seeded.owner));
      const shot = async (name: string, hash: string, ready: string) => {
        await page.goto(`${w.url}/${hash}`);
        await page.locator(ready).first().waitFor();
        await expect.poll(() => page.locator('.live').textContent()).toBe('live');
        await page.screenshot({ path: join(OUT, `${name}.png`) });
      };
      await shot('board', '#/lane/web', '.column[data-state="answered"] .card');
      await shot('ask', `#/ask/web/${seeded.ids.fix}`, '.diff-file');
      await shot('ladder', '#/ladder/README.md', '.rung');
      await shot('agents', '#/agents', 'table.tokens tbody tr');
      await page.setViewportSize({ width: 375, height: 760 });
      await shot('narrow', '#/lane/web', '.column .card');
    } finally {
      await browser.close();
      await w.close();
    }
  });
});
