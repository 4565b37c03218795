import type fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { isDeadHere, ownedName, parseOwnedName } from './blank-files.js';

// The owner tokens behind ref locks (see ref-store.ts, its header): a lock is a second
// name of a token in zz/locks/ named by ownedName() (host, pid, start time). A lock whose
// token names a process of this host that is gone is stale and may be removed; tokens of dead
// processes that prove nothing are swept. Split from ref-store.ts, which takes and moves locks.

async function tokens(
  lockDir: string,
): Promise<Array<{ path: string; pid: number; host: string; start: string | null }>> {
  let names: string[];
  try {
    names = await fsp.readdir(lockDir);
  } catch {
    return [];
  }
  const out: Array<{ path: string; pid: number; host: string; start: string | null }> = [];
  for (const name of names) {
    const owner = parseOwnedName(name);
    if (owner) out.push({ path: join(lockDir, name), ...owner });
  }
  return out;
}

/** Removes `lock` when its token names a dead process on this host. True: retry now. */
export async function removeIfStale(lockDir: string, lock: string): Promise<boolean> {
  let st;
  try {
    st = await fsp.stat(lock, { bigint: true });
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT'; // released meanwhile: retry now
  }
  if (st.nlink < 2n) return false; // no token links to it: not taken by us
  for (const t of await tokens(lockDir)) {
    let ts;
    try {
      ts = await fsp.stat(t.path, { bigint: true });
    } catch {
      continue;
    }
    if (ts.ino !== st.ino || ts.dev !== st.dev) continue;
    if (!isDeadHere(t)) return false;
    // Claim the dead owner's lock: of several recoverers only one wins this rename, and the
    // claimed token (now ours) still pins the inode while we remove the lock.
    const claimed = join(lockDir, ownedName());
    try {
      await fsp.rename(t.path, claimed);
    } catch {
      return true; // another recoverer won
    }
    try {
      const again = await fsp.stat(lock, { bigint: true }).catch(() => null);
      if (again && again.ino === st.ino && again.dev === st.dev) await fsp.unlink(lock);
    } finally {
      await fsp.rm(claimed, { force: true });
    }
    return true;
  }
  return false;
}

// Tokens left by processes killed before they linked, or after their lock became the ref,
// link to nothing that matters; those of dead processes are removed. A token still linked
// elsewhere (nlink > 1) may be the proof for a stale lock and stays, unless that other name
// is `refFile`, the ref this process is about to write: a writer killed between renaming
// its lock over the ref and unlinking its token leaves the token as a second name of the
// ref's file, which proves nothing (removing it frees nothing either: the ref names the
// inode). Left, it waited for a later process's sweep once the ref had moved on (the sweep
// runs once a process), and a crash test saw it outlive the next writer.
export async function sweepOrphanTokens(lockDir: string, refFile: string): Promise<void> {
  let ref: fs.Stats | undefined;
  for (const t of await tokens(lockDir)) {
    if (!isDeadHere(t)) continue;
    try {
      const st = await fsp.stat(t.path);
      if (st.nlink > 1) {
        ref ??= await fsp.stat(refFile).catch(() => undefined);
        if (!ref || ref.ino !== st.ino || ref.dev !== st.dev) continue;
      }
      await fsp.unlink(t.path);
    } catch {
      /* gone already */
    }
  }
}
