import { Worker } from 'node:worker_threads';
import { killGroup, trackGroup, untrackGroup } from './git-groups.js';

// Processes started from a worker thread, so that the daemon's event loop does not wait for
// them to start. Node's spawn() returns only once the child has exec'd: libuv forks, then
// blocks the calling thread until the child's exec succeeds or fails. On this project's 2-core
// VM that was 6-15 ms quiet and 15-120 ms under load (the child waits for a core before it can
// exec), every request in flight waiting behind it: in profiles of the 64-client load and the
// 32-writer storm (bench/load.ts, ZZ_LOAD_PROF) the longest stretches of the daemon's loop were
// the maintenance's spawns. From a worker, only the worker's thread waits.
//
// The worker is code evaluated from the string below (plain JavaScript, no imports of zz's
// modules): a file of its own would be TypeScript under tsx and vitest, which a worker cannot
// load without a loader of its own (~1 s and ~30 MiB each start). It runs one child per job,
// collects its output and answers what runGit needs to judge it (native-git.ts settles it
// exactly as for a child spawned on the loop). Hazard: that collection (the stdout cap, the
// stderr kept, which of 'error' and 'close' decides) is spawnOnLoop's in native-git.ts again;
// a change to one is a change to both (test/git/spawn-thread.test.ts runs each case both ways).
// Started on first use, ~10 MiB while it lives, ended after IDLE_MS without a job; it keeps the
// process alive only while a job runs.

/** What a child did, as runGit judges it. */
export interface Collected {
  stdout: Buffer;
  stderr: string;
  code: number | null;
  signal: string | null;
  /** stdout passed maxBuffer: the child was killed. */
  overflow: boolean;
  /** timeoutMs passed: the child's process group was killed. */
  timedOut: boolean;
}

export interface ThreadSpawn {
  file: string;
  args: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  timeoutMs?: number;
  input?: string | Buffer;
  maxBuffer: number;
}

/** Ended after this long without a job (a roll-up comes every second or two in a storm). */
const IDLE_MS = 10_000;
/**
 * After git exited, how long its pipes may stay open before the run ends anyway: a helper it
 * started and left behind (still in its group) can hold them for ever. The group is killed and
 * the pipes destroyed then; what was read so far is the output. Both ways of spawning use it.
 */
export const EXIT_GRACE_MS = 2_000;
/** stderr kept, as runGit keeps it. */
const STDERR_MAX = 64 * 1024;

const SOURCE = `
const { parentPort } = require('node:worker_threads');
const { spawn } = require('node:child_process');
parentPort.on('message', (job) => {
  let child;
  try {
    // Its own process group, killed whole on a timeout (git-groups.ts says why).
    child = spawn(job.file, job.args, {
      cwd: job.cwd, env: job.env, stdio: ['pipe', 'pipe', 'pipe'], detached: true,
    });
  } catch (e) {
    parentPort.postMessage({ id: job.id, error: String(e && e.message) });
    return;
  }
  const pid = child.pid;
  if (pid !== undefined) parentPort.postMessage({ id: job.id, pid });
  const kill = () => { try { process.kill(-pid, 'SIGKILL'); } catch {} };
  const out = [];
  let outLen = 0, overflow = false, timedOut = false, err = '', answered = false, grace;
  const timer = job.timeoutMs === undefined ? undefined
    : setTimeout(() => { timedOut = true; kill(); }, job.timeoutMs);
  const answer = (m) => {
    if (answered) return;
    answered = true; clearTimeout(timer); clearTimeout(grace); parentPort.postMessage(m);
  };
  child.stdout.on('data', (b) => {
    outLen += b.length;
    if (outLen > job.maxBuffer) { overflow = true; kill(); return; }
    out.push(b);
  });
  child.stderr.on('data', (b) => { if (err.length < ${STDERR_MAX}) err += b.toString('utf8'); });
  child.stdin.on('error', () => {});
  const done = (code, signal) =>
    // Copied, not transferred: a small Buffer's memory is a slice of Node's shared pool.
    answer({ id: job.id, stdout: Buffer.concat(out), stderr: err, code, signal, overflow, timedOut });
  // The first of the two decides, as for a child spawned on the loop (native-git.ts).
  child.on('error', (e) => answer({ id: job.id, error: String(e && e.message) }));
  // Exited, but a helper left in its group may hold the pipes: the grace of native-git.ts.
  child.on('exit', (code, signal) => {
    clearTimeout(timer);
    grace = setTimeout(() => {
      kill(); child.stdout.destroy(); child.stderr.destroy(); done(code, signal);
    }, ${EXIT_GRACE_MS});
  });
  child.on('close', done);
  if (job.input !== undefined) child.stdin.end(job.input); else child.stdin.end();
});
`;

interface Job {
  /** The child's pid (its process group's), once the thread has said it. */
  pid?: number;
  resolve: (c: Collected) => void;
  reject: (e: Error) => void;
}

let worker: Worker | null = null;
const jobs = new Map<number, Job>();
let nextId = 1;
let idleTimer: NodeJS.Timeout | null = null;

function failAll(w: Worker, e: Error): void {
  if (worker !== w) return;
  worker = null;
  for (const job of jobs.values()) {
    // Its children are nobody's now: killed, not left to run on.
    if (job.pid !== undefined) {
      killGroup(job.pid);
      untrackGroup(job.pid);
    }
    job.reject(e);
  }
  jobs.clear();
}

function start(): Worker {
  // execArgv: [] — a worker inherits the process's flags, and under tsx (tests, benches) that is
  // `--import tsx`: the loader this plain-JavaScript worker exists to avoid (found in review).
  const w = new Worker(SOURCE, { eval: true, execArgv: [] });
  w.on('message', (m: { id: number; error?: string; pid?: number } & Partial<Collected>) => {
    const job = jobs.get(m.id);
    if (!job) return;
    if (m.pid !== undefined && m.stdout === undefined && m.error === undefined) {
      job.pid = m.pid;
      trackGroup(m.pid);
      return;
    }
    jobs.delete(m.id);
    if (job.pid !== undefined) untrackGroup(job.pid);
    if (jobs.size === 0) idle(w);
    if (m.error !== undefined) job.reject(new Error(m.error));
    else {
      const out = m.stdout as unknown as Uint8Array;
      job.resolve({
        stdout: Buffer.from(out.buffer, out.byteOffset, out.byteLength),
        stderr: m.stderr ?? '',
        code: m.code ?? null,
        signal: m.signal ?? null,
        overflow: m.overflow === true,
        timedOut: m.timedOut === true,
      });
    }
  });
  w.on('error', (e) => failAll(w, e));
  w.on('exit', (code) => failAll(w, new Error(`the spawning thread exited (${code})`)));
  return w;
}

/** No job left: the worker no longer holds the process open, and ends if none comes. */
function idle(w: Worker): void {
  w.unref();
  idleTimer = setTimeout(() => {
    idleTimer = null;
    if (worker === w && jobs.size === 0) {
      worker = null;
      void w.terminate();
    }
  }, IDLE_MS);
  idleTimer.unref();
}

/**
 * Runs `file` with `args` from the worker thread and collects what it did. Rejects when the
 * child could not be started (ENOENT, EACCES) or the thread failed.
 */
export function spawnOffLoop(s: ThreadSpawn): Promise<Collected> {
  if (idleTimer) {
    clearTimeout(idleTimer);
    idleTimer = null;
  }
  let w: Worker;
  try {
    w = worker ??= start();
  } catch (e) {
    // No thread to be had (resource limits): a failed run, as a child that cannot start is.
    return Promise.reject(e instanceof Error ? e : new Error(String(e)));
  }
  w.ref();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    jobs.set(id, { resolve, reject });
    w.postMessage({
      id,
      file: s.file,
      args: [...s.args],
      cwd: s.cwd,
      env: s.env,
      timeoutMs: s.timeoutMs,
      input: s.input,
      maxBuffer: s.maxBuffer,
    });
  });
}
