import { promises as fsp } from 'node:fs';
import { z } from 'zod';
import {
  daemonFile,
  processStamp,
  readJsonFile,
  repoLocalDir,
  sameProcess,
  writeJsonAtomic,
} from '../local/index.js';
import { fromSystemError, ZzError } from '../errors.js';

// <git dir>/zz/daemon.json: how a CLI in a checkout finds the daemon that serves it. Every
// repository a daemon serves gets one (not only the checkout it started in), naming that
// repository's key. The file is created exclusively before the port is bound, so two starts
// cannot both win; a file left by a dead process is taken over. Kept light: the CLI imports
// this on every call.
//
// Hazard: the CLI sends its bearer token to the file's URL, so the file must name the daemon
// that wrote it, not merely a live pid: after a SIGKILL the file stays, its pid may go to
// another process, and its port to another server (zz serve tries 7433-7442, so a second
// daemon, or anything, may listen there). The file records the daemon's process stamp (boot id
// and start time, local/file-lock.ts processStamp); a reader trusts it only while the pid
// still has that stamp. A process holds its listening socket for its life, so the daemon
// alive means its port is still its own: no request is needed to know it (the CLI's fast path
// makes none). It removes the file before it stops listening (daemon.ts close), so the port is
// never free while the file still names it. Where no stamp can be read (not Linux) or the
// file has none (an older zz), the daemon must answer /healthz with its pid before anything
// is sent; that check is weaker (a hostile local process could echo a pid it read from ps),
// which is why the stamp is preferred wherever it exists.

export interface DaemonInfo {
  pid: number;
  /** processStamp(pid) when written; absent where unreadable. */
  process_start?: string;
  url: string;
  started_at?: string;
  /** The key the daemon serves this repository under. */
  repo?: string;
}

// What a daemon writes; `url` is null while it is still starting (before the port is bound).
const RawInfoSchema = z.object({
  pid: z.number().int().positive(),
  process_start: z.string().max(200).optional(),
  url: z.string().nullable(),
  started_at: z.string().optional(),
  repo: z.string().optional(),
});
type RawInfo = z.output<typeof RawInfoSchema>;

/** The file's contents, or null when it is missing or not a daemon's (a stale or foreign file
 * is taken over, never trusted). */
async function readInfoFile(file: string): Promise<RawInfo | null> {
  return readJsonFile(file, RawInfoSchema).catch(() => null);
}

// A live pid is not proof: after a reboot or in a container the pid of a dead daemon can
// belong to another process. The daemon must also answer /healthz with that pid.
// Hazard: the bound is for a daemon that is there but slow, since a dead port is refused at
// once. 1.5 s was too short on a loaded machine (load average 16 on 2 cores): `zz login`
// concluded there was no daemon beside a live one. A hung daemon costs a CLI call this long
// before it works in-process instead.
const HEALTH_TIMEOUT_MS = 5_000;
async function answers(url: string, pid: number): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS) });
    const body = (await res.json()) as { pid?: unknown };
    return res.ok && body.pid === pid;
  } catch {
    return false;
  }
}

/** The running daemon of a repository (by its common git dir), or null. */
export async function readDaemonInfo(gitdir: string): Promise<DaemonInfo | null> {
  const info = await readInfoFile(daemonFile(gitdir));
  if (!info || info.url === null) return null;
  // Still asked when the stamp matches: a daemon that hangs is worked around in-process.
  if (sameProcess(info.pid, info.process_start) === 'other') return null;
  if (!(await answers(info.url, info.pid))) return null;
  return {
    pid: info.pid,
    ...(info.process_start ? { process_start: info.process_start } : {}),
    url: info.url,
    ...(info.started_at ? { started_at: info.started_at } : {}),
    ...(info.repo ? { repo: info.repo } : {}),
  };
}

/** A claimed daemon.json: filled in once the port is known, removed on close if still ours. */
export interface DaemonFileClaim {
  file: string;
  /** Writes the file, naming this process (selfStamp) as its daemon. */
  publish(info: Omit<DaemonInfo, 'pid' | 'process_start'>): Promise<void>;
  release(): Promise<void>;
}

/** Creates daemon.json exclusively (taking over one left by a dead process). */
export async function claimDaemonFile(gitdir: string, startedAt: string): Promise<DaemonFileClaim> {
  const file = daemonFile(gitdir);
  await fsp
    .mkdir(repoLocalDir(gitdir), { recursive: true, mode: 0o700 })
    .catch((e: unknown) => Promise.reject(fromSystemError(e, repoLocalDir(gitdir))));
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fh = await fsp.open(file, 'wx', 0o600);
      try {
        await fh.writeFile(
          JSON.stringify({ ...selfStamp(), url: null, started_at: startedAt }) + '\n',
        );
      } finally {
        await fh.close();
      }
      return claimOf(file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const text = await fsp.readFile(file, 'utf8').catch(() => null);
    if (text === null) continue;
    const info = await readInfoFile(file);
    const live =
      info !== null &&
      sameProcess(info.pid, info.process_start) !== 'other' &&
      // A file that names a URL must be answered there; one without is still starting.
      (info.url === null || (await answers(info.url, info.pid)));
    if (info && live) {
      throw new ZzError(
        'conflict',
        info.url
          ? `zz serve is already running for this repository at ${info.url} (pid ${info.pid})`
          : `zz serve is already starting for this repository (pid ${info.pid})`,
        { url: info.url, pid: info.pid, path: file },
      );
    }
    // Dead owner (or unreadable file): remove it, unless someone replaced it meanwhile.
    const again = await fsp.readFile(file, 'utf8').catch(() => null);
    if (again === text) await fsp.rm(file, { force: true });
  }
  throw new ZzError('conflict', `could not take ${file}; another zz serve is starting`);
}

/** The pid and, where readable, the process stamp a daemon.json names its writer by. */
function selfStamp(): { pid: number; process_start?: string } {
  const stamp = processStamp(process.pid);
  return { pid: process.pid, ...(stamp ? { process_start: stamp } : {}) };
}

function claimOf(file: string): DaemonFileClaim {
  let url: string | null = null;
  return {
    file,
    async publish(info) {
      await writeJsonAtomic(file, { ...selfStamp(), ...info });
      url = info.url;
    },
    async release() {
      const info = await readInfoFile(file);
      // Only our own file: after a takeover the name may belong to another daemon.
      if (info?.pid === process.pid && info.url === url) await fsp.rm(file, { force: true });
    },
  };
}
