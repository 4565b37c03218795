import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';

// When the daemon's maintenance spawns `git gc --auto` (src/daemon/maintenance.ts): the policy,
// with the spawn replaced by a counter (test/git/pack-writer.test.ts runs the real git).

const gcAuto = vi.hoisted(() => vi.fn(async (_gitdir: string) => {}));
vi.mock(import('../../src/git/index.js'), async (original) => ({ ...(await original()), gcAuto }));
const { startMaintenance } = await import('../../src/daemon/maintenance.js');

type Listener = () => void;

/** Just what maintenance reads of a repository: its key, gitdir, packs written, commits. */
function fakeRepo() {
  const listeners = new Set<Listener>();
  const objects = { packsWritten: 0 };
  const repo = {
    key: 'test/maint',
    git: { gitdir: '/nonexistent/.git', objects },
    onCommit(l: Listener) {
      listeners.add(l);
      return () => listeners.delete(l);
    },
  };
  /** A commit that left `packs` packs for gc, as an Entity reports it. */
  const commit = (packs = 1) => {
    objects.packsWritten += packs;
    for (const l of listeners) l();
  };
  return { repo: repo as unknown as ZzRepo, commit };
}

afterEach(() => gcAuto.mockClear());

describe('daemon maintenance', () => {
  it('runs gc --auto once packs pass git’s gc.autoPackLimit (50), not before', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {} });
    try {
      // Below the limit gc --auto is a no-op that still costs a process spawn from the loop.
      for (let i = 0; i < 50; i++) commit();
      await m.idle();
      expect(gcAuto).toHaveBeenCalledTimes(0);
      commit();
      await m.idle();
      expect(gcAuto).toHaveBeenCalledTimes(1);
      // Counted again from that run.
      for (let i = 0; i < 50; i++) commit();
      await m.idle();
      expect(gcAuto).toHaveBeenCalledTimes(1);
      commit();
      await m.idle();
      expect(gcAuto).toHaveBeenCalledTimes(2);
    } finally {
      await m.close();
    }
  });

  it('spawns on a later turn, not inside the commit that crossed the limit', async () => {
    // Commit listeners run inside an Entity's group commit, before its writers are answered.
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {} });
    try {
      commit(51);
      expect(gcAuto).toHaveBeenCalledTimes(0);
      commit(); // a second commit before that turn schedules no second run
      await m.idle();
      expect(gcAuto).toHaveBeenCalledTimes(1);
      expect(gcAuto).toHaveBeenCalledWith('/nonexistent/.git', { smallPacks: undefined });
    } finally {
      await m.close();
    }
  });
});
