import { ZzError } from '../errors.js';
import { runInSandbox, type SandboxResult } from '../git/sandbox.js';

export { SANDBOX_TIMEOUT_MAX_MS } from '../git/sandbox.js';
import { assertSelf, requireCaller, type Caller } from './access.js';
import { requireGit } from './changesets.js';
import { CHANGESETS_PREFIX, type ZzRepo } from './zz-repo.js';

// run_in_sandbox: a command in a throwaway checkout of a commit or a changeset, on the
// caller's own machine (a local-only tool). git/sandbox.ts makes the checkout, runs the
// command and kills everything it started.

export interface SandboxArgs {
  commit?: string;
  changeset_id?: string;
  command: string[];
  timeout_ms?: number;
  max_output_bytes?: number;
  env?: Record<string, string>;
  actor?: string;
}

/** Runs a command in a throwaway checkout of a commit or of a changeset. */
export async function sandboxRun(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: SandboxArgs,
  signal?: AbortSignal,
): Promise<SandboxResult & { changeset_id: string | null }> {
  assertSelf(requireCaller(callerIn), args.actor, 'actor');
  if ((args.commit === undefined) === (args.changeset_id === undefined)) {
    throw new ZzError('invalid_argument', 'pass exactly one of commit and changeset_id');
  }
  const git = requireGit(repo);
  let commit = args.commit;
  if (args.changeset_id !== undefined) {
    const cs = await git.refs.read(CHANGESETS_PREFIX + args.changeset_id);
    if (!cs) throw new ZzError('not_found', `changeset ${args.changeset_id} does not exist`);
    commit = cs;
  }
  const r = await runInSandbox({
    gitdir: git.gitdir,
    ...(git.workTree ? { workTree: git.workTree } : {}),
    commit: commit!,
    command: args.command,
    ...(args.timeout_ms === undefined ? {} : { timeout_ms: args.timeout_ms }),
    ...(args.max_output_bytes === undefined ? {} : { max_output_bytes: args.max_output_bytes }),
    ...(args.env === undefined ? {} : { env: args.env }),
    ...(signal ? { signal } : {}),
  });
  return { ...r, changeset_id: args.changeset_id ?? null };
}
