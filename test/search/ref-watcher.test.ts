import { execFileSync } from 'node:child_process';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchRefs } from '../../src/search/index.js';

// Real git, real filesystem events: what a `git fetch` or `zz sync` does to a clone.

const env: NodeJS.ProcessEnv = {
  ...process.env,
  GIT_CONFIG_NOSYSTEM: '1',
  HOME: tmpdir(),
  GIT_TERMINAL_PROMPT: '0',
};
for (const k of ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_INDEX_FILE', 'GIT_COMMON_DIR']) delete env[k];

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], {
    cwd,
    env,
  })
    .toString()
    .trim();
}

let root: string;
let work: string;
let gitdir: string;
let c1: string;
let c2: string;

beforeAll(async () => {
  root = await realpath(await mkdtemp(join(tmpdir(), 'zz-watch-test-')));
  work = join(root, 'clone');
  git(root, 'init', '-q', work);
  git(work, 'commit', '-q', '--allow-empty', '-m', 'one');
  c1 = git(work, 'rev-parse', 'HEAD');
  git(work, 'commit', '-q', '--allow-empty', '-m', 'two');
  c2 = git(work, 'rev-parse', 'HEAD');
  gitdir = git(work, 'rev-parse', '--absolute-git-dir');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/**
 * Resolves with the calls seen once `ms` passes with no new call, or `max` in all (a bound for
 * a failing run: a loaded CI machine can take seconds to deliver the first event).
 */
function collect(calls: string[], ms: number, max = 30_000): Promise<string[]> {
  return new Promise((resolve) => {
    const started = Date.now();
    let last = calls.length;
    let quietSince = Date.now();
    const tick = setInterval(() => {
      if (calls.length !== last) {
        last = calls.length;
        quietSince = Date.now();
      }
      if ((calls.length > 0 && Date.now() - quietSince >= ms) || Date.now() - started > max) {
        clearInterval(tick);
        resolve([...calls]);
      }
    }, 20);
  });
}

/** Waits (polling, bounded) until `what` holds: the positive event a negative check waits on. */
async function until(what: () => boolean, label: string, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One call per burst; a loaded machine may split a multi-file update (pack-refs) in two. */
function expectBurst(calls: string[], gitdir: string): void {
  expect(calls.length).toBeGreaterThanOrEqual(1);
  expect(calls.length).toBeLessThanOrEqual(2);
  expect(new Set(calls)).toEqual(new Set([gitdir]));
}

describe('watchRefs', () => {
  it('fires when refs/zz/ladder moves, is packed, a remote ladder arrives or a Lane moves', async () => {
    // A second clone, watched too, is the flush for the negative checks: a change there fires
    // after anything the watcher made of the earlier changes here (one event queue, same debounce).
    const flushWork = join(root, 'flush');
    git(root, 'init', '-q', flushWork);
    git(flushWork, 'commit', '-q', '--allow-empty', '-m', 'f');
    const flushGitdir = git(flushWork, 'rev-parse', '--absolute-git-dir');
    const flushHead = git(flushWork, 'rev-parse', 'HEAD');
    const calls: string[] = [];
    const stop = watchRefs([gitdir, flushGitdir], (g) => calls.push(g), { debounceMs: 80 });
    await stop.ready;
    try {
      git(work, 'update-ref', 'refs/zz/ladder', c1);
      expectBurst(await collect(calls, 300), gitdir);

      calls.length = 0;
      git(work, 'update-ref', 'refs/zz/ladder', c2, c1);
      expectBurst(await collect(calls, 300), gitdir);

      // pack-refs moves the loose ref into packed-refs: same value, but the daemon must look.
      calls.length = 0;
      git(work, 'pack-refs', '--all');
      expectBurst(await collect(calls, 300), gitdir);

      calls.length = 0;
      git(work, 'update-ref', 'refs/zz-remotes/origin/ladder', c1);
      expectBurst(await collect(calls, 300), gitdir);

      // A Lane: the Ladder's fold judges rungs by its coordinator history (search-sync.ts).
      calls.length = 0;
      git(work, 'update-ref', 'refs/zz/lanes/demo', c1);
      expectBurst(await collect(calls, 300), gitdir);

      // Refs that are not ours do not wake the daemon.
      calls.length = 0;
      git(work, 'update-ref', 'refs/heads/side', c1);
      git(flushWork, 'update-ref', 'refs/zz/ladder', flushHead);
      await until(() => calls.includes(flushGitdir), 'the flush clone');
      expect(calls.filter((g) => g === gitdir)).toEqual([]);
    } finally {
      await stop();
    }
    // Closed: nothing more. A fresh watcher on the same clone is the flush.
    calls.length = 0;
    const fresh: string[] = [];
    const stopFresh = watchRefs([gitdir], (g) => fresh.push(g), { debounceMs: 80 });
    await stopFresh.ready;
    try {
      // A real move (git does not rewrite a ref to the value it already has).
      const now = git(work, 'rev-parse', 'refs/zz/ladder');
      git(work, 'update-ref', 'refs/zz/ladder', now === c1 ? c2 : c1);
      await until(() => fresh.length > 0, 'the fresh watcher');
    } finally {
      await stopFresh();
    }
    expect(calls).toEqual([]);
  });

  it('after close() nothing fires, not even a burst whose quiet period was running', async () => {
    const DEBOUNCE = 1000;
    const calls: string[] = [];
    const seen: string[] = [];
    const stop = watchRefs([gitdir], (g) => calls.push(g), { debounceMs: DEBOUNCE });
    // A second watcher of the same clone with no quiet period says when the move was seen.
    const probe = watchRefs([gitdir], (g) => seen.push(g), { debounceMs: 1 });
    await Promise.all([stop.ready, probe.ready]);
    try {
      // A fresh commit: a real move whatever the ref held before.
      const next = git(work, 'commit-tree', '-p', c2, '-m', 'close test', `${c2}^{tree}`);
      git(work, 'update-ref', 'refs/zz/ladder', next);
      await until(() => seen.length > 0, 'the probe watcher');
      // The watcher under test now has its quiet period running (unless the machine stalled
      // for a whole second: then it fired before close, which is allowed, and counted here).
      const before = calls.length;
      await stop();
      // Node runs timers in expiry order: one armed now for DEBOUNCE expires after any the
      // watcher armed before close(). Ordering, not luck, makes this the flush.
      await new Promise((r) => setTimeout(r, DEBOUNCE));
      expect(calls.slice(before)).toEqual([]);
    } finally {
      await probe();
    }
  });

  it('watches several clones and sees a ladder ref created in a fresh clone', async () => {
    const other = join(root, 'other');
    git(root, 'init', '-q', other);
    git(other, 'commit', '-q', '--allow-empty', '-m', 'x');
    const otherGitdir = git(other, 'rev-parse', '--absolute-git-dir');
    const head = git(other, 'rev-parse', 'HEAD');
    const calls: string[] = [];
    const stop = watchRefs([gitdir, otherGitdir], (g) => calls.push(g), { debounceMs: 50 });
    await stop.ready;
    try {
      // refs/zz does not exist yet in this clone: the watcher must pick up the new directory.
      git(other, 'update-ref', 'refs/zz/ladder', head);
      expectBurst(await collect(calls, 300), otherGitdir);
    } finally {
      await stop();
    }
  });
});
