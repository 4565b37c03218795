import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ZzRepo } from '../../src/core/index.js';

// When the daemon's maintenance rolls packs up or spawns `git gc --auto`
// (src/daemon/maintenance.ts): the policy, with git replaced by counters
// (test/git/maintenance.test.ts and test/git/pack-writer.test.ts run the real git).

const calls = vi.hoisted(() => [] as string[]);
const gcAuto = vi.hoisted(() =>
  vi.fn(async (_gitdir: string, _opts?: unknown) => {
    calls.push('gc');
  }),
);
const geometric = vi.hoisted(() => ({
  answer: 'done' as 'done' | 'off' | 'unsupported' | Error,
}));
const repackGeometric = vi.hoisted(() =>
  vi.fn(async (_gitdir: string, _opts?: unknown) => {
    calls.push('geometric');
    if (geometric.answer instanceof Error) throw geometric.answer;
    return geometric.answer;
  }),
);
const full = vi.hoisted(() => ({ answer: 'done' as 'done' | 'off' }));
const gcFull = vi.hoisted(() =>
  vi.fn(async (_gitdir: string, _opts?: unknown) => {
    calls.push('full');
    return full.answer;
  }),
);
const fullDue = vi.hoisted(() => ({ answer: false }));
const fullGcDue = vi.hoisted(() => vi.fn((_gitdir: string, _everyMs: number) => fullDue.answer));
vi.mock(import('../../src/git/index.js'), async (original) => ({
  ...(await original()),
  gcAuto,
  repackGeometric,
  gcFull,
  fullGcDue,
}));
const { startMaintenance } = await import('../../src/daemon/maintenance.js');

type Listener = () => void;

// The timer ticks every 5 ms, but a loaded CI machine (two test passes and the checks on 2
// cores) can keep this worker off the CPU for longer than vi.waitFor's default 1 s. The wait
// ends as soon as the call is seen: a long bound costs only a failing run.
const WAIT = { timeout: 30_000 };

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

afterEach(() => {
  gcAuto.mockClear();
  repackGeometric.mockClear();
  calls.length = 0;
  fullDue.answer = false;
  full.answer = 'done';
  geometric.answer = 'done';
});

describe('daemon maintenance', () => {
  it('rolls packs up geometrically once they pass git’s gc.autoPackLimit (50), not before, and runs no gc --auto for them', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {} });
    try {
      // Below the limit a run costs a process spawn from the loop for little.
      for (let i = 0; i < 50; i++) commit();
      await m.idle();
      expect(calls).toEqual([]);
      commit();
      await m.idle();
      // gc --auto past 50 packs would rewrite every object of the repository (repack -A -d).
      expect(calls).toEqual(['geometric']);
      // Counted again from that run.
      for (let i = 0; i < 50; i++) commit();
      await m.idle();
      expect(calls).toEqual(['geometric']);
      commit();
      await m.idle();
      expect(calls).toEqual(['geometric', 'geometric']);
    } finally {
      await m.close();
    }
  });

  it('runs gc --auto after everyCommits commits, after a roll-up when packs are due too', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {}, everyCommits: 5 });
    try {
      for (let i = 0; i < 5; i++) commit(0); // commits that left no pack (small packs, merged)
      await m.idle();
      expect(calls).toEqual(['gc']);
      calls.length = 0;
      commit(60);
      for (let i = 0; i < 4; i++) commit(0);
      await m.idle();
      // One run at the 5th commit: the packs first, so gc --auto finds few of them.
      expect(calls).toEqual(['geometric', 'gc']);
    } finally {
      await m.close();
    }
  });

  it('falls back to gc --auto where git has no geometric repack, and runs nothing more when auto gc is off', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {} });
    try {
      geometric.answer = 'unsupported';
      commit(51);
      await m.idle();
      expect(calls).toEqual(['geometric', 'gc']);
      calls.length = 0;
      geometric.answer = 'off';
      commit(51);
      await m.idle();
      expect(calls).toEqual(['geometric']);
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
      expect(calls).toEqual([]);
      commit(); // a second commit before that turn schedules no second run
      await m.idle();
      expect(calls).toEqual(['geometric']);
      expect(repackGeometric).toHaveBeenCalledWith('/nonexistent/.git', { smallPacks: undefined });
    } finally {
      await m.close();
    }
  });

  it('rolls up before every gc --auto that follows packs, not only past everyPacks of them', async () => {
    // gc --auto counts every pack in the repository (not only the ones written since the last
    // run): after a roll-up left two (the history's and the rolled one), 49 more are 51, and
    // gc --auto answers that with repack -A -d, every object written again.
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {}, everyCommits: 5 });
    try {
      for (let i = 0; i < 4; i++) commit(0);
      commit(49);
      await m.idle();
      expect(calls).toEqual(['geometric', 'gc']);
    } finally {
      await m.close();
    }
  });

  it('a roll-up that fails is logged and gc --auto runs instead, also when gc --auto was due anyway', async () => {
    // A partial clone's roll-up fails every time on some gits (git/maintenance.ts): packs
    // would pile up unchecked, and a gc --auto due at the same run was skipped.
    const { repo, commit } = fakeRepo();
    const log: string[] = [];
    const m = startMaintenance(new Map([[repo.key, repo]]), {
      log: (l) => log.push(l),
      everyCommits: 3,
    });
    try {
      geometric.answer = new Error('git repack failed: fatal: boom');
      commit(51);
      await m.idle();
      expect(calls).toEqual(['geometric', 'gc']);
      calls.length = 0;
      commit(0);
      commit(51); // the 3rd commit: gc --auto due, and a roll-up
      await m.idle();
      expect(calls).toEqual(['geometric', 'gc']);
      expect(log.join('\n')).toMatch(/boom/);
    } finally {
      await m.close();
    }
  });
  it('runs a full gc on the timer instead of gc --auto once one is due, and only then', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), {
      log: () => {},
      everyMs: 5,
      fullEveryMs: 1234,
    });
    try {
      commit(0);
      await vi.waitFor(() => expect(calls).toContain('gc'), WAIT);
      expect(calls).not.toContain('full');
      expect(fullGcDue).toHaveBeenCalledWith('/nonexistent/.git', 1234);
      calls.length = 0;
      fullDue.answer = true;
      commit(3); // packs written: the full gc makes a roll-up and gc --auto needless
      await vi.waitFor(() => expect(calls).toContain('full'), WAIT);
      await m.idle();
      expect(calls).toEqual(['full']);
    } finally {
      await m.close();
    }
  });
  it('runs gc --auto on the timer when a due full gc answers off (gc.autoPackLimit 0: gc --auto still packs loose objects)', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {}, everyMs: 5 });
    try {
      fullDue.answer = true; // stays due: an 'off' full gc sets no mark
      full.answer = 'off';
      commit(0);
      await vi.waitFor(() => expect(calls).toContain('full'), WAIT);
      await m.idle();
      expect(calls).toEqual(['full', 'gc']);
    } finally {
      await m.close();
    }
  });

  it('rolls packs up before that gc --auto when packs were written (a mark that cannot be set: off, with gc --auto counting packs)', async () => {
    const { repo, commit } = fakeRepo();
    const m = startMaintenance(new Map([[repo.key, repo]]), { log: () => {}, everyMs: 5 });
    try {
      fullDue.answer = true;
      full.answer = 'off';
      commit(3);
      await vi.waitFor(() => expect(calls).toContain('gc'), WAIT);
      await m.idle();
      // Without the roll-up, gc --auto past 50 packs rewrites the whole repository.
      expect(calls.slice(0, 3)).toEqual(['full', 'geometric', 'gc']);
    } finally {
      await m.close();
    }
  });
});
