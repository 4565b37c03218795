import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { ZzError } from '../errors.js';
import { gitEnv, runGit } from './native-git.js';

// Where the checkout around a directory is: one `git rev-parse` per directory and process.
// A CLI command asked three times (the fast path's common dir, the repo key, the store's open),
// each a git process. Light on purpose (native-git alone): the CLI's fast path calls the
// synchronous form before loading anything heavy, and the full path then finds it remembered.
//
// Hazard: a long-lived process (the daemon, `zz mcp`, the test runner) must not keep an answer
// that is no longer true. A remembered answer is used only while the per-worktree git dir is the
// same directory (same inode) and no `.git` has appeared between the directory asked about and
// the top of the work tree (a nested `git init`); otherwise git is asked again. Failures are never
// remembered: a directory that becomes a repository is found at once.

export interface Checkout {
  /** The checkout's top level; null for a bare repository. */
  workTree: string | null;
  /** The common git dir (shared by linked worktrees). */
  gitdir: string;
  /** The per-worktree git dir (HEAD, index of this checkout). */
  worktreeGitdir: string;
}

interface Remembered {
  found: Checkout;
  /** dev:ino of worktreeGitdir when found. */
  id: string;
}

const remembered = new Map<string, Remembered>();
/** Directories a process remembers; past it, the oldest goes. */
const MAX_REMEMBERED = 256;

const WITH_TOP = [
  'rev-parse',
  '--path-format=absolute',
  '--is-bare-repository',
  '--git-common-dir',
  '--git-dir',
  '--show-toplevel',
];
// --show-toplevel fails in a bare repository; asked again without it.
const WITHOUT_TOP = WITH_TOP.slice(0, -1);

/** The checkout around `cwd`; null outside any repository. Synchronous (the CLI's fast path). */
export function findCheckoutSync(cwd: string): Checkout | null {
  const known = recall(cwd);
  if (known) return known;
  const run = (args: string[]): string | null => {
    try {
      return execFileSync('git', args, {
        cwd,
        env: gitEnv(),
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    } catch {
      return null;
    }
  };
  const withTop = run(WITH_TOP);
  const out = withTop ?? run(WITHOUT_TOP);
  if (out === null) return null;
  try {
    return remember(cwd, out, withTop === null ? 3 : 4);
  } catch {
    return null; // the full path says why (a line break in the path)
  }
}

/**
 * The checkout around `cwd`; not_a_repository outside one. `offLoop`: git is started from a
 * worker thread when it must be asked (native-git.ts), for the daemon's background work.
 */
export async function findCheckoutAt(cwd: string, offLoop = false): Promise<Checkout> {
  const known = recall(cwd);
  if (known) return known;
  const run = async (args: string[]): Promise<string | null> => {
    try {
      return (await runGit(args, { cwd, offLoop })).stdout.toString('utf8');
    } catch {
      return null;
    }
  };
  const withTop = await run(WITH_TOP);
  const out = withTop ?? (await run(WITHOUT_TOP));
  if (out === null) throw notARepository(cwd);
  return remember(cwd, out, withTop === null ? 3 : 4);
}

function remember(cwd: string, stdout: string, fields: number): Checkout {
  const found = parse(cwd, stdout, fields);
  const id = dirId(found.worktreeGitdir);
  if (id) {
    remembered.delete(resolve(cwd));
    remembered.set(resolve(cwd), { found, id });
    if (remembered.size > MAX_REMEMBERED) remembered.delete(remembered.keys().next().value!);
  }
  return found;
}

function parse(cwd: string, stdout: string, fields: number): Checkout {
  const lines = stdout.replace(/\n$/, '').split('\n');
  // rev-parse prints one path a line: a line break inside a path cannot be told from the next
  // field, and every path below would be wrong (realpath's ENOENT, before this check).
  if (lines.length > fields) throw lineBreak(cwd);
  const [bare, common, dir, top] = lines;
  if (!common || !dir) throw notARepository(cwd);
  const abs = (p: string) => realpathSync(isAbsolute(p) ? p : resolve(cwd, p));
  return {
    workTree: bare === 'true' || !top ? null : abs(top),
    gitdir: abs(common),
    worktreeGitdir: abs(dir),
  };
}

// What a user who ran zz in the wrong folder (or an MCP client started without the project as
// its cwd) needs next: where zz looked, and where it must run instead.
const notARepository = (cwd: string) =>
  new ZzError(
    'not_a_repository',
    `not a git repository: ${cwd}; zz works inside a git checkout: cd into one (or give an MCP client the checkout as its cwd), or make one with git clone or git init`,
  );

const lineBreak = (cwd: string) =>
  new ZzError(
    'unsupported_repository',
    `the path of this repository has a line break in it, which zz does not support; rename the folder (${JSON.stringify(resolve(cwd))})`,
  );

function dirId(path: string): string | null {
  try {
    const s = statSync(path);
    return `${s.dev}:${s.ino}`;
  } catch {
    return null;
  }
}

function recall(cwd: string): Checkout | null {
  const key = resolve(cwd);
  const r = remembered.get(key);
  if (!r) return null;
  if (dirId(r.found.worktreeGitdir) === r.id && !nestedSince(key, r.found)) return r.found;
  remembered.delete(key);
  return null;
}

/** Whether a `.git` now stands between `cwd` and the work tree's top (a nested repository). */
function nestedSince(cwd: string, found: Checkout): boolean {
  if (found.workTree === null) return false;
  let d: string;
  try {
    d = realpathSync(cwd);
  } catch {
    return true;
  }
  while (d !== found.workTree) {
    if (existsSync(join(d, '.git'))) return true;
    const up = dirname(d);
    if (up === d) return true; // not under the work tree any more: ask git
    d = up;
  }
  return false;
}
