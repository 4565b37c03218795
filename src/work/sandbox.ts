import { assertTreePath } from '../git/index.js';
import { ZzRepo } from '../core/index.js';
import { registry, runTool } from '../tools/index.js';
import type { FileChange, Sandbox, TestRun } from './types.js';

// --test-cmd on this machine: the candidate change becomes an unreferenced commit on top of
// its base (objects only; nothing moves a ref, git gc collects it later) and run_in_sandbox
// runs the command in a throwaway checkout of it. Only the tail of the output goes back to the
// model: the end of a failing test run is where the failure is.

const OUTPUT_TAIL = 12_000;

export async function localSandbox(opts: {
  cwd: string;
  repoKey: string;
  actor: string;
  command: string[];
  timeoutMs?: number;
}): Promise<Sandbox> {
  const repo = await ZzRepo.open(opts.cwd, { key: opts.repoKey });
  return {
    async test(base, message, files: FileChange[], signal): Promise<TestRun> {
      const changes = new Map<string, Buffer | null>();
      for (const f of files) {
        assertTreePath(f.path, 'files.path');
        changes.set(f.path, f.content === null ? null : Buffer.from(f.content, 'utf8'));
      }
      const commit = await repo.store.writeCodeCommit({
        base,
        changes,
        message,
        author: opts.actor,
      });
      const r = await runTool(
        registry.require('run_in_sandbox'),
        {
          commit,
          command: opts.command,
          ...(opts.timeoutMs ? { timeout_ms: opts.timeoutMs } : {}),
        },
        { repo, caller: { actor: opts.actor }, local: true, signal },
      );
      const out = `${String(r.stdout)}\n${String(r.stderr)}`.trim();
      return {
        ok: r.exit_code === 0 && r.timed_out !== true,
        exit_code: (r.exit_code as number | null) ?? null,
        timed_out: r.timed_out === true,
        output: out.length > OUTPUT_TAIL ? `[…]\n${out.slice(-OUTPUT_TAIL)}` : out,
      };
    },
    close: () => repo.close(),
  };
}
