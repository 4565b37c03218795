import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  generateSigningKey,
  normalizeKeyLine,
  signingKeyFromOpenSsh,
  signingKeyFromPem,
  verifyCommitBody,
  type SshSigningKey,
} from '../../git/index.js';
import { ZzError } from '../../errors.js';
import { personOf } from '../../schema/ids.js';
import { LIMITS } from '../../schema/limits.js';
import { configDir, createFileExclusive } from '../../local/index.js';
import { GitStore, publicationOrder, type CommitRecord, type OpRecord } from '../../store/index.js';
import {
  configCodec,
  isActorKey,
  isOwnerKey,
  OWNER_LEVEL_OPS,
  type ConfigState,
} from '../config-state.js';
import { callerGitConfig, gitUserEmail } from '../identity.js';
import type { ZzRepo } from '../zz-repo.js';
import { requireCaller, type Caller } from '../access.js';
import { registerKeyAdvice } from '../signable.js';
import { writeOp } from '../write-op.js';
import type { SyncLocal } from './ports.js';
import { parseZzCommit, type ParsedCommit } from './validate.js';
import { relatedLaneProblem } from './related-check.js';
import { rolesOf } from './refusals.js';
import type { RoleSource } from '../lane-state.js';

// Authenticity of what arrives by fetch (DESIGN §7). Every commit a daemon writes is signed
// with the key of the person it acts for; refs/zz/config lists each actor's allowed keys. On
// import, an owner-level op counts only when its commit is signed by a key of an owner at that
// point of the log (in every repo); in a repo that requires signatures, any other op whose
// commit is not signed by a key of its actor is quarantined. So nothing fetched can make anyone
// an owner without an owner's key.

/**
 * The person's signing key under the user config dir (`zz/keys/<hash>.pem`, mode 0600),
 * made on first use. The file name is a hash so that no e-mail address becomes a path.
 */
export async function personKey(person: string, env = process.env): Promise<SshSigningKey> {
  return (await personKeyInfo(person, env)).key;
}

export interface PersonKeyInfo {
  key: SshSigningKey;
  file: string;
  created: boolean;
  /** 'git' when the key is the one git config user.signingkey names (gpg.format ssh). */
  source: 'git' | 'zz';
  /** Why git's signing key was not used, when one is configured. */
  note?: string;
}

/**
 * The key git signs with, when `gpg.format = ssh` and `user.signingkey` names an unencrypted
 * ed25519 private key file (or its `.pub`, the private key beside it). `key::` literals and
 * keys held only by an agent cannot sign in-process: a note says so and zz uses its own key.
 */
async function gitSigningKey(
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<{ key: SshSigningKey; file: string } | { note: string } | null> {
  const [format, configured] = await Promise.all([
    callerGitConfig(cwd, 'gpg.format', env).catch(() => null),
    callerGitConfig(cwd, 'user.signingkey', env).catch(() => null),
  ]);
  if (format !== 'ssh' || !configured) return null;
  if (configured.startsWith('key::')) {
    return { note: 'git user.signingkey is a key:: literal; zz needs the private key file' };
  }
  const home = env.HOME || homedir();
  let file = resolve(cwd, configured.replace(/^~(?=\/)/, home));
  if (file.endsWith('.pub')) file = file.slice(0, -4);
  try {
    return { key: signingKeyFromOpenSsh(await fsp.readFile(file, 'utf8')), file };
  } catch (e) {
    return { note: `git user.signingkey ${file}: ${(e as Error).message}` };
  }
}

/**
 * personKey, saying where the key lives and whether this call made it (`zz init` tells).
 * With `cwd`, the key git config user.signingkey names comes first.
 */
export async function personKeyInfo(
  person: string,
  env = process.env,
  cwd?: string,
): Promise<PersonKeyInfo> {
  return (await findKey(person, env, cwd, true))!;
}

/** The person's key (git's, else zz's); with `make`, zz's is made when missing, else null. */
async function findKey(
  person: string,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
  make: boolean,
): Promise<PersonKeyInfo | null> {
  const fromGit = cwd === undefined ? null : await gitSigningKey(cwd, env);
  if (fromGit && 'key' in fromGit) return { ...fromGit, created: false, source: 'git' };
  const note = fromGit ? { note: fromGit.note } : {};
  const file = keyFile(person, env);
  const dir = join(configDir(env), 'keys');
  try {
    return {
      key: signingKeyFromPem(await fsp.readFile(file, 'utf8')),
      file,
      created: false,
      source: 'zz',
      ...note,
    };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (!make) return null;
  await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
  const { key, pem } = generateSigningKey();
  // A racing process that made the key first wins; we use its key.
  if (await createFileExclusive(file, pem, { mode: 0o600 })) {
    return { key, file, created: true, source: 'zz', ...note };
  }
  const made = await fsp.readFile(file, 'utf8');
  return { key: signingKeyFromPem(made), file, created: false, source: 'zz', ...note };
}

/**
 * The daemon's signing (DESIGN §7): every commit it writes for the checkout's person (git
 * user.email) and that person's agents is signed with the person's key — git's
 * user.signingkey when it is an ssh key zz can use, else zz's own under the user config dir,
 * made here when the person has none (`makeKey`; without it a missing key leaves commits
 * unsigned, for embedders whose environment is not the user's). Returns one line for the
 * daemon's log saying which key and, when the repository's config does not list it for the
 * person yet, how an owner registers it: until then other machines see unsigned commits.
 */
export async function signWithPersonKey(
  repo: ZzRepo,
  env = process.env,
  opts: { makeKey?: boolean } = {},
): Promise<string> {
  const g = repo.git;
  if (!g) return `${repo.key}: zz commits are not signed (no git repository)`;
  const cwd = g.workTree ?? g.gitdir;
  const person = await gitUserEmail(cwd, env).catch(() => null);
  if (!person) return `${repo.key}: zz commits are not signed (no git user.email)`;
  const info = await findKey(person, env, cwd, opts.makeKey ?? false);
  if (!info) {
    return `${repo.key}: zz commits are not signed (${person} has no key yet: run zz init)`;
  }
  signAs(repo, person, info.key);
  const line = info.created
    ? `${repo.key}: made a signing key for ${person} (${info.file}); signing zz commits with it`
    : `${repo.key}: signing zz commits as ${person} with ${info.file}${info.source === 'git' ? ' (git user.signingkey)' : ''}`;
  return line + (await unregisteredNote(repo, person, info.key.publicKey));
}

/**
 * In-process writers (the CLI and `zz mcp` without a daemon): sign `person`'s commits and their
 * agents' with the key the daemon would use, never making one (init does). Without it an
 * owner's key add or grant run with no daemon was quarantined on every other machine.
 * The key is looked up at the first commit, not here: a read-only command (most of them) never
 * pays for git's signing config or the key file. A lookup that fails fails that write.
 */
export function signInProcess(repo: ZzRepo, person: string, env = process.env): void {
  const g = repo.git;
  if (!g || !(repo.store instanceof GitStore)) return;
  const cwd = g.workTree ?? g.gitdir;
  let found: Promise<SshSigningKey | null> | null = null;
  repo.store.signsFor = person;
  repo.store.signer = (actor) => {
    if (personOf(actor) !== person) return null;
    found ??= findKey(person, env, cwd, false).then((info) => info?.key ?? null);
    // A failed lookup is not remembered: the next write tries again.
    found.catch(() => (found = null));
    return found;
  };
}

/** When the config is readable and does not list `publicKey` for `person`: what to run. */
async function unregisteredNote(repo: ZzRepo, person: string, publicKey: string): Promise<string> {
  let state: ConfigState;
  try {
    state = (await repo.config.read()).state;
  } catch {
    return '';
  }
  const line = normalizeKeyLine(publicKey);
  if (!state.config || isActorKey(state, person, line)) return '';
  return `; the key is not registered for ${person} in refs/zz/config, so other machines see these commits as unsigned until it is. ${registerKeyAdvice(state, person, line ?? publicKey)}`;
}

function keyFile(person: string, env: NodeJS.ProcessEnv): string {
  return join(
    configDir(env),
    'keys',
    createHash('sha256').update(person).digest('hex').slice(0, 32) + '.pem',
  );
}

/** Signs every commit this repository writes for `person` (and that person's agents). */
export function signAs(repo: ZzRepo, person: string, key: SshSigningKey): void {
  if (!(repo.store instanceof GitStore)) return;
  repo.store.signsFor = person;
  repo.store.signer = (actor) => (personOf(actor) === person ? key : null);
}

/** Why an owner-level op may not count, judged against the config as it stood before it. */
function ownerOpProblem(
  s: ConfigState,
  op: CommitRecord['ops'][number],
  signer: string | null,
): string | null {
  if (op.op === 'repo_init') {
    if (s.config) return null; // a second init changes nothing (config fold)
    // Trust on first use: the first owner's key signs the init that registers it. An init
    // that registers no key (made before zz signed commits) is taken as it is; its owners
    // then have no key, so no later owner-level op of theirs counts until one is added.
    const keys = Array.isArray(op.args.owner_keys) ? (op.args.owner_keys as unknown[]) : [];
    if (keys.length === 0) return null;
    if (
      signer !== null &&
      keys.some((k) => typeof k === 'string' && normalizeKeyLine(k) === signer)
    ) {
      return null;
    }
    return 'repo_init is not signed by the key it registers';
  }
  if (isOwnerKey(s, signer)) return null;
  // Signed by a key registered for its own actor, the op is authentic; whether that actor may
  // make it is the guarded fold's question (configOpAllowed: an owner of the moment, or a key
  // of one's own), which drops it otherwise. Quarantining it instead let an owner revoked
  // while offline stop refs/zz/config from syncing for everyone once their op arrived.
  if (isActorKey(s, op.actor, signer)) return null;
  return `${op.op} by ${op.actor} is not signed by an owner's key`;
}

/** Folds one recorded op; an op that does not parse was already quarantined by validation. */
function applyConfigRecord(s: ConfigState, op: OpRecord): void {
  const parsed = configCodec.parse(op);
  if (parsed.ok) configCodec.apply(s, parsed.op);
}

export interface AuthChecker {
  /**
   * `incoming`: the commits of `history` that arrived (not held locally before), or with
   * `outgoing`, ours that a push would send (the push gate).
   */
  check(
    ref: string,
    history: readonly ParsedCommit[],
    incoming: ReadonlySet<string>,
    outgoing?: boolean,
  ): Promise<{ commit: string; reason: string } | null>;
}

/**
 * The import check the sync engine runs on every ref that arrived changed. Config is judged
 * op by op against the config of that moment; other refs against the config the merge will
 * hold (the remote's, when it passed, else ours).
 */
export function authChecker(local: SyncLocal, remoteName: string): AuthChecker {
  type Trusted = { config: ConfigState; roles: RoleSource; refs: Map<string, string> };
  let trusted: Promise<Trusted> | null = null;
  const trust = (): Promise<Trusted> =>
    (trusted ??= (async () => {
      const refs = await local.listRefs('refs/z');
      const remoteTip = refs.get(`refs/zz-remotes/${remoteName}/config`);
      // Our config held back, every other clone keeps the remote's: a Lane judged against ours
      // (say, signatures no longer required) went out and was quarantined everywhere else.
      const tip = configHeldBack
        ? (remoteTip ?? null)
        : (remoteConfigOk && remoteTip) || refs.get('refs/zz/config') || null;
      const history = tip
        ? (await local.commits([tip], [])).map((c) => parseZzCommit(c, 'refs/zz/config'))
        : [];
      const config = configCodec.empty();
      if (tip) for (const { op } of publicationOrder(history, tip)) applyConfigRecord(config, op);
      return { config, roles: rolesOf(history, tip), refs };
    })());
  let remoteConfigOk = false;
  let configHeldBack = false;
  return {
    async check(ref, history, incoming, outgoing = false) {
      // The raw bytes (for the signatures) of just the commits that need a check.
      const rawOf = (keep: (c: ParsedCommit) => boolean) =>
        local.rawCommits(
          history.filter((c) => incoming.has(c.revision) && keep(c)).map((c) => c.revision),
        );
      if (ref === 'refs/zz/config') {
        const tip = history[history.length - 1]?.revision;
        if (!tip) return null;
        const raw = await rawOf((c) => c.ops.some((o) => OWNER_LEVEL_OPS.has(o.op)));
        const s = configCodec.empty();
        for (const { op, revision } of publicationOrder(history, tip)) {
          if (incoming.has(revision) && OWNER_LEVEL_OPS.has(op.op)) {
            const body = raw.get(revision);
            const signer = body ? verifyCommitBody(body) : null;
            const problem = ownerOpProblem(s, op, signer);
            if (problem) {
              if (outgoing) {
                configHeldBack = true;
                trusted = null;
              }
              return { commit: revision, reason: problem };
            }
          }
          applyConfigRecord(s, op);
        }
        remoteConfigOk = true;
        return null;
      }
      if (ref.startsWith('refs/zz/lanes/')) {
        const problem = await relatedLaneProblem(
          ref,
          history,
          incoming,
          async () => (await trust()).roles,
        );
        if (problem) return problem;
      }
      const { config } = await trust();
      if (!config.signed) return null;
      const raw = await rawOf((c) => c.ops.length > 0);
      for (const c of history) {
        if (!incoming.has(c.revision) || c.ops.length === 0) continue;
        const body = raw.get(c.revision);
        const signer = body ? verifyCommitBody(body) : null;
        for (const op of c.ops) {
          if (!isActorKey(config, op.actor, signer)) {
            return {
              commit: c.revision,
              reason: `op ${op.op} by ${op.actor} is not signed by a key of ${personOf(op.actor)} and this repository requires signatures`,
            };
          }
        }
      }
      return null;
    },
  };
}

/** Key writes take no WriteOpts: their `actor` names whose key, not who is calling. */
const NO_CLAIMS = {};

/** The key argument as a normalised key line, or a clear error. */
function keyArg(raw: string): string {
  const key = normalizeKeyLine(raw);
  if (!key)
    throw new ZzError('invalid_argument', 'key: expected an "ssh-ed25519 AAAA…" public key');
  return key;
}

/** Owners change anyone's keys; an actor only its own. */
function assertMayChangeKeys(
  config: { owners: readonly string[] },
  caller: string,
  actor: string,
  verb: 'register' | 'remove',
): void {
  if (!config.owners.includes(caller) && actor !== caller) {
    throw new ZzError('forbidden', `only an owner may ${verb} another actor's key`);
  }
}

/** An owner registers `key` for `actor` (or an actor its own; see configOpAllowed). */
export async function keyAdd(
  repo: ZzRepo,
  caller: { actor: string },
  args: { actor: string; key: string },
): Promise<{ revision: string }> {
  const key = keyArg(args.key);
  const r = await writeOp(repo, caller, repo.config, NO_CLAIMS, {
    tool: 'key_add',
    request: { actor: args.actor, key },
    decide: (s) => {
      assertMayChangeKeys(s.config!, caller.actor, args.actor, 'register');
      const held = s.keys.get(args.actor) ?? [];
      if (held.includes(key)) return [];
      if (held.length >= LIMITS.keysPerActor) {
        throw new ZzError(
          'precondition_failed',
          `${args.actor} already has ${LIMITS.keysPerActor} allowed signing keys; remove one first (key_remove)`,
        );
      }
      return {
        op: 'key_add' as const,
        summary: `key_add for ${args.actor}`,
        args: { actor: args.actor, key },
      };
    },
    result: () => null,
  });
  return { revision: r.revision };
}

/** An owner removes `key` of `actor` (or an actor one of its own). */
export async function keyRemove(
  repo: ZzRepo,
  callerIn: Caller | null,
  args: { actor: string; key: string },
): Promise<{ removed: boolean; revision: string }> {
  const caller = requireCaller(callerIn);
  const key = keyArg(args.key);
  const r = await writeOp(repo, caller, repo.config, NO_CLAIMS, {
    tool: 'key_remove',
    request: { actor: args.actor, key },
    decide: (s) => {
      assertMayChangeKeys(s.config!, caller.actor, args.actor, 'remove');
      const held = (s.keys.get(args.actor) ?? []).some((k) => normalizeKeyLine(k) === key);
      if (!held) return [];
      return {
        op: 'key_remove' as const,
        summary: `key_remove for ${args.actor}`,
        args: { actor: args.actor, key },
      };
    },
    result: (_s, op) => op !== null,
  });
  return { removed: r.result, revision: r.revision };
}

/** Each actor's allowed signing keys, paged by actor, and whether signatures are required. */
export async function keyList(
  repo: ZzRepo,
  args: { actor?: string; limit?: number; offset?: number },
): Promise<{
  signatures_required: boolean;
  keys: Array<{ actor: string; keys: string[]; owner: boolean; refused?: number }>;
  next_offset: number | null;
}> {
  await repo.requireConfig();
  const s = (await repo.config.read()).state;
  // key_adds past LIMITS.keysPerActor (from another clone, an older zz): refused by the fold.
  const refused = new Map<string, number>();
  for (const r of s.rejected) {
    if (r.reason === 'keys_per_actor' && r.subject !== undefined) {
      refused.set(r.subject, (refused.get(r.subject) ?? 0) + 1);
    }
  }
  const all = [...s.keys.entries()]
    .filter(([a, ks]) => ks.length > 0 && (args.actor === undefined || a === args.actor))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const from = args.offset ?? 0;
  const to = Math.min(all.length, from + (args.limit ?? 100));
  return {
    signatures_required: s.signed,
    keys: all.slice(from, to).map(([actor, ks]) => ({
      actor,
      keys: [...ks],
      owner: s.config!.owners.includes(actor),
      ...(refused.has(actor) ? { refused: refused.get(actor)! } : {}),
    })),
    next_offset: to < all.length ? to : null,
  };
}

/** An owner turns required signatures on (or off) for the repository. */
export async function requireSignatures(
  repo: ZzRepo,
  caller: { actor: string },
  signed: boolean,
): Promise<{ revision: string }> {
  const r = await writeOp(repo, caller, repo.config, NO_CLAIMS, {
    tool: 'repo_require_signatures',
    request: { signed },
    decide: (s) => {
      if (!s.config!.owners.includes(caller.actor)) {
        throw new ZzError('forbidden', 'only an owner may change the signature policy');
      }
      if (s.signed === signed) return [];
      return {
        op: 'repo_require_signatures' as const,
        summary: `repo_require_signatures ${signed}`,
        args: { signed },
      };
    },
    result: () => null,
  });
  return { revision: r.revision };
}
