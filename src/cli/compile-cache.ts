import { lstatSync, mkdirSync } from 'node:fs';
import module from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cacheDir } from '../local/paths.js';

// Node's on-disk compile cache (Node ≥ 22.1): the V8 code of every module zz loads is kept
// between runs, so a `zz` started for the hundredth time today compiles nothing. Node 20 has no
// such cache: this does nothing there.
// Where: `$XDG_CACHE_HOME/zz/node-compile-cache` (else ~/.cache/zz/…), the user's own. Only
// when that cannot be used, a directory of our own under the OS temp directory, named for the
// user. Hazard: Node runs what it finds in the cache, checked only against the source's hash,
// so a cache another user can write to is code they run as us. Either directory is used only
// when it is a real directory (no symbolic link) owned by us that no one else can write to
// (the temp one: closed to everyone else); anything else there and it is passed over. The
// user's own is checked too: `sudo -E zz` runs as root with the user's HOME and XDG_CACHE_HOME,
// and root must not load code the user can write.
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
  for (const dir of compileCacheDirs(env)) {
    try {
      if (enable(dir).status !== failed) return;
    } catch {
      // The next one, if any.
    }
  }
}

/**
 * The directories the compile cache may use, best first, each made (0700) and checked only
 * when the one before it was refused: the user's cache dir, then ours in the temp directory.
 * `uid` and `tmp` are this process's; tests pass others.
 */
export function* compileCacheDirs(
  env: NodeJS.ProcessEnv,
  uid: number | undefined = process.getuid?.(),
  tmp: string = tmpdir(),
): Generator<string> {
  let own: string | null = null;
  try {
    own = join(cacheDir(env), 'node-compile-cache');
  } catch {
    // A home that cannot be found (os.homedir throws): the temp directory below.
  }
  // No uid (Windows): no owners or modes to check; the user's directory as before.
  if (uid === undefined) {
    if (own !== null) yield own;
    return;
  }
  if (own !== null && ours(own, uid, 0o022)) yield own;
  const shared = join(tmp, `zz-node-compile-cache-${uid}`);
  if (ours(shared, uid, 0o077)) yield shared;
}

/** `dir`, made if missing, is a directory (not a link) owned by `uid` with none of `deny` set. */
function ours(dir: string, uid: number, deny: number): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === uid && (st.mode & deny) === 0;
  } catch {
    return false;
  }
}
