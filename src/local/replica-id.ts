import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-write.js';

// This clone's replica id: 16 hex in `<git common dir>/zz/replica`, made once and kept. It
// prefixes every op id and fills each op's `replica` (the merge order's tie-break), so it must
// not change between processes: two daemons (or a CLI and a daemon) starting together agree on
// it because the file is published with link(), which fails when another process got there
// first (rename would silently replace theirs), and everyone then reads what won.

const REPLICA = /^[0-9a-f]{16}$/;

export function replicaPath(gitdir: string): string {
  return join(gitdir, 'zz', 'replica');
}

async function readReplica(file: string): Promise<string | null> {
  try {
    const s = (await fsp.readFile(file, 'utf8')).trim();
    return REPLICA.test(s) ? s : null;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
}

/** The clone's replica id, created on first use. */
export async function replicaId(gitdir: string): Promise<string> {
  const file = replicaPath(gitdir);
  const known = await readReplica(file);
  if (known !== null) return known;
  const candidate = `${file}.${randomBytes(6).toString('hex')}.new`;
  await writeFileAtomic(candidate, `${randomBytes(8).toString('hex')}\n`, {
    mkdir: true,
    mode: 0o644,
  });
  try {
    await fsp.link(candidate, file);
  } catch (e) {
    // EEXIST: another process published first (or a bad file is there: it is not replaced,
    // a person should look at it); either way what is on disk decides.
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await fsp.rm(candidate, { force: true });
  }
  const won = await readReplica(file);
  if (won === null) throw new Error(`${file} does not hold a replica id (16 hex)`);
  return won;
}
