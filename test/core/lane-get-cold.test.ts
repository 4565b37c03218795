import { describe, expect, it } from 'vitest';
import { ZzRepo } from '../../src/core/index.js';
import { openRepository } from '../../src/git/index.js';
import { GitStore } from '../../src/store/index.js';
import { ALICE, call, gitRepo, OWNER } from '../helpers/core-fixture.js';

// A restarted daemon's first lane_get: history entries are marked unsigned only for ops from
// another replica, and the log says which commits hold those (each op records its replica).
// Commits of this clone's own ops are never read for it.

describe('lane_get on a fresh repository handle', () => {
  it('reads only the commits that hold another replica’s ops, and marks exactly those', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    const other = new ZzRepo({
      key: 'local/test',
      store: new GitStore(await openRepository(dir), { replica: 'f'.repeat(16) }),
    });
    try {
      await call(repo, OWNER, 'lane_propose', { lane_id: 'feat', title: 'Feature' });
      for (let i = 0; i < 5; i++) {
        await call(repo, OWNER, 'ask_post', { lane_id: 'feat', kind: 'work', title: `t${i}` });
      }
      // One op written by another replica (unsigned: no key of Alice's is registered).
      await call(other, ALICE, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'theirs' });
      await call(repo, OWNER, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'mine' });

      const fresh = await ZzRepo.open(dir, { key: 'local/test' });
      try {
        // The Lane's history is loaded first: a short history is itself read through cat-file
        // (git-store.ts shortTail), and what counts here is the reads for the unsigned marks.
        await fresh.lane('feat').read();
        const reads: string[] = [];
        const catFile = fresh.git!.catFile;
        const read = catFile.read.bind(catFile);
        catFile.read = (spec) => {
          reads.push(spec);
          return read(spec);
        };
        const got = await call(fresh, OWNER, 'lane_get', { lane_id: 'feat' });
        const theirs = got.history.filter((h) => h.unsigned);
        expect(theirs.map((h) => [h.op, h.actor])).toEqual([['ask_post', ALICE.actor]]);
        expect(got.history.filter((h) => h.revision !== null)).toHaveLength(8);
        expect(reads).toEqual([theirs[0]!.revision]);

        // The log grows: which commits are foreign is carried over and extended by the new
        // ops only (lanes.ts foreignOf), whether they are another replica's or this one's.
        await call(other, ALICE, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'theirs 2' });
        const marked = async () =>
          (await call(fresh, OWNER, 'lane_get', { lane_id: 'feat' })).history
            .filter((h) => h.unsigned)
            .map((h) => h.args.title);
        expect(await marked()).toEqual(['theirs', 'theirs 2']);
        await call(fresh, OWNER, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'mine 2' });
        expect(await marked()).toEqual(['theirs', 'theirs 2']);
        await call(other, ALICE, 'ask_post', { lane_id: 'feat', kind: 'work', title: 'theirs 3' });
        expect(await marked()).toEqual(['theirs', 'theirs 2', 'theirs 3']);
      } finally {
        fresh.close();
      }
    } finally {
      other.close();
      cleanup();
    }
  });
});
