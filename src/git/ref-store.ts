import { promises as fsp } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { ZzError } from '../errors.js';
import { assertRefName, OID_RE } from './ref-names.js';

// Refs move only by compare-and-swap under git's own lock protocol (lockfile.c):
// create `<ref>.lock` exclusively, check the current value (loose file, else packed-refs),
// write the new value, fsync, rename over the ref. Native git honours the same lock, so
// `git fetch`, `git update-ref`, `git pack-refs` and `git gc` can run beside us.
//
// Stale locks: git never removes a lock it did not take, and neither do we unless we can
// prove it is ours. Next to each lock we hold we write an owner marker (pid, host, inode of
// the lock) under <gitdir>/zz/locks/. A lock whose marker names a dead process on this host
// and whose inode matches is a crash leftover and is removed; any other lock is treated as
// live and, past the timeout, reported with its path so a person can decide.

export class RefCasError extends ZzError {
  constructor(
    readonly ref: string,
    readonly expected: string | null,
    readonly actual: string | null,
  ) {
    super(
      'revision_mismatch',
      `${ref} is at ${actual ?? '(absent)'}, expected ${expected ?? '(absent)'}`,
      {
        current_revision: actual,
      },
    );
  }
}

interface PackedCache {
  key: string;
  refs: Map<string, string>;
}

export interface RefStoreOptions {
  lockTimeoutMs?: number;
  fsync?: boolean;
}

export class RefStore {
  private packed: PackedCache | null = null;
  private readonly lockTimeoutMs: number;
  private readonly fsync: boolean;
  private readonly host = hostname();

  constructor(
    readonly gitdir: string,
    opts: RefStoreOptions = {},
  ) {
    this.lockTimeoutMs = opts.lockTimeoutMs ?? 10_000;
    this.fsync = opts.fsync ?? true;
  }

  private refPath(ref: string): string {
    return join(this.gitdir, ...ref.split('/'));
  }

  private async packedRefs(): Promise<Map<string, string>> {
    const file = join(this.gitdir, 'packed-refs');
    let st;
    try {
      st = await fsp.stat(file, { bigint: true });
    } catch {
      this.packed = null;
      return new Map();
    }
    const key = `${st.ino}:${st.size}:${st.mtimeNs}`;
    if (this.packed?.key === key) return this.packed.refs;
    let text: string;
    try {
      text = await fsp.readFile(file, 'utf8');
    } catch {
      return new Map();
    }
    const refs = new Map<string, string>();
    for (const line of text.split('\n')) {
      if (line.length < 42 || line[0] === '#' || line[0] === '^') continue;
      const oid = line.slice(0, 40);
      if (OID_RE.test(oid)) refs.set(line.slice(41), oid);
    }
    this.packed = { key, refs };
    return refs;
  }

  /** Current value of a ref: the loose file, else packed-refs; null when absent. */
  async read(ref: string): Promise<string | null> {
    assertRefName(ref);
    try {
      const v = (await fsp.readFile(this.refPath(ref), 'utf8')).trim();
      if (OID_RE.test(v)) return v;
      if (v.startsWith('ref: ')) {
        throw new ZzError('invalid_argument', `${ref} is a symbolic ref; zz refs must be direct`);
      }
      // Git renames complete files into place, so a malformed loose ref is damage, not a race.
      throw new ZzError('git_failed', `${ref} holds an unreadable value`);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw e;
    }
    return (await this.packedRefs()).get(ref) ?? null;
  }

  /** Every ref under a prefix (e.g. `refs/zz/lanes/`), loose and packed. */
  async list(prefix: string): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    for (const [r, oid] of await this.packedRefs()) if (r.startsWith(prefix)) out.set(r, oid);
    const walk = async (dir: string, rel: string): Promise<void> => {
      let entries;
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const name = rel + e.name;
        if (e.isDirectory()) await walk(join(dir, e.name), name + '/');
        else if (e.isFile() && !e.name.endsWith('.lock')) {
          try {
            const v = (await fsp.readFile(join(dir, e.name), 'utf8')).trim();
            if (OID_RE.test(v)) out.set(name, v);
          } catch {
            /* raced with a delete or pack-refs prune: packed value stands */
          }
        }
      }
    };
    const base = prefix.endsWith('/') ? prefix.slice(0, -1) : dirname(prefix);
    await walk(this.refPath(base), base + '/');
    return out;
  }

  /**
   * Moves `ref` from `expected` (null = must not exist) to `next`. Throws RefCasError when the
   * ref holds anything else, ref_locked when another process holds the lock past the timeout.
   */
  async cas(ref: string, expected: string | null, next: string): Promise<void> {
    assertRefName(ref);
    if (!OID_RE.test(next)) throw new ZzError('internal', `refusing to write non-oid to ${ref}`);
    const path = this.refPath(ref);
    const lock = path + '.lock';
    await fsp.mkdir(dirname(path), { recursive: true });
    const fh = await this.acquire(ref, lock);
    let renamed = false;
    try {
      const current = await this.read(ref);
      if (current !== expected) throw new RefCasError(ref, expected, current);
      await fh.writeFile(next + '\n');
      if (this.fsync) await fh.sync();
      await fh.close();
      // The marker goes before the lock: once the lock is renamed another process may take
      // the ref and write its own marker, which we must not delete.
      await fsp.rm(this.markerPath(ref), { force: true });
      await fsp.rename(lock, path);
      renamed = true;
    } finally {
      if (!renamed) {
        await fh.close().catch(() => {});
        await fsp.rm(this.markerPath(ref), { force: true });
        await fsp.rm(lock, { force: true });
      }
    }
  }

  private markerPath(ref: string): string {
    return join(this.gitdir, 'zz', 'locks', encodeURIComponent(ref));
  }

  private async acquire(ref: string, lock: string): Promise<fsp.FileHandle> {
    const deadline = Date.now() + this.lockTimeoutMs;
    let delay = 1;
    for (;;) {
      try {
        const fh = await fsp.open(lock, 'wx', 0o644);
        await this.writeMarker(ref, fh).catch(() => {});
        return fh;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      }
      if (await this.removeIfOurStaleLock(ref, lock)) continue;
      if (Date.now() > deadline) {
        const age = await fsp
          .stat(lock)
          .then((s) => Math.round((Date.now() - s.mtimeMs) / 1000))
          .catch(() => 0);
        throw new ZzError(
          'ref_locked',
          `${ref} is locked by another process (${lock} exists, ${age}s old); if no git or zz process is running, remove that file`,
          { lock },
        );
      }
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 50);
    }
  }

  private async writeMarker(ref: string, fh: fsp.FileHandle): Promise<void> {
    const st = await fh.stat({ bigint: true });
    const marker = this.markerPath(ref);
    await fsp.mkdir(dirname(marker), { recursive: true });
    await fsp.writeFile(
      marker,
      JSON.stringify({
        pid: process.pid,
        host: this.host,
        ino: String(st.ino),
        dev: String(st.dev),
      }),
    );
  }

  private async removeIfOurStaleLock(ref: string, lock: string): Promise<boolean> {
    let marker: { pid: number; host: string; ino: string; dev: string };
    try {
      marker = JSON.parse(await fsp.readFile(this.markerPath(ref), 'utf8'));
    } catch {
      return false;
    }
    if (marker.host !== this.host || marker.pid === process.pid || isAlive(marker.pid))
      return false;
    try {
      const st = await fsp.stat(lock, { bigint: true });
      if (String(st.ino) !== marker.ino || String(st.dev) !== marker.dev) return false;
      await fsp.unlink(lock);
      await fsp.rm(this.markerPath(ref), { force: true });
      return true;
    } catch {
      return false;
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
