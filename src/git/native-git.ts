import { spawn } from 'node:child_process';
import { getPriority, setPriority } from 'node:os';
import { ZzError } from '../errors.js';
import { EXIT_GRACE_MS, spawnOffLoop, type Collected } from './spawn-thread.js';
import { killGroup, trackGroup, untrackGroup } from './git-groups.js';

// Native git is spawned with an argument array, never through a shell. Git's own
// environment variables are scrubbed so that a daemon started from inside a hook or an
// IDE terminal (GIT_DIR, GIT_INDEX_FILE, …) cannot be pointed at another repository.

export interface GitRunOptions {
  cwd: string;
  input?: string | Buffer;
  env?: Record<string, string>;
  /** Exit codes that are not failures (e.g. 1 for `git diff --quiet`). */
  okCodes?: number[];
  maxBuffer?: number;
  timeoutMs?: number;
  /**
   * Runs git this much nicer than the daemon (1–19): for background work that
   * must not take a core from the requests being served (git/maintenance.ts).
   */
  nice?: number;
  /**
   * Spawns git from a worker thread (spawn-thread.ts): the event loop goes on while the child
   * forks and execs (milliseconds to tens of them on a busy machine). For background runs.
   */
  offLoop?: boolean;
  /**
   * git may ask on this process's terminal (an ssh key's passphrase, an unknown host key):
   * it then runs in this process's session, not a group of its own, so a timeout kills git
   * but not a helper it started (the run still ends EXIT_GRACE_MS after git). Only for a
   * person's `zz sync` / `zz init` at a terminal (zz-transport.ts letRemotesAskOnTerminal).
   */
  terminal?: boolean;
}

export interface GitRunResult {
  stdout: Buffer;
  stderr: string;
  code: number;
}

const SCRUBBED = [
  'GIT_DIR',
  'GIT_WORK_TREE',
  'GIT_INDEX_FILE',
  'GIT_OBJECT_DIRECTORY',
  'GIT_ALTERNATE_OBJECT_DIRECTORIES',
  'GIT_COMMON_DIR',
  'GIT_NAMESPACE',
  'GIT_CEILING_DIRECTORIES',
  'GIT_PREFIX',
];

export function gitEnv(extra?: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of SCRUBBED) delete env[k];
  env.GIT_TERMINAL_PROMPT = '0';
  env.LC_ALL = 'C';
  return { ...env, ...extra };
}

/**
 * Refuses anything that git could read as an option where a ref or revision is expected.
 * Call it on every user-influenced ref before it becomes an argument.
 */
export function assertRevArg(value: string, what = 'ref'): string {
  if (value.length === 0 || value.startsWith('-') || /[\0\n\r]/.test(value)) {
    throw new ZzError(
      'invalid_argument',
      `${what} "${value.slice(0, 80)}" is not a valid revision`,
    );
  }
  return value;
}

/**
 * The command git runs, for messages: the first argument after git's own options (`-c k=v`,
 * `-C dir`, `--git-dir dir` and the like), so that a failure reads "git repack failed", not
 * "git --git-dir failed".
 */
function subcommand(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-c' || a === '-C' || a === '--git-dir' || a === '--work-tree') i++;
    else if (!a.startsWith('-')) return a;
  }
  return args[0] ?? '';
}

const spawnOptions = (opts: GitRunOptions) => ({
  cwd: opts.cwd,
  env: gitEnv(opts.env),
  stdio: ['pipe', 'pipe', 'pipe'] as ['pipe', 'pipe', 'pipe'],
  // Its own process group: a timeout kills git and every helper it started (git-groups.ts).
  // That is a new session without a controlling terminal, where ssh cannot ask for a
  // passphrase: `terminal` runs keep ours.
  detached: process.platform !== 'win32' && opts.terminal !== true,
});

export function runGit(args: readonly string[], opts: GitRunOptions): Promise<GitRunResult> {
  const maxBuffer = opts.maxBuffer ?? 256 * 1024 * 1024;
  // Niced from its start by POSIX `nice`, which execs git in its place (same pid, so the
  // timeout still kills git): renicing the child once spawn() returned raced git, which can
  // fork its own children (a shell alias, pack-objects) before that call, and they kept the
  // daemon's priority (seen in the test suite under load). Windows has no `nice`: there the
  // child is reniced after the spawn, as well as it can be (and spawned on the loop, where its
  // pid is at hand).
  const niced = opts.nice !== undefined && process.platform !== 'win32';
  const file = niced ? 'nice' : 'git';
  const argv = niced ? ['-n', String(opts.nice), 'git', ...args] : (args as string[]);
  const ran =
    opts.offLoop && process.platform !== 'win32'
      ? spawnOffLoop({
          file,
          args: argv,
          cwd: opts.cwd,
          env: gitEnv(opts.env),
          timeoutMs: opts.timeoutMs,
          input: opts.input,
          maxBuffer,
        })
      : spawnOnLoop(file, argv, opts, maxBuffer);
  return ran.then(
    (c) => settle(args, opts, maxBuffer, c),
    (e: Error) => {
      throw new ZzError('git_failed', `could not run git: ${e.message}`, undefined, { cause: e });
    },
  );
}

/**
 * The child started on this thread. Hazard: spawn-thread.ts's SOURCE collects the same way
 * (the timeout killing the group, the grace after 'exit').
 */
function spawnOnLoop(
  file: string,
  argv: string[],
  opts: GitRunOptions,
  maxBuffer: number,
): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, spawnOptions(opts));
    if (opts.nice !== undefined && file === 'git' && child.pid !== undefined) {
      try {
        setPriority(child.pid, Math.min(19, getPriority() + opts.nice));
      } catch {
        /* not allowed here (or gone already): it runs at the daemon's priority */
      }
    }
    // A terminal run leads no group of its own: killing "its group" would miss it.
    const pid = opts.terminal === true ? undefined : child.pid;
    if (pid !== undefined) trackGroup(pid);
    const out: Buffer[] = [];
    let outLen = 0;
    let overflow = false;
    let timedOut = false;
    let err = '';
    let grace: NodeJS.Timeout | undefined;
    const kill = () => (pid !== undefined ? killGroup(pid) : child.kill('SIGKILL'));
    const timer =
      opts.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            kill();
          }, opts.timeoutMs);
    let done = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(grace);
      if (pid !== undefined) untrackGroup(pid);
      resolve({ stdout: Buffer.concat(out), stderr: err, code, signal, overflow, timedOut });
    };
    child.stdout.on('data', (b: Buffer) => {
      outLen += b.length;
      if (outLen > maxBuffer) {
        overflow = true;
        kill();
        return;
      }
      out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      if (err.length < 64 * 1024) err += b.toString('utf8');
    });
    child.on('error', (e) => {
      clearTimeout(timer);
      if (pid !== undefined) untrackGroup(pid);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      grace = setTimeout(() => {
        kill();
        child.stdout.destroy();
        child.stderr.destroy();
        finish(code, signal);
      }, EXIT_GRACE_MS);
    });
    child.on('close', finish);
    // A group killed while a large input is still being written: EPIPE here must not be an
    // unhandled 'error' (the run fails by its exit); spawn-thread.ts does the same.
    child.stdin.on('error', () => {});
    if (opts.input !== undefined) child.stdin.end(opts.input);
    else child.stdin.end();
  });
}

/** What the child did, as runGit's answer: its output, or the failure that names it. */
function settle(
  args: readonly string[],
  opts: GitRunOptions,
  maxBuffer: number,
  c: Collected,
): GitRunResult {
  const rc = c.code ?? 128;
  if (c.timedOut) {
    throw new ZzError(
      'git_failed',
      `git ${subcommand(args)} timed out after ${Math.round((opts.timeoutMs ?? 0) / 1000)} s`,
      { code: rc, stderr: c.stderr, timedOut: true, timeoutMs: opts.timeoutMs },
    );
  }
  if (c.overflow) {
    throw new ZzError(
      'git_failed',
      `git ${subcommand(args)} produced more than ${maxBuffer} bytes`,
    );
  }
  if (rc !== 0 && !(opts.okCodes ?? []).includes(rc)) {
    const msg =
      c.stderr.trim().split('\n').slice(-3).join(' ') ||
      `exit ${rc}${c.signal ? ` (${c.signal})` : ''}`;
    throw new ZzError('git_failed', `git ${subcommand(args)} failed: ${msg}`, {
      code: rc,
      stderr: c.stderr,
    });
  }
  return { stdout: c.stdout, stderr: c.stderr, code: rc };
}

/** Runs git and returns stdout as UTF-8 with the trailing newline removed. */
export async function git(args: readonly string[], opts: GitRunOptions): Promise<string> {
  const r = await runGit(args, opts);
  return r.stdout.toString('utf8').replace(/\n$/, '');
}
