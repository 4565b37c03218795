#!/usr/bin/env node
// The zz binary: wires process IO and signals to run(), the testable command table.
// Everything else it loads is loaded when a command needs it (dynamic imports below and in the
// commands' handlers), after the compile cache is on: what each command costs to start is
// measured by bench/cli-startup.ts, and test/e2e/cli-startup.test.ts keeps commands that need
// no daemon, search or models from loading them.
import { startCompileCache } from './compile-cache.js';

startCompileCache(process.env);

// A signal ends a command at once, as if no handler were installed, unless the command asked
// to stop gracefully by reading io.stopSignal (serve, mcp, work, --follow): then the first
// signal resolves it and a second ends the process anyway. Before, every command swallowed the
// first signal, so Ctrl-C did nothing to a `zz ladder build` and `timeout 60 zz lane list` hung
// forever on a stopped daemon.
// "As if no handler were installed" means dying of the signal (dieOf), not exiting with 130 or
// 143: a shell running `for r in ...; do zz sync; done` or `while :; do zz work --once; done`
// stops its loop on Ctrl-C only when the child died of SIGINT (bash's "wait and cooperative
// exit"); a child that exits, with any status, is taken to have handled the signal, and the
// loop went on. The one clean stop is a graceful command's orderly SIGTERM (a service manager's
// stop): it exits with the command's status, 0, which systemd and docker read as success.
let graceful = false;
let stopping = false;
// Said on stderr when a signal ends a command at once (io.setInterruptNote): exit 130 alone
// left whoever pressed Ctrl-C during a `zz sync` guessing what state it left.
let interruptNote = '';
let requestStop = () => {};
// The signal that asked a graceful command to stop, if one did: its exit status is given should
// the output it left be cut (below).
let stoppedBy: NodeJS.Signals | null = null;
const signalStatus = (signal: NodeJS.Signals): number =>
  signal === 'SIGINT' ? 130 : signal === 'SIGHUP' ? 129 : 143;
/** Ends the process by `signal` itself (see the top of this file). */
const dieOf = (signal: NodeJS.Signals): void => {
  // 'exit' listeners run on process.exit, not on death by a signal, and one matters: a model's
  // processes are ended there (models/exec.ts). Run them, once, first.
  process.exitCode = signalStatus(signal);
  process.emit('exit', process.exitCode);
  process.removeAllListeners('exit');
  // With no listener left Node restores the default action, which ends the process; the timer
  // is there only should anything keep that from happening.
  process.removeAllListeners(signal);
  process.kill(process.pid, signal);
  setTimeout(() => process.exit(signalStatus(signal)), 1000);
};
const stop = new Promise<void>((resolve) => {
  requestStop = () => {
    stopping = true;
    resolve();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping || !graceful) {
      // stderr is synchronous on Linux (files, pipes and terminals), so the note is out
      // before the signal ends the process.
      if (interruptNote && !closed.stderr) process.stderr.write(interruptNote);
      dieOf(signal);
      return;
    }
    stoppedBy = signal;
    requestStop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A hang-up (the terminal closed, the ssh session dropped) stops zz as Ctrl-C does: a
  // `zz work` left to die by it kept its Ask claimed until the lease ran out. (Node resets an
  // inherited ignored SIGHUP to the default at start-up, so `nohup zz …` never outlived a
  // hang-up either way; run a daemon from a service manager, or with `setsid`.)
  process.on('SIGHUP', onSignal);
});

// A reader that goes away (`zz work | head -1`, a dead `--json` consumer) is a stop, as
// SIGPIPE is to other programs: the next write failed with EPIPE as an unhandled 'error' (a
// Node stack, exit 1), and `zz work` died holding its Ask until the lease ran out. A graceful
// command stops as on Ctrl-C (the worker releases what it holds), writing nothing more; any
// other ends at once with 141 (128 + SIGPIPE), as a shell reports it. A closed stderr only
// silences it: it carries diagnostics, not the output, and `zz mcp` (stdout is the protocol)
// or `zz serve` must not stop because a client never read their log.
const closed = { stdout: false, stderr: false };
for (const name of ['stdout', 'stderr'] as const) {
  process[name].on('error', (e: NodeJS.ErrnoException) => {
    // EIO: a terminal that hung up (its reader is gone as surely as a pipe's).
    if (e.code !== 'EPIPE' && e.code !== 'EIO') throw e;
    closed[name] = true;
    if (name === 'stderr') return;
    if (!graceful) process.exit(141);
    requestStop();
  });
}

/**
 * How long a command stopped by a signal (or a closed stdout) waits for its output to drain
 * before exiting. A reader that is reading takes a pipe's 64 KiB in milliseconds, so this only
 * ever runs out on one that is not; 5 s stays under the grace a supervisor gives before its
 * SIGKILL (docker stop: 10 s), so zz exits itself with its status and its stderr note rather
 * than being killed mid-write.
 */
const STOP_FLUSH_MS = 5000;
// Set by io.dropStdout: the command has said why (zz mcp), and stdout is not waited for.
let stdoutDropped = false;

const io = {
  stdout: (s: string) => {
    if (!closed.stdout) process.stdout.write(s);
  },
  stdoutBytes: (b: Uint8Array) => {
    if (!closed.stdout) process.stdout.write(b);
  },
  drain: () =>
    closed.stdout || !process.stdout.writableNeedDrain
      ? Promise.resolve()
      : new Promise<void>((resolve) => {
          // 'close' or 'error' too: a reader gone (EPIPE) never drains.
          const done = () => {
            for (const ev of ['drain', 'close', 'error'] as const) process.stdout.off(ev, done);
            resolve();
          };
          for (const ev of ['drain', 'close', 'error'] as const) process.stdout.once(ev, done);
        }),
  stderr: (s: string) => {
    if (!closed.stderr) process.stderr.write(s);
  },
  env: process.env,
  cwd: process.cwd(),
  isTTY: !!process.stdout.isTTY,
  stderrIsTTY: !!process.stderr.isTTY,
  stdinIsTTY: !!process.stdin.isTTY,
  setInterruptNote: (line: string) => {
    interruptNote = line.endsWith('\n') ? line : `${line}\n`;
  },
  dropStdout: () => {
    stdoutDropped = true;
  },
  get stopSignal() {
    graceful = true;
    return stop;
  },
};
// `zz --version` alone answers from package.json, as yargs would word it. Tool commands go
// straight to a running daemon when they can; everything else (and any doubt) takes the full
// command table, loaded only then.
const argv = process.argv.slice(2);
const fast =
  argv.length === 1 && argv[0] === '--version'
    ? (io.stdout(`${(await import('./version.js')).version()}\n`), 0)
    : await (await import('./fast-path.js')).tryFastPath(argv, io);
// The fast path may hand the full one another command line: a write whose answer was lost,
// with the arguments and idempotency key it was sent with (fast-path.ts).
const code =
  typeof fast === 'number' ? fast : await (await import('./run.js')).run(fast ?? argv, io);
process.exitCode = code;
// Background local writes (a token's last-use stamp) hold a lock file while they run: let them
// finish, or the next zz process waits for a lock this one left behind.
await (await import('../local/background.js')).settleBackground();
// Into a pipe, output past what the pipe holds (64 KiB) is still queued in this process, and
// process.exit drops it: `zz lane get --json | jq` got a cut answer and exit 0. Wait for both
// streams to hand everything over.
// Once a signal has asked to stop (before this wait or during it) the wait is bounded
// (STOP_FLUSH_MS): a `zz mcp` whose client never reads stdout waited forever on the first
// SIGTERM, with answers nobody would take. What is still queued then is dropped, and the exit
// status is the signal's: the stop was not clean.
const { flushed } = await import('../local/flushed.js');
const drained = (out: NodeJS.WriteStream): Promise<void> =>
  out === process.stdout && stdoutDropped
    ? Promise.resolve()
    : Promise.race([flushed(out), stop.then(() => flushed(out, STOP_FLUSH_MS))]);
await Promise.all([drained(process.stdout), drained(process.stderr)]);
const cut = stoppedBy !== null && !process.stdout.destroyed && process.stdout.writableLength > 0;
if (cut && !closed.stderr && !process.stderr.writableNeedDrain) {
  process.stderr.write(
    `zz: stdout was not read for ${STOP_FLUSH_MS / 1000} s after ${stoppedBy}; ${process.stdout.writableLength} bytes of output were dropped\n`,
  );
}
// Long-running commands (serve, mcp) return only when they are done, so a finished command
// exits here: idle git readers and signal listeners must not keep it alive.
// A stop by Ctrl-C or a hang-up, or one whose output was cut, ends by the signal once the command has
// cleaned up (the worker released its Ask); an orderly SIGTERM exits with the command's status.
setImmediate(() => {
  if (stoppedBy === 'SIGINT' || stoppedBy === 'SIGHUP' || cut) dieOf(stoppedBy!);
  else process.exit(code);
});
