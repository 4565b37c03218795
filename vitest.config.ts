import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { SHARED_PROCESS } from './test/setup/shared-process.js';

// The slowest test files (wall time of full runs on the shared 2-core machine on 2 December
// 2026 under load, checked against each file's CPU seconds from ZZ_TEST_CPU the same day; the
// sync, signals and MCP files of 13-32 s of CPU added from ZZ_TEST_CPU on 3 December),
// slowest first. Two workers take files from one queue: a long
// file picked up last leaves the other worker idle for most of its run. Vitest orders by the
// durations it cached on an earlier run, and on a fresh clone (CI) by file size, which puts
// small slow files such as the hook and sync-order tests near the end. A file missing here
// only runs in vitest's order.
const SLOW_FIRST = [
  'test/e2e/identity.test.ts',
  'test/e2e/zz.e2e.test.ts',
  'test/sync/project-identity.test.ts',
  'test/work/cli.test.ts',
  'test/web/views.test.ts',
  'test/e2e/hooks.test.ts',
  'test/git/history.test.ts',
  'test/sync/hostile-history.test.ts',
  'test/sync/hostile-names.test.ts',
  'test/git/pack-writer-kills.test.ts',
  'test/git/pack-writer.test.ts',
  'test/sync/hostile-refs.test.ts',
  'test/sync/adopt-validated.test.ts',
  'test/web/dashboard.test.ts',
  'test/store/crash.test.ts',
  'test/sync/git-orders.test.ts',
  'test/e2e/signals.test.ts',
  'test/sync/ladder-fold.test.ts',
  'test/sync/fold-refusals.test.ts',
  'test/core/properties.test.ts',
  'test/daemon/daemon.test.ts',
  'test/git/sandbox.test.ts',
  'test/mcp/mcp-backpressure.test.ts',
  'test/sync/fold-caps.test.ts',
  'test/e2e/fast-path-lost-answer.test.ts',
  'test/store/interop.test.ts',
  'test/e2e/fast-path.test.ts',
  'test/search/ladder-index.test.ts',
  'test/e2e/cli-startup.test.ts',
  'test/sync/event-cursor.test.ts',
  'test/sync/git-sync.test.ts',
  'test/work/flows.test.ts',
  'test/hostile/temp-leaks.test.ts',
  'test/store/crash-gc-attack.test.ts',
  'test/core/changesets.test.ts',
  'test/http/server.test.ts',
  'test/mcp/mcp-command.test.ts',
  'test/core/token-store.test.ts',
];

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = SLOW_FIRST.findIndex((s) => f.moduleId.endsWith(`/${s}`));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    return sorted
      .map((f, i) => ({ f, i, r: rank(f) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    // Removes the temporary repos and homes the test helpers made (test/helpers/temp-dirs.ts).
    // cpu-usage.ts measures only when ZZ_TEST_CPU names a file.
    setupFiles: ['test/setup/cpu-usage.ts', 'test/setup/remove-temp-dirs.ts'],
    // A bound for a hang, not a performance check (those live in bench/). CI runs the Node 20
    // and Node 24 passes side by side on 2 cores (load average 15-20): there, tests that take
    // 10-20 s alone (history, properties, git-orders, hooks, the crash storm) crossed 60 s on
    // 2 December. Files that need more say so per test.
    testTimeout: 150_000,
    hookTimeout: 150_000,
    // expect.poll waits for a fact (an event delivered, a page updated), never for time to
    // pass; its default 1 s bound is shorter than a loaded CI machine (two passes and the
    // checks on 2 cores) can stall a daemon, a child process or Chromium. It returns as soon
    // as the fact holds, so a longer bound costs only a failing run.
    expect: { poll: { timeout: 30_000 } },
    pool: 'forks',
    // A 2-core machine: more workers only fight over the disk and fsync.
    maxWorkers: 2,
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      { extends: true, test: { name: 'shared', include: SHARED_PROCESS, isolate: false } },
      {
        extends: true,
        test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: SHARED_PROCESS },
      },
    ],
  },
});
