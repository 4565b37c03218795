import { ZzError } from '../errors.js';
import { RefCasError } from './ref-store.js';
import { assertRefName, OID_RE } from './ref-names.js';
import { runGit } from './native-git.js';

// The git side of `zz sync`: an atomic, pruning fetch of refs/zz/* into refs/zz-remotes/<r>/*,
// a multi-ref transaction with old values (git's own `update-ref --stdin`, which takes the same
// `<ref>.lock` files as RefStore, so the two exclude each other), the commits between tips, and
// an atomic push with one lease per ref whose result is parsed into typed outcomes. Nothing here
// knows what a Lane is; core/sync decides what to move.

const ZERO_OID = '0000000000000000000000000000000000000000';
const REMOTE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export function assertRemoteName(remote: string): string {
  if (!REMOTE_RE.test(remote) || remote.endsWith('.lock') || remote.includes('..')) {
    throw new ZzError('invalid_argument', `"${remote.slice(0, 100)}" is not a remote name`);
  }
  return remote;
}

/** Why talking to a remote failed, said so that callers can decide (retry, exit 7, stop). */
export type TransportFailure =
  | { kind: 'offline'; message: string }
  | { kind: 'permission'; message: string }
  | { kind: 'fatal'; message: string };

export class TransportError extends ZzError {
  constructor(readonly failure: TransportFailure) {
    const code =
      failure.kind === 'offline'
        ? 'unavailable'
        : failure.kind === 'permission'
          ? 'forbidden'
          : 'git_failed';
    super(code, failure.message, { kind: failure.kind });
  }
}

// Messages of git and ssh that mean "could not reach the remote" rather than "the remote said
// no". Checked after the permission patterns: ssh prints "Could not read from remote
// repository" for both.
const PERMISSION = [
  /permission denied/i,
  /permission to \S+ denied/i,
  /authentication failed/i,
  /\b403\b/,
  /\b401\b/,
  /not authorized/i,
  // An https remote that asks for a user name: git may not prompt (GIT_TERMINAL_PROMPT=0).
  /could not read (username|password)/i,
  /access denied/i,
  /repository not found/i,
];
const OFFLINE = [
  /could not resolve host/i,
  /unable to access/i,
  /connection refused/i,
  /connection timed out/i,
  /operation timed out/i,
  /network is unreachable/i,
  /no route to host/i,
  /could not read from remote repository/i,
  /does not appear to be a git repository/i,
  /unable to connect/i,
  /connection reset/i,
  /temporary failure in name resolution/i,
];

export function classifyTransportError(stderr: string): TransportFailure {
  const text = stderr.trim();
  const line =
    text
      .split('\n')
      .map((l) => l.replace(/^(fatal|error): /, '').trim())
      .filter(Boolean)
      .slice(0, 2)
      .join('; ') || 'git failed without a message';
  if (/could not read (username|password)/i.test(text)) {
    return {
      kind: 'permission',
      message: `${line}; the remote asks for credentials and zz cannot prompt: set up a credential helper (git config credential.helper) or use an ssh remote`,
    };
  }
  if (PERMISSION.some((re) => re.test(text))) return { kind: 'permission', message: line };
  if (OFFLINE.some((re) => re.test(text))) return { kind: 'offline', message: line };
  return { kind: 'fatal', message: line };
}

/**
 * How long one git command talking to a remote may take: ZZ_REMOTE_TIMEOUT_MS (tests use a
 * small one), else `fallback`. A remote that accepts and never answers fails the run then.
 */
export function remoteTimeoutMs(fallback: number): number {
  const v = Number(process.env.ZZ_REMOTE_TIMEOUT_MS);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

// Whether git talking to a remote may ask on this process's terminal (native-git.ts `terminal`).
// Off by default: a daemon's or a worker's git must never wait for a person, and runs in its own
// process group so a stalled remote's helpers die with it. A person's `zz sync` / `zz init` at
// a terminal turns it on, so that ssh can ask for a key's passphrase as plain git would.
let askOnTerminal = false;

/** Lets this process's remote git runs ask on its terminal (the CLI, stdin and stderr a TTY). */
export function letRemotesAskOnTerminal(): void {
  askOnTerminal = true;
}

export function remotesAskOnTerminal(): boolean {
  return askOnTerminal;
}

/** A failed git run against `remote` as a TransportError: a timeout says so and is offline. */
function transportError(e: unknown, remote: string): TransportError {
  const d = e instanceof ZzError ? (e.details as { timedOut?: unknown; timeoutMs?: unknown }) : {};
  if (d?.timedOut === true) {
    const s = Math.round(Number(d.timeoutMs) / 1000);
    return new TransportError({
      kind: 'offline',
      message: `remote ${remote} did not answer within ${s} s (${(e as Error).message})`,
    });
  }
  return new TransportError(classifyTransportError(stderrOf(e)));
}

function stderrOf(e: unknown): string {
  if (e instanceof ZzError) {
    const d = e.details as { stderr?: unknown } | undefined;
    if (d && typeof d.stderr === 'string') return d.stderr;
  }
  return e instanceof Error ? e.message : String(e);
}

/**
 * Fetches refs/zz/* of `remote` into refs/zz-remotes/<remote>/*, mirroring the remote's values
 * (forced: rewinds included), atomically (all tracking refs move or none), without tags.
 * Returns every name the remote listed under refs/zz/ (name → oid), fetched or not.
 *
 * Only the names `keep` accepts are fetched, after a listing (`git ls-remote`), and only those
 * whose tracking ref differs from the listing: their tips by id, then the tracking refs in one
 * transaction (below); tracking refs of names not kept are deleted first. A remote can be
 * made to hold `lanes/junk` and later `lanes/junk/x` (git keeps refs as files: one name cannot
 * be a file and a directory), and a tracking ref left of the first made every later fetch fail
 * (measured on git 2.39: `fetch --atomic --prune` with the wildcard refspec exits 255, "cannot
 * lock ref '…/lanes/junk/x': '…/lanes/junk' exists"; without --atomic git prunes first and
 * passes, but then a name zz does not keep lands here and the quarantine ref made of it
 * conflicts next). The names `keep` accepts must be free of such conflicts among themselves
 * (zz's layout is: no Lane id holds a `/`); the remote's own names always are.
 */
export async function fetchZzRefs(
  gitdir: string,
  remote: string,
  /** cwd: where a relative remote URL is resolved (remotes.ts `remoteCwd`); the git dir if unset. */
  opts: { timeoutMs?: number; keep?: (ref: string) => boolean; cwd?: string } = {},
): Promise<Map<string, string>> {
  assertRemoteName(remote);
  const keep = opts.keep ?? (() => true);
  const cwd = opts.cwd ?? gitdir;
  const timeoutMs = opts.timeoutMs ?? remoteTimeoutMs(60_000);
  const tracking = `refs/zz-remotes/${remote}/`;
  // A ref deleted on the remote between the listing and the fetch fails the fetch ("couldn't
  // find remote ref"): list again, a few times, as for any other race.
  for (let attempt = 1; ; attempt++) {
    const listed = await listRemoteZzRefs(gitdir, remote, timeoutMs, cwd);
    const wanted = new Set([...listed.keys()].filter((ref) => keep(ref)));
    const stale: RefUpdate[] = [];
    const held = await listLocalRefs(gitdir, tracking);
    for (const [ref, oid] of held) {
      if (!wanted.has('refs/zz/' + ref.slice(tracking.length))) {
        stale.push({ ref, old: oid, new: null });
      }
    }
    try {
      await updateRefsAtomic(gitdir, stale, { listedByGit: true });
    } catch (e) {
      // Another fetch moved one meanwhile: the fetch below says whether anything is left.
      if (!(e instanceof RefCasError)) throw e;
    }
    // Only what moved: a round with nothing new (the daemon's every minute) fetches nothing.
    const moved = [...wanted].filter(
      (ref) => held.get(tracking + ref.slice('refs/zz/'.length)) !== listed.get(ref),
    );
    if (moved.length === 0) return listed;
    // The objects by id, then the tracking refs in one transaction: one explicit refspec a
    // name made git's cost grow with names × names advertised (20,000 names pushed by anyone
    // timed every clone's fetch out, every round); the distinct tips are few, and git fetches
    // an advertised tip by its id. Tracking refs move with the values just listed, leased on
    // what they held, so the round sees one listing whole.
    const tips = [...new Set(moved.map((ref) => listed.get(ref)!))];
    try {
      await runGit(
        [
          '--git-dir',
          gitdir,
          'fetch',
          '--quiet',
          '--no-tags',
          '--no-write-fetch-head',
          '--stdin',
          '--',
          remote,
        ],
        { cwd, input: tips.join('\n') + '\n', timeoutMs, terminal: askOnTerminal },
      );
      await updateRefsAtomic(
        gitdir,
        moved.map((ref) => {
          const name = tracking + ref.slice('refs/zz/'.length);
          return { ref: name, old: held.get(name) ?? null, new: listed.get(ref)! };
        }),
      );
      return listed;
    } catch (e) {
      const stderr = stderrOf(e);
      // A tip moved on since the listing (not advertised any more), or a tracking ref moved by
      // another fetch meanwhile: list again.
      if (
        attempt < 3 &&
        (e instanceof RefCasError ||
          /not our ref|unadvertised object|couldn't find remote ref/i.test(stderr))
      )
        continue;
      throw transportError(e, remote);
    }
  }
}

/** Every ref under refs/zz/ of `remote` (`git ls-remote`), name → oid. */
async function listRemoteZzRefs(
  gitdir: string,
  remote: string,
  timeoutMs: number,
  cwd: string,
): Promise<Map<string, string>> {
  let r;
  try {
    r = await runGit(['--git-dir', gitdir, 'ls-remote', '--refs', '--', remote, 'refs/zz/*'], {
      cwd,
      timeoutMs,
      terminal: askOnTerminal,
    });
  } catch (e) {
    throw transportError(e, remote);
  }
  const out = new Map<string, string>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const tab = line.indexOf('\t');
    const oid = line.slice(0, tab);
    const ref = line.slice(tab + 1);
    // ls-remote matches patterns at the end of a name (refs/heads/refs/zz/x matches too).
    if (tab > 0 && OID_RE.test(oid) && ref.startsWith('refs/zz/')) out.set(ref, oid);
  }
  return out;
}

/** Local refs under `prefix`, name → oid. */
async function listLocalRefs(gitdir: string, prefix: string): Promise<Map<string, string>> {
  const r = await runGit(
    ['--git-dir', gitdir, 'for-each-ref', '--format=%(objectname) %(refname)', prefix],
    { cwd: gitdir },
  );
  const out = new Map<string, string>();
  for (const line of r.stdout.toString('utf8').split('\n')) {
    const sp = line.indexOf(' ');
    if (sp > 0) out.set(line.slice(sp + 1), line.slice(0, sp));
  }
  return out;
}

export interface RefUpdate {
  ref: string;
  /** The value the ref must hold now; null: it must not exist. */
  old: string | null;
  /** The new value; null deletes the ref. */
  new: string | null;
}

/**
 * Moves several refs in one transaction with old values (`git update-ref --stdin`,
 * start/prepare/commit): every ref is locked and checked before any moves, and on any mismatch
 * none moves. A mismatch throws RefCasError for the first ref git names.
 */
export async function updateRefsAtomic(
  gitdir: string,
  updates: readonly RefUpdate[],
  {
    listedByGit = false,
  }: {
    /**
     * The names came from git's own listing of this repository (for-each-ref): git accepted
     * them, and zz's stricter check (assertRefName: no component starting with `-`, at most
     * 1,024 characters) would refuse some a remote can push (`refs/zz/lanes/-x`), which then
     * could never be deleted. Such names are checked only for what would break the
     * transaction's lines.
     */
    listedByGit?: boolean;
  } = {},
): Promise<void> {
  if (updates.length === 0) return;
  const lines = ['start'];
  for (const u of updates) {
    if (!listedByGit) assertRefName(u.ref);
    else if (!u.ref.startsWith('refs/') || /[\s\x00-\x1f\x7f]/.test(u.ref)) {
      throw new ZzError('internal', `unexpected ref name from git: ${JSON.stringify(u.ref)}`);
    }
    for (const v of [u.old, u.new]) {
      if (v !== null && !OID_RE.test(v)) throw new ZzError('internal', `bad oid for ${u.ref}`);
    }
    if (u.new === null) {
      if (u.old === null) continue;
      lines.push(`delete ${u.ref} ${u.old}`);
    } else lines.push(`update ${u.ref} ${u.new} ${u.old ?? ZERO_OID}`);
  }
  lines.push('prepare', 'commit', '');
  const r = await runGit(['--git-dir', gitdir, 'update-ref', '--stdin'], {
    cwd: gitdir,
    input: lines.join('\n'),
    okCodes: [128, 1],
  });
  if (r.code === 0) return;
  const m = /cannot lock ref '([^']+)'/.exec(r.stderr);
  const ref = m?.[1] ?? updates[0]!.ref;
  const u = updates.find((x) => x.ref === ref) ?? updates[0]!;
  if (/is at|expected|reference already exists|unable to resolve|but expected/.test(r.stderr)) {
    const at = /is at ([0-9a-f]{40})/.exec(r.stderr)?.[1] ?? null;
    throw new RefCasError(u.ref, u.old, at);
  }
  if (/File exists|Unable to create .*\.lock/.test(r.stderr)) {
    throw new ZzError('ref_locked', `${ref} is locked by another process: ${r.stderr.trim()}`);
  }
  throw new ZzError('git_failed', `git update-ref failed: ${r.stderr.trim().split('\n')[0]}`);
}

/** One commit of a DAG walk: its parents, in order. */
export interface DagEntry {
  oid: string;
  parents: string[];
}

/**
 * Commits reachable from `include` but not from `exclude`, parents first (topological).
 * Excluded tips that this repository does not have are dropped rather than failing the walk.
 */
export async function commitsBetween(
  gitdir: string,
  include: readonly string[],
  exclude: readonly string[],
): Promise<DagEntry[]> {
  const inc = include.filter((o) => OID_RE.test(o));
  if (inc.length === 0) return [];
  const exc = exclude.filter((o) => OID_RE.test(o));
  const r = await runGit(
    ['--git-dir', gitdir, 'rev-list', '--parents', '--topo-order', '--reverse', '--stdin'],
    {
      cwd: gitdir,
      input: [...inc, ...exc.map((o) => '^' + o), ''].join('\n'),
    },
  );
  const out: DagEntry[] = [];
  for (const line of r.stdout.toString('utf8').split('\n')) {
    if (!line) continue;
    const [oid, ...parents] = line.split(' ');
    out.push({ oid: oid!, parents });
  }
  return out;
}

export type PushOutcome =
  /** Every ref moved on the remote. */
  | { kind: 'ok' }
  /** Someone else moved the remote first: fetch again, merge, retry. */
  | { kind: 'race'; reason: RaceReason; refs: string[]; message: string }
  /** Retrying cannot help: say it plainly. */
  | { kind: 'fatal'; reason: 'permission' | 'hidden_ref' | 'declined' | 'error'; message: string }
  | { kind: 'offline'; message: string };

export type RaceReason =
  'stale_info' | 'fetch_first' | 'non_fast_forward' | 'atomic_failed' | 'remote_rejected';

export interface PushUpdate {
  ref: string;
  /** What the remote must hold for this ref to move (null: it must not exist there). */
  expected: string | null;
  next: string;
}

/**
 * `git push --porcelain --atomic --force-with-lease=<ref>:<expected>` for every ref: all move or
 * none, and none moves unless the remote still holds exactly what we merged with. Pre-push hooks
 * are not run (this is zz's state, not the user's branches).
 */
/** Refs one `git push` names at most (pushZzRefs). */
const PUSH_BATCH = 1000;

export async function pushZzRefs(
  gitdir: string,
  remote: string,
  updates: readonly PushUpdate[],
  /** batch: refs a push names at most (PUSH_BATCH; smaller in tests). cwd: remoteCwd. */
  opts: { timeoutMs?: number; batch?: number; cwd?: string } = {},
): Promise<PushOutcome> {
  assertRemoteName(remote);
  const batch = opts.batch ?? PUSH_BATCH;
  // Two arguments a ref: 20,000 refs passed the kernel's limit on a command line (spawn
  // E2BIG, every round). Pushed in batches, each atomic; a batch that fails ends the round
  // with its outcome, and what earlier batches moved is already what the next round would
  // push (each ref has its own lease, so nothing is forced over by the split).
  if (updates.length > batch) {
    for (let i = 0; i < updates.length; i += batch) {
      const r = await pushZzRefs(gitdir, remote, updates.slice(i, i + batch), opts);
      if (r.kind !== 'ok') return r;
    }
    return { kind: 'ok' };
  }
  if (updates.length === 0) return { kind: 'ok' };
  const args = ['--git-dir', gitdir, 'push', '--porcelain', '--atomic', '--no-verify'];
  for (const u of updates) {
    assertRefName(u.ref);
    if (!OID_RE.test(u.next) || (u.expected !== null && !OID_RE.test(u.expected))) {
      throw new ZzError('internal', `bad oid in push of ${u.ref}`);
    }
    args.push(`--force-with-lease=${u.ref}:${u.expected ?? ''}`);
  }
  args.push('--', remote, ...updates.map((u) => `${u.next}:${u.ref}`));
  let r;
  try {
    r = await runGit(args, {
      cwd: opts.cwd ?? gitdir,
      okCodes: [1],
      timeoutMs: opts.timeoutMs ?? remoteTimeoutMs(120_000),
      terminal: askOnTerminal,
    });
  } catch (e) {
    const f = transportError(e, remote).failure;
    if (f.kind === 'offline') return { kind: 'offline', message: f.message };
    return {
      kind: 'fatal',
      reason: f.kind === 'permission' ? 'permission' : 'error',
      message: f.message,
    };
  }
  return parsePushPorcelain(r.stdout.toString('utf8'), r.stderr, r.code);
}

/**
 * Reads `git push --porcelain` output: `<flag>\t<from>:<to>\t<summary> (<reason>)` per ref,
 * flag `!` for a rejected ref. Exported for tests of the less common messages.
 */
export function parsePushPorcelain(stdout: string, stderr: string, code: number): PushOutcome {
  const rejected: Array<{ ref: string; summary: string }> = [];
  for (const line of stdout.split('\n')) {
    const parts = line.split('\t');
    if (parts.length < 3 || parts[0] !== '!') continue;
    const to = parts[1]!.split(':').slice(1).join(':');
    rejected.push({ ref: to, summary: parts[2]! });
  }
  if (rejected.length === 0) {
    if (code === 0) return { kind: 'ok' };
    const f = classifyTransportError(stderr);
    if (f.kind === 'offline') return { kind: 'offline', message: f.message };
    if (/hidden ref/i.test(stderr))
      return { kind: 'fatal', reason: 'hidden_ref', message: f.message };
    return {
      kind: 'fatal',
      reason: f.kind === 'permission' ? 'permission' : 'error',
      message: f.message,
    };
  }
  const text = rejected.map((x) => `${x.ref}: ${x.summary}`).join('; ');
  const refs = rejected.map((x) => x.ref);
  const all = rejected.map((x) => x.summary).join('\n');
  if (/hidden ref/i.test(all)) return { kind: 'fatal', reason: 'hidden_ref', message: text };
  if (/permission|not allowed|denied/i.test(all) && !/cannot lock/i.test(all)) {
    return { kind: 'fatal', reason: 'permission', message: text };
  }
  if (/hook declined|protected/i.test(all)) {
    // The porcelain line says only "hook declined"; why is in the hook's "remote: …" lines.
    const said = stderr
      .split('\n')
      .filter((l) => l.startsWith('remote: '))
      .map((l) => l.slice('remote: '.length).trim())
      .filter((l) => l !== '')
      .join(' ')
      .slice(0, 500);
    return {
      kind: 'fatal',
      reason: 'declined',
      message: said ? `${text}; the remote said: ${said}` : text,
    };
  }
  // The most specific cause first: with --atomic every other ref says "atomic push failed".
  const reason: RaceReason = /stale info/.test(all)
    ? 'stale_info'
    : /fetch first/.test(all)
      ? 'fetch_first'
      : /non-fast-forward/.test(all)
        ? 'non_fast_forward'
        : /remote rejected/.test(all)
          ? 'remote_rejected'
          : 'atomic_failed';
  return { kind: 'race', reason, refs, message: text };
}

/** The remote zz pushes to: `git config zz.remote`, else `origin`. */
export async function authoritativeRemote(gitdir: string): Promise<string> {
  const r = await runGit(['--git-dir', gitdir, 'config', '--get', 'zz.remote'], {
    cwd: gitdir,
    okCodes: [1],
  });
  const name = r.stdout.toString('utf8').trim();
  return name ? assertRemoteName(name) : 'origin';
}
