import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// Finding and killing everything a sandboxed command started (hardening 11.9). A process group
// is not enough: `setsid sleep 171 &` leaves the group and the session, and a double fork
// leaves the parent chain too. So a process counts as the command's when any of these holds:
// - its environment carries the run's marker variable (inherited by every descendant that did
//   not scrub its environment; /proc/<pid>/environ is the environment it was started with);
// - its working directory is inside the run's private directory (the checkout, HOME, TMPDIR);
// - it holds the run's stdout or stderr (inherited by a double-forked daemon that scrubbed its
//   environment and left the directory, unless it also redirected them);
// - it is in the command's process group or session, or descends from the command or from a
//   process found above (parent links in /proc/<pid>/stat).
// A process that clears its environment, leaves the directory, redirects its output and
// double-forks after setsid would still escape; only a PID namespace catches that, so the run
// uses one where the host allows it (sandbox-ns.ts) and this sweep is the fallback (it still
// runs there too, harmlessly). A sandbox that runs as the user is no boundary anyway: such a
// command could as well use cron. Without /proc (macOS) only the group is killed.

export interface SweepMark {
  /** "NAME=value" as it appears in the environment block. */
  env: string;
  /** The run's private directory (realpath). */
  dir: string;
  /** The command's pid: the leader of its own process group and session (spawn `detached`). */
  root: number;
  /** What the command's stdout and stderr link to in /proc (`socket:[…]`, `pipe:[…]`). */
  outputs?: readonly string[];
}

/** What fds 1 and 2 of `pid` link to (read right after spawn: the run's own output). */
export function outputLinks(pid: number): string[] {
  const links: string[] = [];
  for (const fd of [1, 2]) {
    try {
      const l = readlinkSync(`/proc/${pid}/fd/${fd}`);
      if (/^(?:socket|pipe):\[\d+\]$/.test(l)) links.push(l);
    } catch {
      /* no /proc, or already gone */
    }
  }
  return links;
}

function holdsOutput(pid: number, outputs: readonly string[]): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // another user's process, or gone
  }
  for (const fd of fds) {
    try {
      if (outputs.includes(readlinkSync(`/proc/${pid}/fd/${fd}`))) return true;
    } catch {
      /* closed meanwhile */
    }
  }
  return false;
}

interface ProcInfo {
  pid: number;
  ppid: number;
  pgrp: number;
  session: number;
}

function procInfo(pid: number): ProcInfo | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // "pid (comm) state ppid pgrp session ..."; comm may hold spaces and parentheses.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  if (f[0] === 'Z' || f[0] === 'X') return null; // already dead, waiting to be reaped
  return { pid, ppid: Number(f[1]), pgrp: Number(f[2]), session: Number(f[3]) };
}

function carriesMark(pid: number, mark: SweepMark, env: Buffer): boolean {
  try {
    const block = readFileSync(`/proc/${pid}/environ`);
    if (block.indexOf(env) === 0 || block.includes(Buffer.concat([Buffer.from([0]), env]))) {
      return true;
    }
  } catch {
    /* another user's process, or gone */
  }
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`);
    if (cwd === mark.dir || cwd.startsWith(mark.dir + '/')) return true;
  } catch {
    /* gone, or not ours to see */
  }
  return mark.outputs !== undefined && mark.outputs.length > 0 && holdsOutput(pid, mark.outputs);
}

let procAvailable: boolean | null = null;

/** The live processes that belong to the run (never this process itself). */
export function markedProcesses(mark: SweepMark): number[] {
  return markedInfos(mark).map((p) => p.pid);
}

function markedInfos(mark: SweepMark): ProcInfo[] {
  if (procAvailable === null) {
    try {
      readdirSync('/proc/self');
      procAvailable = true;
    } catch {
      procAvailable = false;
    }
  }
  if (!procAvailable) return [];
  const env = Buffer.from(mark.env + '\0');
  const all: ProcInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid || pid === 1) continue;
    const info = procInfo(pid);
    if (info) all.push(info);
  }
  const found = new Set<number>();
  for (const p of all) {
    if (p.pgrp === mark.root || p.session === mark.root || carriesMark(p.pid, mark, env)) {
      found.add(p.pid);
    }
  }
  // Descendants of anything found (an env-scrubbed child of a marked process included). Not
  // of the root's pid as such: once the root has exited and been reaped, its pid may be reused.
  const children = new Map<number, number[]>();
  for (const p of all) {
    const list = children.get(p.ppid);
    if (list) list.push(p.pid);
    else children.set(p.ppid, [p.pid]);
  }
  const queue = [...found];
  while (queue.length) {
    for (const c of children.get(queue.pop()!) ?? []) {
      if (!found.has(c) && c !== process.pid) {
        found.add(c);
        queue.push(c);
      }
    }
  }
  return all.filter((p) => found.has(p.pid));
}

function signalAll(mark: SweepMark, pids: number[], signal: NodeJS.Signals): void {
  try {
    process.kill(-mark.root, signal);
  } catch {
    /* ESRCH: the group is gone */
  }
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      /* gone already */
    }
  }
}

/** Sends `signal` to the run's group and every process of the run (once). */
export function signalRun(mark: SweepMark, signal: NodeJS.Signals): void {
  signalAll(mark, markedProcesses(mark), signal);
}

/**
 * Sends `signal` to every process of the run but its root (unshare) and the root's own
 * children (the PID namespace's init), one by one: the group is not signalled, as it holds
 * those two. Everything inside the namespace is a descendant of the init, so it is reached.
 * The init, spared, sees its command die and reports how (sandbox-ns.ts).
 */
export function signalRunButInit(mark: SweepMark, signal: NodeJS.Signals): void {
  let infos: ProcInfo[];
  try {
    infos = markedInfos(mark);
  } catch {
    return; // /proc unreadable for now (EMFILE): the run's final SIGKILL is already armed
  }
  for (const p of infos) {
    if (p.pid === mark.root || p.ppid === mark.root) continue;
    try {
      process.kill(p.pid, signal);
    } catch {
      /* gone already */
    }
  }
}

/**
 * SIGKILLs every process of the run until none is left alive (or `boundMs` passes: a process
 * stuck in uninterruptible sleep cannot be hurried). Returns how many were still found on the
 * last look (0 when the run is gone).
 */
export async function sweepRun(mark: SweepMark, boundMs = 5_000): Promise<number> {
  const until = Date.now() + boundMs;
  for (let i = 0; ; i++) {
    const pids = markedProcesses(mark);
    signalAll(mark, pids, 'SIGKILL');
    if (pids.length === 0 || Date.now() > until) return pids.length;
    // A killed process leaves /proc (or turns zombie) within microseconds to milliseconds; a
    // process forking in a loop needs a few rounds.
    await new Promise((r) => setTimeout(r, Math.min(20, 1 + i * 2)));
  }
}
