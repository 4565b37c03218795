import { promises as fsp, constants as fsc } from 'node:fs';
import { dirname, join } from 'node:path';
import { ZzError } from '../errors.js';
import {
  assertRemoteName,
  ensureZzRefspec,
  fetchZz,
  gitPath,
  historyRoots,
  listRemotes,
  remoteCwd,
} from '../git/index.js';
import { normalizeKeyLine, type SshSigningKey } from '../git/index.js';
import { repoLocalDir, writeFileAtomic } from '../local/index.js';
import { initRepo } from './admin.js';
import { registerKeyAdvice } from './signable.js';
import { MAX_PROJECT_ROOTS } from '../schema/config-ops.js';
import { GitStore } from '../store/index.js';
import { authChecker, requireSignatures, signAs } from './sync/authenticity.js';
import { importFetched } from './sync/engine.js';
import type { SyncReport } from './sync/report.js';
import { GitSyncLocal } from './sync/git-ports.js';
import { unrelatedMessage, unrelatedRemote } from './sync/project-identity.js';
import type { ZzRepo } from './zz-repo.js';

// `zz init` and the fast-forward half of sync: bring remote zz state in, adopt it where we
// have none, create the config and lane _repo otherwise, install the git hooks.

export const HOOK_MARKER = '# zz-hook: installed by `zz init`';
/** The hooks `zz init` installs: copies of the files in the package's hooks/ folder. */
export const HOOKS = ['post-merge', 'post-rewrite'] as const;
// hooks/ sits two levels above this file both in src/core/ and in dist/core/.
const CONFIG_REF = 'refs/zz/config';
const HOOKS_SOURCE = new URL('../../hooks/', import.meta.url);

export interface InitReport {
  repo: string;
  owner: string;
  created_config: boolean;
  adopted: string[];
  refspecs_added: string[];
  fetch_failed: Array<{ remote: string; error: string }>;
  /** Hooks written (new, or replacing an older zz hook). */
  hooks_installed: string[];
  /** zz hooks already in place, unchanged. */
  hooks_unchanged: string[];
  hooks_skipped: Array<{ hook: string; reason: string }>;
  /** Whether <git common dir>/zz/hook-command was written (new, or naming another zz). */
  hook_command_updated: boolean;
  /** Lane _repo created (a config adopted from a remote brings its own). */
  created_repo_lane: boolean;
  /** `--signed` on a repository that did not require signatures: turned on (owners only). */
  signatures_turned_on: boolean;
  /**
   * The root commits of the checkout recorded as the project's identity (by a new config, or
   * added to one that had none), or null when none was recorded by this run.
   */
  project_roots_recorded: string[] | null;
  /** Remotes whose zz state belongs to another project: nothing of theirs was adopted. */
  refused_remotes: string[];
  /** Whether refs/zz/config lists the signing key of the person running init; null: no key. */
  signing_key_registered: boolean | null;
  /** What a remote holds that failed the checks of `zz sync`: kept under refs/zz-quarantine/. */
  quarantined: Array<{ ref: string; commit: string; reason: string }>;
  /** What the person should do next that init could not do for them. */
  notes: string[];
  /** True when this run changed nothing at all (re-running `zz init` is safe). */
  nothing_changed: boolean;
}

export interface InitOptions {
  owner: string;
  visibility: 'private' | 'public';
  /**
   * The zz the hooks run: node and zz's main.js, written one per line to
   * <git common dir>/zz/hook-command (the hooks read it; no shell string is ever evaluated).
   */
  hookCommand: { node: string; main: string };
  /** Skip fetching from remotes (tests, offline). */
  noFetch?: boolean;
  /** The owner's signing key: commits are signed with it and a new config registers it. */
  signingKey?: SshSigningKey;
  /** A new config requires every op to be signed by a key of its actor. */
  signed?: boolean;
}

export async function zzInit(repo: ZzRepo, opts: InitOptions): Promise<InitReport> {
  const g = repo.git;
  if (!g) throw new ZzError('not_a_repository', 'zz init needs a git checkout');
  const report: InitReport = {
    repo: repo.key,
    owner: opts.owner,
    created_config: false,
    adopted: [],
    refspecs_added: [],
    fetch_failed: [],
    hooks_installed: [],
    hooks_unchanged: [],
    hooks_skipped: [],
    hook_command_updated: false,
    created_repo_lane: false,
    signatures_turned_on: false,
    project_roots_recorded: null,
    refused_remotes: [],
    signing_key_registered: null,
    quarantined: [],
    notes: [],
    nothing_changed: false,
  };
  for (const remote of await listRemotes(g.gitdir)) {
    if (await ensureZzRefspec(g.gitdir, remote)) report.refspecs_added.push(remote);
    if (opts.noFetch) continue;
    try {
      await fetchZz(g.gitdir, remote, remoteCwd(g));
    } catch (e) {
      report.fetch_failed.push({ remote, error: (e as Error).message });
    }
  }
  // The project's identity (DESIGN §7): the roots of the checkout's history, so that sync can
  // tell this project's zz state from another's that a mistyped remote URL would bring.
  const history = await historyRoots(g.gitdir, MAX_PROJECT_ROOTS);
  const brought = await fastForwardFromRemotes(repo, history.roots);
  report.adopted = brought.adopted;
  report.quarantined = brought.quarantined;
  for (const x of brought.refused) {
    report.refused_remotes.push(x.remote);
    report.notes.push(x.message);
  }
  const badConfig = brought.quarantined.find((q) => q.ref === CONFIG_REF);
  if (badConfig && !(await repo.config.read()).state.config) {
    // A config of our own would start a second, competing history of owners and keys.
    throw new ZzError(
      'precondition_failed',
      `refs/zz/config on the remote failed the checks zz sync makes (commit ${badConfig.commit.slice(0, 10)}: ${badConfig.reason}); it is kept under refs/zz-quarantine/ and zz made no config of its own: ask an owner to repair the remote's, then run zz init again`,
    );
  }
  const branch = await repo.defaultBranch();
  if (opts.signingKey) signAs(repo, opts.owner, opts.signingKey);
  const r = await initRepo(repo, {
    ...(opts.signingKey ? { owner_keys: [opts.signingKey.publicKey] } : {}),
    ...(opts.signed ? { signed: true } : {}),
    ...(history.roots ? { project_roots: history.roots } : {}),
    owner: opts.owner,
    visibility: opts.visibility,
    default_branch: branch,
  });
  report.created_config = r.created;
  report.created_repo_lane = r.lane_created;
  if (history.roots && (r.created || r.roots === 'added')) {
    report.project_roots_recorded = history.roots;
  }
  const roots = (await repo.config.read()).state.roots;
  if (roots.length === 0) {
    report.notes.push(
      history.roots === null
        ? `the project's root commits were not recorded (${history.reason === 'shallow' ? 'a shallow clone: run git fetch --unshallow, then zz init again' : 'no commit yet: commit, then run zz init again'}); until they are, zz sync cannot tell this project's zz state from another's`
        : r.roots === 'not_owner'
          ? "this repository's zz config does not record the project's root commits, and only an owner's zz init may add them; until then zz sync cannot tell this project's zz state from another's"
          : r.roots === 'unsignable'
            ? "the project's root commits were not recorded: this machine cannot sign them as every other clone requires (see below); once its key is registered, run zz init again"
            : "the project's root commits were not recorded",
    );
  }
  await reconcileSigning(repo, opts, report);
  await installHooks(g.workTree ?? g.gitdir, g.gitdir, opts.hookCommand, report);
  report.nothing_changed =
    !report.created_config &&
    !report.created_repo_lane &&
    report.adopted.length === 0 &&
    report.refspecs_added.length === 0 &&
    report.hooks_installed.length === 0 &&
    !report.hook_command_updated &&
    !report.signatures_turned_on &&
    report.project_roots_recorded === null;
  return report;
}

/**
 * On a repository initialised before (here or on another machine): `--signed` turns the
 * requirement on when the person is an owner, and a signing key the config does not list is
 * said, with the command an owner runs to register it (init cannot: an unregistered key's
 * key_add would be quarantined on every other machine).
 */
async function reconcileSigning(repo: ZzRepo, opts: InitOptions, report: InitReport) {
  const s = (await repo.config.read()).state;
  if (!s.config) return;
  const owner = s.config.owners.includes(opts.owner);
  if (opts.signed && !s.signed) {
    if (owner) {
      await requireSignatures(repo, { actor: opts.owner }, true);
      report.signatures_turned_on = true;
    } else {
      report.notes.push(
        `--signed: only an owner may require signatures (owners: ${s.config.owners.join(', ')})`,
      );
    }
  }
  if (!opts.signingKey) return;
  const mine = normalizeKeyLine(opts.signingKey.publicKey);
  report.signing_key_registered = (s.keys.get(opts.owner) ?? []).some(
    (k) => normalizeKeyLine(k) === mine,
  );
  if (!report.signing_key_registered) {
    // Said with where to run it: on this machine the key_add is refused (signable.ts), and an
    // owner's second machine read "an owner runs" as "run it here".
    report.notes.push(
      `this machine's signing key for ${opts.owner} is not registered in refs/zz/config, so other clones refuse what it signs where a registered key is needed (config changes; every op in a repository that requires signatures). ${registerKeyAdvice(s, opts.owner, mine ?? opts.signingKey.publicKey)}`,
    );
  }
}

/**
 * Creates local refs/zz/* that exist only on a remote, and fast-forwards local ones that a
 * remote is strictly ahead of, once what arrived passes the checks `zz sync` makes (its format,
 * roles and signatures): a ref that fails them is quarantined, as sync would. Diverged refs are
 * reported, never forced. A remote whose zz state belongs to another project
 * (sync/project-identity.ts) is left alone, and said: a `git pull` from a mistyped URL would
 * otherwise adopt that project's Lanes here.
 */
export async function fastForwardFromRemotes(
  repo: ZzRepo,
  /** The checkout's roots, judged against a remote's when there is no local config yet. */
  checkoutRoots?: readonly string[] | null,
): Promise<{
  adopted: string[];
  fast_forwarded: string[];
  diverged: string[];
  quarantined: SyncReport['quarantined'];
  /** This clone's ops a fast-forward here left refused (SyncReport.newly_refused). */
  newly_refused: SyncReport['newly_refused'];
  refused: Array<{ remote: string; message: string }>;
}> {
  const g = repo.git;
  const out = {
    adopted: [] as string[],
    fast_forwarded: [] as string[],
    diverged: [] as string[],
    quarantined: [] as SyncReport['quarantined'],
    newly_refused: [] as SyncReport['newly_refused'],
    refused: [] as Array<{ remote: string; message: string }>,
  };
  if (!g || !(repo.store instanceof GitStore)) return out;
  const local = new GitSyncLocal(g, repo.store);
  for (const remote of await listRemotes(g.gitdir)) {
    const unrelated = await unrelatedRemote(local, remote, checkoutRoots);
    if (unrelated) {
      out.refused.push({ remote, message: unrelatedMessage(unrelated) });
      continue;
    }
    const r = await importFetched(local, assertRemoteName(remote), {
      checker: authChecker,
      now: () => repo.clock().getTime(),
    });
    out.adopted.push(...r.adopted);
    out.fast_forwarded.push(...r.fast_forwarded);
    out.diverged.push(...r.diverged);
    out.quarantined.push(...r.quarantined);
    out.newly_refused.push(...r.newly_refused);
  }
  return out;
}

async function installHooks(
  cwd: string,
  gitdir: string,
  command: { node: string; main: string },
  report: InitReport,
): Promise<void> {
  if (/[\n\r]/.test(command.node + command.main)) {
    throw new ZzError('invalid_argument', 'the path of node or zz holds a line break');
  }
  const commandFile = join(repoLocalDir(gitdir), 'hook-command');
  const commandText = `${command.node}\n${command.main}\n`;
  if ((await fsp.readFile(commandFile, 'utf8').catch(() => null)) !== commandText) {
    await writeFileAtomic(commandFile, commandText, { mode: 0o644, mkdir: true });
    report.hook_command_updated = true;
  }
  // core.hooksPath may move hooks; ask git where they are.
  const hooksDir = await gitPath(cwd, 'hooks');
  for (const hook of HOOKS) {
    const file = join(hooksDir, hook);
    const existing = await fsp.readFile(file, 'utf8').catch(() => null);
    if (existing !== null && !existing.includes(HOOK_MARKER)) {
      report.hooks_skipped.push({
        hook,
        reason: `${file} exists and is not zz's; add \`zz hook ${hook} "$@"\` to it to keep zz state in step`,
      });
      continue;
    }
    const text = await fsp.readFile(new URL(hook, HOOKS_SOURCE), 'utf8');
    if (existing === text && (await isExecutable(file))) {
      report.hooks_unchanged.push(hook);
      continue;
    }
    await fsp.mkdir(dirname(file), { recursive: true });
    await writeFileAtomic(file, text, { mode: 0o755 });
    await fsp.access(file, fsc.X_OK);
    report.hooks_installed.push(hook);
  }
}

async function isExecutable(file: string): Promise<boolean> {
  return fsp.access(file, fsc.X_OK).then(
    () => true,
    () => false,
  );
}
