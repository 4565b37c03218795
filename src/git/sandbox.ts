import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { Readable } from 'node:stream';
import { ZzError } from '../errors.js';
import { KeyedQueue } from '../local/keyed-queue.js';
import { assertRevArg, runGit } from './native-git.js';
import {
  outputLinks,
  signalRun,
  signalRunButInit,
  sweepRun,
  type SweepMark,
} from './process-sweep.js';
import {
  namespaceAvailable,
  namespaceLaunch,
  parseInitReport,
  type Isolation,
} from './sandbox-ns.js';

// run_in_sandbox: a command in a throwaway checkout of one commit. The checkout is a detached
// linked worktree in a fresh temp dir, so it costs one checkout and shares the object store.
// This is a clean room, not a security boundary: the command runs as the user, and git inside
// the checkout reaches the user's repository (refs included). What it does guarantee is that
// the command sees only the committed tree and a scrubbed environment (no tokens inherited
// from the daemon or the agent), cannot outlive its timeout, and leaves nothing behind.

export interface SandboxOptions {
  /** The common git dir. */
  gitdir: string;
  workTree?: string;
  commit: string;
  /** argv; spawned directly, never through a shell. */
  command: string[];
  timeout_ms?: number;
  /** Per stream. */
  max_output_bytes?: number;
  env?: Record<string, string>;
  /** "process-group" forces the fallback (tests); default: a PID namespace when available. */
  isolation?: 'auto' | 'process-group';
  /**
   * Ends the run as a timeout does (SIGTERM, then SIGKILL), then rejects with its reason once
   * the checkout is removed: the CLI's Ctrl-C, which the run's own process group never sees.
   */
  signal?: AbortSignal;
  /**
   * After the timeout's SIGTERM, how long the command gets to clean up before SIGKILL
   * (default 2 s). Not part of the tool's schema: for callers that know their command is slow
   * to clean up, and tests on a loaded machine, where 2 s of wall clock can be no CPU at all.
   */
  kill_grace_ms?: number;
}

export interface SandboxResult {
  /** The commit checked out. */
  commit: string;
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  duration_ms: number;
  /**
   * How the run was contained: "pid-namespace" (everything it started died with it) or
   * "process-group" (its group plus the sweep of process-sweep.ts; see sandbox-ns.ts).
   */
  isolation: Isolation;
}

const TIMEOUT_DEFAULT = 120_000;
/** The longest a run may be given (timeout_ms). */
export const SANDBOX_TIMEOUT_MAX_MS = 1_800_000;
const OUTPUT_DEFAULT = 64 * 1024;
const OUTPUT_MAX = 16 * 1024 * 1024;
/** The environment variable that marks every process of one run. */
const MARK_VAR = 'ZZ_SANDBOX_RUN';
/** After SIGTERM, how long the process group gets before SIGKILL. */
const KILL_GRACE_MS = 2_000;
/**
 * After the grace's SIGKILL of everything else, how long the namespace's init (ours, harmless,
 * alone in an empty namespace) still gets to report how the command ended before it is
 * SIGKILLed too. At least the grace: CI at load 15-20 saw an init not scheduled within a 2 s
 * second grace, and the run said SIGKILL for a command that died of the SIGTERM at once.
 */
const INIT_REPORT_MS = 10_000;
/** After the command exits, how long to wait for descendants holding its pipes. */
const PIPE_GRACE_MS = 1_000;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function invalid(field: string, message: string): ZzError {
  return new ZzError('invalid_argument', message, { field });
}

function validate(opts: SandboxOptions): {
  timeout: number;
  cap: number;
  grace: number;
  env: Record<string, string>;
} {
  const cmd: unknown = opts.command;
  if (!Array.isArray(cmd) || cmd.length === 0) {
    throw invalid('command', 'command must be a non-empty array of strings');
  }
  for (const [i, a] of cmd.entries()) {
    if (typeof a !== 'string' || a.includes('\0') || (i === 0 && a.length === 0)) {
      throw invalid(
        'command',
        `command[${i}] must be a string without NUL${i === 0 ? ', not empty' : ''}`,
      );
    }
  }
  const int = (v: unknown, field: string, min: number, max: number, dflt: number) => {
    if (v === undefined || v === null) return dflt;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw invalid(field, `${field} must be an integer from ${min} to ${max}`);
    }
    return v;
  };
  const timeout = int(opts.timeout_ms, 'timeout_ms', 1, SANDBOX_TIMEOUT_MAX_MS, TIMEOUT_DEFAULT);
  const cap = int(opts.max_output_bytes, 'max_output_bytes', 1, OUTPUT_MAX, OUTPUT_DEFAULT);
  const grace = int(opts.kill_grace_ms, 'kill_grace_ms', 1, 60_000, KILL_GRACE_MS);
  const env: Record<string, string> = {};
  if (opts.env !== undefined && opts.env !== null) {
    if (typeof opts.env !== 'object' || Array.isArray(opts.env)) {
      throw invalid('env', 'env must be an object of strings');
    }
    for (const [k, v] of Object.entries(opts.env)) {
      if (!ENV_NAME.test(k)) throw invalid('env', `env name "${k.slice(0, 60)}" is not valid`);
      if (typeof v !== 'string' || v.includes('\0')) {
        throw invalid('env', `env.${k} must be a string without NUL`);
      }
      env[k] = v;
    }
  }
  return { timeout, cap, grace, env };
}

/** Keeps the first `cap` bytes of a stream and whether more came. */
class Capture {
  private parts: Buffer[] = [];
  private len = 0;
  truncated = false;

  constructor(private readonly cap: number) {}

  push(b: Buffer): void {
    if (this.len >= this.cap) {
      if (b.length > 0) this.truncated = true;
      return;
    }
    const room = this.cap - this.len;
    if (b.length > room) {
      this.parts.push(b.subarray(0, room));
      this.len += room;
      this.truncated = true;
    } else {
      this.parts.push(b);
      this.len += b.length;
    }
  }

  text(): string {
    let buf = Buffer.concat(this.parts, this.len);
    if (this.truncated) {
      // Do not end a cut stream on half a UTF-8 character.
      let i = buf.length - 1;
      while (i >= 0 && i >= buf.length - 3 && (buf[i]! & 0xc0) === 0x80) i--;
      if (i >= 0) {
        const lead = buf[i]!;
        const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (i + need > buf.length) buf = buf.subarray(0, i);
      }
    }
    return buf.toString('utf8');
  }
}

interface RunOutcome {
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  duration_ms: number;
  spawnError: NodeJS.ErrnoException | null;
  /** unshare exited without the init's report: the namespace was refused, the command never ran. */
  namespaceFailed: boolean;
}

function runCommand(
  command: string[],
  cwd: string,
  env: Record<string, string>,
  timeout: number,
  grace: number,
  out: Capture,
  err: Capture,
  runDir: string,
  isolation: Isolation,
  signal?: AbortSignal,
): Promise<RunOutcome> {
  // Every process the command starts inherits this variable: how the sweep finds the ones
  // that left the process group (process-sweep.ts).
  const marker = `${MARK_VAR}=${randomBytes(12).toString('hex')}`;
  return new Promise((resolve) => {
    const started = performance.now();
    let timedOut = false;
    let exited: { code: number | null; signal: string | null } | null = null;
    let duration = 0;
    let settled = false;
    const timers: NodeJS.Timeout[] = [];
    const cmdEnv = { ...env, [MARK_VAR]: marker.slice(MARK_VAR.length + 1) };
    const ns = isolation === 'pid-namespace';
    const launch = ns
      ? namespaceLaunch(command, cmdEnv)
      : { file: command[0]!, args: command.slice(1), env: cmdEnv };
    // detached: the command (or unshare, its init and the command) leads its own process group,
    // so the whole tree can be signalled. fd 3: the namespace init's report of how it ended.
    const child = spawn(launch.file, launch.args, {
      cwd,
      env: launch.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe', ns ? 'pipe' : 'ignore'],
    }) as ChildProcessByStdio<null, Readable, Readable>;
    let report = '';
    const reportPipe = child.stdio[3];
    if (ns && reportPipe && 'on' in reportPipe) {
      reportPipe.on('data', (b: Buffer) => {
        if (report.length < 200) report += b.toString('utf8');
      });
      reportPipe.on('error', () => undefined);
    }
    // The ends of our pipes the command holds, read before it can close them: a daemon that
    // scrubbed its environment and left the directory is still found by them.
    const outputs = child.pid === undefined ? [] : outputLinks(child.pid);
    const mark = (): SweepMark | null =>
      child.pid === undefined ? null : { env: marker, dir: runDir, root: child.pid, outputs };
    let swept: Promise<unknown> = Promise.resolve();
    const finish = async (spawnError: NodeJS.ErrnoException | null) => {
      if (settled) return;
      settled = true;
      for (const t of timers) clearTimeout(t);
      signal?.removeEventListener('abort', stop);
      // Nothing the command started outlives the answer (or the checkout it runs in).
      await swept;
      const m = mark();
      if (m) await sweepRun(m);
      // In a namespace, `exited` is unshare's status; the init reported the command's own.
      const r = ns ? parseInitReport(report) : null;
      if (r?.kind === 'exit') exited = { code: r.code, signal: null };
      else if (r?.kind === 'signal') exited = { code: null, signal: r.signal };
      else if (r?.kind === 'error') {
        spawnError = Object.assign(new Error(r.code), { code: r.code });
      }
      resolve({
        exit_code: exited?.code ?? null,
        signal: exited?.signal ?? null,
        timed_out: timedOut,
        duration_ms: Math.round(duration || performance.now() - started),
        spawnError,
        // The init reports before it exits; only SIGKILL (a signal status) stops it doing so.
        // A spawn error here (no report) is unshare's own: gone since the probe.
        namespaceFailed: ns && r === null && (spawnError !== null || exited?.code != null),
      });
    };
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e: NodeJS.ErrnoException) => {
      // A spawn failure (ENOENT, EACCES) never exits; a failed kill is not fatal.
      if (child.pid === undefined) void finish(e);
    });
    function stop(): void {
      const m = mark();
      if (!m) return;
      signalRun(m, 'SIGTERM');
      if (!ns) {
        timers.push(setTimeout(() => signalRun(m, 'SIGKILL'), grace));
        return;
      }
      // Hazard: the namespace's init tells how the command ended. On a loaded machine a
      // command that died of the SIGTERM at once may not have been reaped and reported by the
      // init before the grace ends; SIGKILLing the init with the rest then loses the report
      // and the run says SIGKILL (seen in CI). So the end of the grace kills everything but
      // the init, which exits with its command and takes the namespace down; only an init
      // still there INIT_REPORT_MS later is killed too.
      timers.push(
        setTimeout(() => {
          // Armed first: the last word must not depend on the scan below succeeding.
          timers.push(setTimeout(() => signalRun(m, 'SIGKILL'), Math.max(grace, INIT_REPORT_MS)));
          signalRunButInit(m, 'SIGKILL');
        }, grace),
      );
    }
    timers.push(
      setTimeout(() => {
        timedOut = true;
        stop();
      }, timeout),
    );
    if (signal?.aborted) stop();
    else signal?.addEventListener('abort', stop, { once: true });
    child.on('exit', (code, signal) => {
      exited = { code, signal };
      duration = performance.now() - started;
      // Descendants (`cmd &`, `setsid cmd &`) must not outlive the checkout they run in; once
      // they are gone, nothing holds our pipes open.
      const m = mark();
      if (m) swept = sweepRun(m);
      // One that could not be killed and still holds our pipes must not hold the answer.
      // Hazard: a loop stalled past the grace right after the exit (a long synchronous task
      // elsewhere in the daemon) would run this timer before the poll phase had read what
      // the command wrote just before exiting, and destroying the pipes drops that output.
      // Timers run before the poll phase; an immediate runs after it: so the pipes are
      // destroyed only once one poll has read whatever is readable (and, at EOF, closed
      // them and finished normally).
      timers.push(
        setTimeout(() => {
          setImmediate(() => {
            if (settled) return;
            child.stdout.destroy();
            child.stderr.destroy();
            reportPipe?.destroy();
            void finish(null);
          });
        }, PIPE_GRACE_MS),
      );
    });
    child.on('close', () => {
      if (exited) void finish(null);
    });
  });
}

async function removeTree(dir: string): Promise<void> {
  try {
    await fsp.rm(dir, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    // Read-only directories (a Go module cache, chmod -w) refuse unlinks: open them up first.
    await chmodWritable(dir);
    await fsp.rm(dir, { recursive: true, force: true, maxRetries: 2 });
  }
}

async function chmodWritable(dir: string): Promise<void> {
  try {
    await fsp.chmod(dir, 0o700);
    for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
      if (e.isDirectory()) await chmodWritable(join(dir, e.name));
    }
  } catch {
    // Best effort; the rm that follows reports what is left.
  }
}

/** Removes git's admin entry for this one worktree, should `worktree remove` have failed. */
async function dropWorktreeEntry(gitdir: string, checkout: string): Promise<void> {
  const admin = join(gitdir, 'worktrees');
  let names: string[];
  try {
    names = await fsp.readdir(admin);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(basename(checkout))) continue;
    try {
      const target = (await fsp.readFile(join(admin, name, 'gitdir'), 'utf8')).trim();
      if (target === join(checkout, '.git')) await removeTree(join(admin, name));
    } catch {
      // Not ours, or already gone.
    }
  }
}

/**
 * Runs `command` in a fresh detached checkout of `commit` and removes the checkout afterwards,
 * whatever happened (non-zero exit, crash, timeout, spawn failure). The environment is only
 * PATH, HOME (an empty temp dir), LANG=C.UTF-8 and TMPDIR (a temp dir), plus `env` (and the
 * run's marker variable). The command runs in a PID namespace of its own where the host allows
 * (sandbox-ns.ts), so everything it started dies with it; else in its own process group, with
 * the sweep of process-sweep.ts for what left the group (`isolation` says which). On timeout
 * every process of the run gets SIGTERM, then SIGKILL two seconds (`kill_grace_ms`) later; when the command
 * exits, whatever it left running is killed before the answer is returned.
 */
export async function runInSandbox(opts: SandboxOptions): Promise<SandboxResult> {
  const { timeout, cap, grace, env: extraEnv } = validate(opts);
  if (typeof opts.commit !== 'string') throw invalid('commit', 'commit must be a string');
  assertRevArg(opts.commit, 'commit');
  const gitCwd = opts.workTree ?? opts.gitdir;
  const rp = await runGit(['rev-parse', '--verify', '--quiet', `${opts.commit}^{commit}`], {
    cwd: gitCwd,
    env: { GIT_DIR: opts.gitdir },
    // 1: no such commit; 128: a revision git cannot even evaluate here ("@{u}" without one).
    okCodes: [1, 128],
  });
  if (/not a git repository/i.test(rp.stderr)) {
    throw new ZzError('not_a_repository', `${opts.gitdir} is not a git repository`);
  }
  const commit = rp.stdout.toString('utf8').trim();
  if (rp.code !== 0 || !/^[0-9a-f]{40,64}$/.test(commit)) {
    throw new ZzError('not_found', `commit "${opts.commit.slice(0, 80)}" does not name a commit`, {
      commit: opts.commit,
    });
  }

  // realpath: git records the checkout's canonical path, which dropWorktreeEntry compares.
  const base = await fsp.realpath(await fsp.mkdtemp(join(tmpdir(), 'zz-sandbox-')));
  // The checkout's basename becomes its admin entry's name; make it as unique as the dir.
  const checkout = join(base, basename(base));
  const home = join(base, 'home');
  const tmp = join(base, 'tmp');
  try {
    await fsp.mkdir(home);
    await fsp.mkdir(tmp);
    try {
      await addWorktree(opts.gitdir, gitCwd, checkout, commit);
    } catch (e) {
      throw new ZzError(
        'git_failed',
        `could not check out ${commit}: ${(e as Error).message}`,
        undefined,
        {
          cause: e,
        },
      );
    }
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: home,
      LANG: 'C.UTF-8',
      TMPDIR: tmp,
      ...extraEnv,
    };
    let isolation: Isolation =
      opts.isolation !== 'process-group' && (await namespaceAvailable())
        ? 'pid-namespace'
        : 'process-group';
    let out = new Capture(cap);
    let err = new Capture(cap);
    const run = () =>
      runCommand(
        opts.command,
        checkout,
        env,
        timeout,
        grace,
        out,
        err,
        base,
        isolation,
        opts.signal,
      );
    let r = await run();
    if (r.namespaceFailed) {
      // The probe passed but this namespace was refused (a user namespace limit reached under
      // load, a policy changed): the command never ran, so run it the fallback way, and drop
      // unshare's complaint from the output.
      isolation = 'process-group';
      out = new Capture(cap);
      err = new Capture(cap);
      r = await run();
    }
    // Ended by the caller: its reason, not a result (the finally below removes the checkout).
    opts.signal?.throwIfAborted();
    if (r.spawnError) {
      throw new ZzError(
        'invalid_argument',
        `could not start "${opts.command[0]!.slice(0, 200)}": ${r.spawnError.code ?? r.spawnError.message}`,
        { field: 'command' },
      );
    }
    return {
      commit,
      exit_code: r.exit_code,
      signal: r.signal,
      timed_out: r.timed_out,
      stdout: out.text(),
      stderr: err.text(),
      stdout_truncated: out.truncated,
      stderr_truncated: err.truncated,
      duration_ms: r.duration_ms,
      isolation,
    };
  } finally {
    await runGit(['worktree', 'remove', '--force', '--force', checkout], {
      cwd: gitCwd,
      env: { GIT_DIR: opts.gitdir },
    }).catch(() => undefined);
    await removeTree(base).catch(() => undefined);
    // Only our own entry: `git worktree prune` would also drop the user's worktrees that are
    // merely unreachable right now (an unmounted disk), which is not ours to decide.
    await dropWorktreeEntry(opts.gitdir, checkout);
  }
}

// `git worktree add` reads every other worktree's admin entry, and fails ("failed to read
// .../commondir") when it meets one a concurrent `worktree add` is still writing. Adds from this
// process go one at a time; one from another process is retried.
const addQueues = new KeyedQueue();

function addWorktree(gitdir: string, cwd: string, checkout: string, commit: string): Promise<void> {
  const run = async (): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      try {
        // No hooks: a post-checkout hook of the user's must not run for our throwaway checkout.
        await runGit(
          [
            '-c',
            'core.hooksPath=/dev/null',
            'worktree',
            'add',
            '--detach',
            '--quiet',
            checkout,
            commit,
          ],
          { cwd, env: { GIT_DIR: gitdir } },
        );
        return;
      } catch (e) {
        const raced = /failed to read .*worktrees\//.test((e as Error).message);
        if (!raced || attempt >= 4) throw e;
        await fsp.rm(checkout, { recursive: true, force: true });
        await new Promise((r) => setTimeout(r, 20 * (attempt + 1)));
      }
    }
  };
  return addQueues.run(gitdir, run);
}
