import { lstatSync, mkdirSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../local/paths.js';

// Node's on-disk compile cache (Node ≥ 22.1): the V8 code of every module zz loads is kept
// between runs, so a `zz` started for the hundredth time today compiles nothing. Node 20 has no
// such cache: this does nothing there.
// Where: `$XDG_CACHE_HOME/zz/node-compile-cache` (else ~/.cache/zz/…), the user's own. Only
// when that cannot be made, a directory of our own under the OS temp directory, named for the
// user. Hazard: Node runs what it finds in the cache, checked only against the source's hash,
// so a cache another user can write to is code they run as us. The temp directory is shared, so
// ours there is used only when it is a real directory (no symbolic link), owned by us and
// closed to everyone else; anything else there and there is no cache.
// Never an error: a cache that cannot be written costs the time it would have saved, nothing
// more. NODE_COMPILE_CACHE chooses another directory, and NODE_DISABLE_COMPILE_CACHE=1 turns it
// off (both Node's own).

type NodeModule = {
  enableCompileCache?: (dir: string) => { status: number };
  constants?: { compileCacheStatus?: { FAILED: number } };
};

/** Turns the compile cache on where Node has one; quietly does nothing when it cannot. */
export function startCompileCache(env: NodeJS.ProcessEnv): void {
  // Typed by hand: @types/node 20 does not know it. Absent on Node 20 and 22.0.
  const m = module as unknown as NodeModule;
  const enable = m.enableCompileCache;
  if (typeof enable !== 'function') return;
  const failed = m.constants?.compileCacheStatus?.FAILED ?? 0;
  try {
    if (enable(join(cacheDir(env), 'node-compile-cache')).status !== failed) return;
  } catch {
    // A home that cannot be found (os.homedir throws): the temp directory below.
  }
  try {
    const uid = process.getuid?.();
    if (uid === undefined) return;
    const dir = join(tmpdir(), `zz-node-compile-cache-${uid}`);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) return;
    enable(dir);
  } catch {
    // No cache, then.
  }
}
