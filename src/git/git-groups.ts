// The process groups of git runs in flight. Every git child leads its own process group
// (spawn `detached`), so that a timeout, an abort or this process's exit kills git AND what it
// started: `git ls-remote http://…` runs `git remote-http`, and a signal to git alone left that
// helper orphaned (ppid 1) holding the run's pipes open, so the run never ended — `zz sync`
// against a remote that accepts and never answers hung for ever, and with it the daemon's
// auto-sync and its shutdown (hostile review H3). Runs spawned from the worker thread
// (spawn-thread.ts) report their pid here too.

const live = new Set<number>();

/** SIGKILLs the process group `pid` leads; quiet when it is gone. */
export function killGroup(pid: number): void {
  try {
    process.kill(process.platform === 'win32' ? pid : -pid, 'SIGKILL');
  } catch {
    /* gone already */
  }
}

export function trackGroup(pid: number): void {
  live.add(pid);
}

export function untrackGroup(pid: number): void {
  live.delete(pid);
}

/**
 * Kills every git run of this process still in flight (each one then fails as killed): for a
 * daemon shutting down that will not wait for a stuck sync. Returns how many there were.
 */
export function killRunningGit(): number {
  const n = live.size;
  for (const pid of live) killGroup(pid);
  return n;
}

// A git run outlives this process otherwise: it leads its own group, so neither the terminal's
// Ctrl-C nor our death reaches it. 'exit' covers process.exit and a normal end; a death by a
// signal that skips 'exit' leaves a run to end by itself (its stdout pipe is gone: git dies of
// SIGPIPE at its next write).
process.on('exit', () => {
  killRunningGit();
});
