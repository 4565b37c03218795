import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// The slowest test files (wall time of full runs on the shared 2-core machine on 2 December
// 2026 under load, checked against each file's CPU seconds from ZZ_TEST_CPU the same day),
// slowest first. Two workers take files from one queue: a long
// file picked up last leaves the other worker idle for most of its run. Vitest orders by the
// durations it cached on an earlier run, and on a fresh clone (CI) by file size, which puts
// small slow files such as the hook and sync-order tests near the end. A file missing here
// only runs in vitest's order.
const SLOW_FIRST = [
  'test/e2e/identity.test.ts',
  'test/e2e/zz.e2e.test.ts',
  'test/work/cli.test.ts',
  'test/web/views.test.ts',
  'test/e2e/hooks.test.ts',
  'test/git/history.test.ts',
  'test/git/pack-writer.test.ts',
  'test/web/dashboard.test.ts',
  'test/store/crash.test.ts',
  'test/sync/git-orders.test.ts',
  'test/core/properties.test.ts',
  'test/daemon/daemon.test.ts',
  'test/git/sandbox.test.ts',
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

// Test files that run one after another in a shared worker process (vitest's isolate: false):
// a process per file costs ~1.5 s of CPU to start vitest's runner and import src/ afresh (19
// small files: 51 s of CPU isolated, 22 s shared, 3 December), ~4 minutes of a 2-core CI run.
// Only files that leave nothing behind that another file could see: none mocks or spies on a
// module, sets process.env, the working directory, process listeners or the exit code, or
// configures a module-wide setting (configure*()), and none inspects its own process (active
// handles, /proc/self, memory) or runs zz in-process as its main() (zzMain). Spawned processes,
// daemons on port 0 and temp dirs are per test and per file as before (setupFiles still run
// for each file). Not here, so each in a fresh process: every file that does any of that, the
// process-level e2e tests, the crash and interop storms, the browser tests, and any new file
// until it has been checked against this list's rules.
const SHARED_PROCESS = [
  'test/cli/ask-by-id.test.ts',
  'test/cli/cli.test.ts',
  'test/cli/client-local-errors.test.ts',
  'test/cli/compile-cache.test.ts',
  'test/cli/config-changes.test.ts',
  'test/cli/config-home.test.ts',
  'test/cli/follow.test.ts',
  'test/cli/git-log.test.ts',
  'test/cli/more-hint.test.ts',
  'test/cli/odd-paths.test.ts',
  'test/cli/output.test.ts',
  'test/cli/serve-args.test.ts',
  'test/cli/serve-listen.test.ts',
  'test/cli/text-files.test.ts',
  'test/cli/tool-manifest.test.ts',
  'test/cli/usage.test.ts',
  'test/core/ask-get-detail.test.ts',
  'test/core/ask-list.test.ts',
  'test/core/bounds.test.ts',
  'test/core/changesets-fsck.test.ts',
  'test/core/changesets-policy.test.ts',
  'test/core/changesets.test.ts',
  'test/core/claim-next.test.ts',
  'test/core/closed-lane-follow-ups.test.ts',
  'test/core/corrupt.test.ts',
  'test/core/cow-map.test.ts',
  'test/core/cursors.test.ts',
  'test/core/extract-golden.test.ts',
  'test/core/extract-mentions.test.ts',
  'test/core/extract-quality.test.ts',
  'test/core/extract-scan.test.ts',
  'test/core/extract.test.ts',
  'test/core/json-text.test.ts',
  'test/core/kinds.test.ts',
  'test/core/ladder-churn.test.ts',
  'test/core/ladder-model.test.ts',
  'test/core/ladder-prune.test.ts',
  'test/core/ladder-record.test.ts',
  'test/core/ladder-search-ranking.test.ts',
  'test/core/lane-get-cold.test.ts',
  'test/core/lane-list-scale.test.ts',
  'test/core/lanes-asks.test.ts',
  'test/core/op-sharing.test.ts',
  'test/core/ops.test.ts',
  'test/core/paging.test.ts',
  'test/core/properties.test.ts',
  'test/core/revoked-and-grouped.test.ts',
  'test/core/shared-snapshots.test.ts',
  'test/core/tracking-configs.test.ts',
  'test/core/views-shape.test.ts',
  'test/core/write-config.test.ts',
  'test/core/write-pacing.test.ts',
  'test/daemon/maintenance-git.test.ts',
  'test/git/branch-update.test.ts',
  'test/git/cat-file.test.ts',
  'test/git/git-config.test.ts',
  'test/git/reachability.test.ts',
  'test/git/ref-names.test.ts',
  'test/git/tree-serialize.test.ts',
  'test/git/tree-walk.test.ts',
  'test/github/cli-github.test.ts',
  'test/github/github.test.ts',
  'test/github/hostile-github.test.ts',
  'test/github/ladder-github.test.ts',
  'test/hostile/body-limits.test.ts',
  'test/hostile/changeset-shapes.test.ts',
  'test/hostile/corrupt-follow.test.ts',
  'test/hostile/kind-filters.test.ts',
  'test/hostile/missing-history.test.ts',
  'test/hostile/revoked-land.test.ts',
  'test/http/app.test.ts',
  'test/http/claim-next-exclude.test.ts',
  'test/http/paged-ladder-state.test.ts',
  'test/http/paged-reads.test.ts',
  'test/http/server.test.ts',
  'test/local/create-exclusive.test.ts',
  'test/local/flushed.test.ts',
  'test/local/keyed-queue.test.ts',
  'test/mcp/mcp-backpressure.test.ts',
  'test/mcp/mcp-command.test.ts',
  'test/mcp/mcp-inflight.test.ts',
  'test/mcp/mcp.test.ts',
  'test/schema/cursor.test.ts',
  'test/schema/op-parse.test.ts',
  'test/schema/rung.test.ts',
  'test/search/daemon-search.test.ts',
  'test/search/direct-scorer.test.ts',
  'test/search/ladder-index.test.ts',
  'test/search/ref-watcher.test.ts',
  'test/search/score-order.test.ts',
  'test/search/shard-file.test.ts',
  'test/search/term-router.test.ts',
  'test/store/history-walk.test.ts',
  'test/store/op-log.test.ts',
  'test/store/random-hex.test.ts',
  'test/store/store.test.ts',
  'test/store/tree-images.test.ts',
  'test/sync/adopt-validated.test.ts',
  'test/sync/authenticity.test.ts',
  'test/sync/auto-sync.test.ts',
  'test/sync/clock-ahead.test.ts',
  'test/sync/config-notice.test.ts',
  'test/sync/event-cursor.test.ts',
  'test/sync/fold-caps.test.ts',
  'test/sync/fold-refusal-cost.test.ts',
  'test/sync/fold-refusals.test.ts',
  'test/sync/git-orders.test.ts',
  'test/sync/git-sync.test.ts',
  'test/sync/guarded-fold.test.ts',
  'test/sync/held-back.test.ts',
  'test/sync/hostile-history.test.ts',
  'test/sync/hostile-names.test.ts',
  'test/sync/hostile-refs.test.ts',
  'test/sync/in-process-signing.test.ts',
  'test/sync/init-no-fetch.test.ts',
  'test/sync/init-rerun.test.ts',
  'test/sync/key-tools.test.ts',
  'test/sync/ladder-fold.test.ts',
  'test/sync/loser-visibility.test.ts',
  'test/sync/merge-reuse.test.ts',
  'test/sync/project-identity.test.ts',
  'test/sync/properties.test.ts',
  'test/sync/ref-transaction.test.ts',
  'test/sync/related-check.test.ts',
  'test/sync/replica-id.test.ts',
  'test/sync/role-timeline.test.ts',
  'test/sync/roles-as-they-stood.test.ts',
  'test/sync/root-commit.test.ts',
  'test/sync/ssh-signature.test.ts',
  'test/sync/sync-cli.test.ts',
  'test/sync/transport.test.ts',
  'test/sync/two-inits.test.ts',
  'test/sync/unsigned-flag.test.ts',
  'test/sync/validate-typed.test.ts',
  'test/tools/git-tools.test.ts',
  'test/tools/lazy-module.test.ts',
  'test/tools/payload-depth.test.ts',
  'test/tools/registry.test.ts',
  'test/work/claims.test.ts',
  'test/work/closed-lane.test.ts',
  'test/work/lane-flow.test.ts',
  'test/work/open-loop-limits.test.ts',
  'test/work/waiting.test.ts',
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
