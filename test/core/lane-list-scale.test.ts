import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { laneRef } from '../../src/core/index.js';
import { cursorCodec } from '../../src/schema/cursor.js';
import { ALICE, BOB, call, gitRepo } from '../helpers/core-fixture.js';
import { copyLanes } from '../helpers/lane-copies.js';
import { sh } from '../helpers/temp-repo.js';

// A page of lane_list costs the page, not the repository: with thousands of Lanes, a page of
// 50 reads the state of its 50 Lanes (and the ref names, which it needs for its place and the
// total), whichever page it is and whether the refs are loose or packed.

const LANES = 3000;

/** The cursor lane_list gives for a page whose last Lane is `id` (schema/cursor.ts). */
const cursorAfter = (id: string) => cursorCodec('lane_list', z.string()).encode(id);

describe('lane_list over thousands of Lanes', () => {
  let done: (() => void) | null = null;
  afterEach(() => done?.());

  it('a page of 50 reads 50 Lanes, first page, middle and last, loose and packed', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    done = cleanup;
    await call(repo, ALICE, 'lane_propose', { lane_id: 'lane-00000', title: 'Template' });
    const ids = Array.from({ length: LANES }, (_, i) => `lane-${String(i + 1).padStart(5, '0')}`);
    copyLanes(dir, 'lane-00000', ids);
    const all = ['_repo', 'lane-00000', ...ids];

    // Which Lanes' states a page reads: each Lane read starts with its ref's head.
    const read = new Set<string>();
    const head = repo.store.head.bind(repo.store);
    repo.store.head = (ref: string) => {
      if (ref.startsWith('refs/zz/lanes/')) read.add(ref);
      return head(ref);
    };
    const page = async (cursor?: string) => {
      read.clear();
      const r = await call(repo, BOB, 'lane_list', { limit: 50, ...(cursor ? { cursor } : {}) });
      expect(r.total).toBe(all.length);
      expect(r.corrupt).toEqual([]);
      const got = r.lanes.map((l: { lane_id: string }) => l.lane_id);
      // Exactly the page's Lanes are read, nothing before or after it.
      expect([...read].sort()).toEqual(got.map(laneRef).sort());
      return { got, next: r.next_cursor as string | null };
    };

    for (const layout of ['loose', 'packed'] as const) {
      if (layout === 'packed') {
        sh(dir, 'pack-refs', '--all');
        // One Lane written since, loose over its packed value, as zz writes it.
        await call(repo, ALICE, 'ask_post', {
          lane_id: 'lane-01500',
          kind: 'work',
          title: 'Moved',
        });
      }
      const first = await page();
      expect(first.got).toEqual(all.slice(0, 50));
      expect(first.next).toBe(cursorAfter('lane-00048'));
      // A page from the middle, by the cursor a page ending at its Lane before would give.
      const middle = await page(cursorAfter(all[1475]!));
      expect(middle.got).toEqual(all.slice(1476, 1526));
      expect(middle.got).toContain('lane-01500');
      // The last page: what is left, and no cursor.
      const last = await page(cursorAfter(all.at(-31)!));
      expect(last.got).toEqual(all.slice(-30));
      expect(last.next).toBeNull();
    }
  });
});
