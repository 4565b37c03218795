import { statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { findCheckoutAt, type Checkout } from './discover.js';
import { gitEnv, runGit } from './native-git.js';

// git config, read once: one `git config --list --show-origin -z` per checkout and environment,
// parsed into a map that every later question is answered from (repo key, extensions, user.email,
// signing keys, zz.model). Before, each value was its own `git config --get` spawn: seven of the
// thirteen git processes of one `zz lane list`.
//
// Hazard: a cache must never serve a value the user (or this process) has changed since. Git
// writes a config file by renaming a new file over it (a new inode), so each snapshot remembers
// the identity (inode, size, mtime) of every file it was read from plus the files git would
// read were they created (system, global, local, worktree) and the worktree's HEAD
// (includeIf "onbranch:"); every question stats them first (a few microseconds) and reads
// afresh when any changed. zz's own config writes (remotes.ts) also drop the cache outright.
// Values handed in through the environment (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT, HOME, …)
// are part of the cache key, so a caller with another environment gets its own snapshot.

export interface GitConfig {
  /** The value git's `config --get` gives (the last one); null when unset or empty. */
  get(key: string): string | null;
  /** Every value, in git's order (`--get-all`). */
  getAll(key: string): string[];
  /** Each key set (lowercased as git prints it) with its last value, '' for a bare key. */
  entries(): Array<[string, string]>;
}

interface Snapshot {
  values: Map<string, string[]>;
  /** Path → identity when read ('' = absent). */
  files: Map<string, string>;
  /** The checkout it was read in ('' = none): a `git init` nested since is another repo. */
  where: string;
}

const cache = new Map<string, Snapshot>();
/** Checkouts × environments a process keeps; past it, the oldest snapshot goes. */
const MAX_SNAPSHOTS = 64;

/** Drops every snapshot: called after zz itself writes git config. */
export function forgetGitConfig(): void {
  cache.clear();
}

/**
 * git config as seen from `cwd` with `env` added to this process's environment (gitEnv): the
 * caller's HOME and GIT_CONFIG_* decide the global config, as they do for `git config` itself.
 * Outside a repository: the system and global config alone, as git reads them there.
 */
export async function readGitConfig(
  cwd: string,
  env?: Record<string, string>,
  /** git is started from a worker thread when it must be asked (native-git.ts `offLoop`). */
  offLoop = false,
): Promise<GitConfig> {
  const full = gitEnv(env);
  const key = cacheKey(cwd, full);
  let snap = cache.get(key);
  // The checkout is found afresh each time (discover.ts remembers it, checked per call): a
  // repository created inside or around `cwd` since (a nested `git init`) changes none of the
  // files the snapshot watched, yet its config is another's (found in review).
  const where = await findCheckoutAt(cwd, offLoop).catch(() => null);
  if (!snap || snap.where !== checkoutId(where) || changed(snap)) {
    snap = await load(cwd, full, env, where, offLoop);
    cache.delete(key);
    cache.set(key, snap);
    if (cache.size > MAX_SNAPSHOTS) cache.delete(cache.keys().next().value!);
  }
  const values = snap.values;
  return {
    get: (k) => values.get(normalizeKey(k))?.at(-1) || null,
    getAll: (k) => [...(values.get(normalizeKey(k)) ?? [])],
    entries: () => [...values].map(([k, vs]) => [k, vs.at(-1) ?? '']),
  };
}

function checkoutId(c: Checkout | null): string {
  return c ? `${c.gitdir}\0${c.worktreeGitdir}` : '';
}

function cacheKey(cwd: string, env: NodeJS.ProcessEnv): string {
  const parts = [resolve(cwd)];
  for (const k of Object.keys(env).sort()) {
    if (k === 'HOME' || k === 'XDG_CONFIG_HOME' || k.startsWith('GIT_CONFIG'))
      parts.push(`${k}=${env[k]}`);
  }
  return parts.join('\0');
}

/** `Section.sub.Name` → `section.sub.name`: git lowercases the section and the name only. */
function normalizeKey(key: string): string {
  const first = key.indexOf('.');
  const last = key.lastIndexOf('.');
  if (first < 0) return key.toLowerCase();
  return key.slice(0, first).toLowerCase() + key.slice(first, last) + key.slice(last).toLowerCase();
}

function identity(path: string): string {
  try {
    const s = statSync(path, { bigint: true });
    // ctime too: a same-size rewrite in place that sets mtime back (cp -p, rsync -t, touch -r)
    // keeps the other three, and no user tool sets ctime.
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return '';
  }
}

function changed(snap: Snapshot): boolean {
  for (const [path, id] of snap.files) if (identity(path) !== id) return true;
  return false;
}

async function load(
  cwd: string,
  full: NodeJS.ProcessEnv,
  env: Record<string, string> | undefined,
  where: Checkout | null,
  offLoop: boolean,
): Promise<Snapshot> {
  // The files are named before the read: one written between the two is then seen as changed
  // at the next question, never missed.
  const paths = new Set(candidateFiles(full, where));
  const before = new Map([...paths].map((p) => [p, identity(p)]));
  // Exit 1 without output: no config at all. Outside a repository only the system and global
  // files are read, as `git config --get` does there.
  const r = await runGit(['config', '--list', '--show-origin', '-z'], {
    cwd,
    okCodes: [1],
    offLoop,
    ...(env ? { env } : {}),
  });
  const values = new Map<string, string[]>();
  const fields = r.stdout.toString('utf8').split('\0');
  // -z: "<origin>\0<key>\n<value>\0" per entry; a key without "=" comes without "\n<value>".
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const origin = fields[i]!;
    const entry = fields[i + 1]!;
    if (origin.startsWith('file:')) {
      // git names the repository's own files relative to where it moved to: the top of the work
      // tree (or the git dir of a bare repository), not `cwd`.
      const p = resolve(where ? (where.workTree ?? where.worktreeGitdir) : cwd, origin.slice(5));
      if (!before.has(p)) before.set(p, identity(p));
    }
    const nl = entry.indexOf('\n');
    const k = nl < 0 ? entry : entry.slice(0, nl);
    const v = nl < 0 ? '' : entry.slice(nl + 1);
    const list = values.get(k);
    if (list) list.push(v);
    else values.set(k, [v]);
  }
  return { values, files: before, where: checkoutId(where) };
}

/** The files git reads config from, whether or not they exist yet. */
function candidateFiles(env: NodeJS.ProcessEnv, where: Checkout | null): string[] {
  const home = env.HOME || homedir();
  const out = [
    env.GIT_CONFIG_SYSTEM || '/etc/gitconfig',
    ...(env.GIT_CONFIG_GLOBAL
      ? [env.GIT_CONFIG_GLOBAL]
      : [
          join(env.XDG_CONFIG_HOME || join(home, '.config'), 'git', 'config'),
          join(home, '.gitconfig'),
        ]),
  ];
  if (where) {
    out.push(join(where.gitdir, 'config'));
    out.push(join(where.worktreeGitdir, 'config.worktree'));
    out.push(join(where.worktreeGitdir, 'HEAD'));
  }
  return out.map((p) => resolve(p));
}
