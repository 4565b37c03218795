import { ERROR_CODES, ZzError, type ErrorCode } from '../errors.js';
import type { ZzRepo } from '../core/zz-repo.js';
import { gitUserEmail, locateRepository } from '../core/identity.js';
import { normalizeServer, readRepoCredentials } from './credentials.js';
import { checkTokenText, envToken } from './env-token.js';

// How the CLI reaches the tools: through the checkout's running daemon when there is one
// (found via <gitdir>/zz/daemon.json), otherwise in-process over the same runTool() path,
// acting as the local git identity. Heavy modules load only on the path that needs them.

export interface ToolClient {
  mode: 'daemon' | 'in-process';
  repoKey: string;
  server: string | null;
  /** The actor in-process calls act as (daemon calls act as their token's actor). */
  actor?: string;
  /** `signal` ends a long-poll (lane_events with wait_ms) early. */
  call(
    tool: string,
    args: Record<string, unknown>,
    opts?: { signal?: AbortSignal },
  ): Promise<Record<string, unknown>>;
  close(): void;
}

export interface ConnectOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Force in-process even when a daemon runs (used by `zz mcp --local`, tests). */
  inProcess?: boolean;
}

export async function connect(opts: ConnectOptions): Promise<ToolClient> {
  const found = await locateRepository(opts.cwd);
  const repoKey = found.key;
  if (!opts.inProcess) {
    const { readDaemonInfo } = await import('../daemon/daemon-file.js');
    const info = await readDaemonInfo(found.gitdir);
    if (info) {
      const server = normalizeServer(info.url);
      const fromEnv = envToken(opts.env);
      const token = fromEnv ?? (await readRepoCredentials(opts.env, found.gitdir))?.login?.token;
      if (token && fromEnv === undefined) checkTokenText(token, 'the stored token');
      if (!token) {
        throw new ZzError(
          'unauthorized',
          `zz serve is running at ${server}; run \`zz login\` to get a token for it`,
        );
      }
      return withLocalTools(
        httpClient(server, repoKey, token, fromEnv === undefined ? 'login' : 'ZZ_TOKEN'),
        opts.cwd,
      );
    }
  }
  const [{ ZzRepo }, { registry, runTool }] = await Promise.all([
    import('../core/zz-repo.js'),
    import('../tools/index.js'),
  ]);
  const repo = await ZzRepo.open(opts.cwd, { key: repoKey });
  let actor: string;
  let person: string | null;
  const fromEnv = envToken(opts.env);
  if (fromEnv !== undefined) {
    // A token names its actor even without a daemon: verify it against this machine's store.
    const { TokenStore } = await import('../core/token-store.js');
    const who = await new TokenStore(found.gitdir).verify(fromEnv);
    if (!who)
      throw new ZzError(
        'unauthorized',
        "ZZ_TOKEN is not a valid token for this repository; set it to this repository's (`zz agent create <name>` mints one, `zz agent token <name>` prints it), or unset ZZ_TOKEN to act as your login",
      );
    actor = who.actor;
    person = await gitUserEmail(opts.cwd, opts.env).catch(() => null);
  } else {
    actor = await gitUserEmail(opts.cwd, opts.env);
    person = actor;
  }
  // Signed as the daemon signs: the checkout's person and their agents, with the person's key.
  if (person !== null) {
    const { signInProcess } = await import('../core/sync/authenticity.js');
    signInProcess(repo, person, opts.env);
  }
  return {
    mode: 'in-process',
    repoKey,
    server: null,
    actor,
    call: (tool, args, o) =>
      runTool(registry.require(tool), args, {
        repo,
        caller: { actor },
        local: true,
        ...(o?.signal ? { signal: o.signal } : {}),
      }),
    close: () => repo.close(),
  };
}

/** The actor a daemon sees for this client's token (what `repo_state` answers). */
export async function daemonActor(client: ToolClient): Promise<string> {
  const s = await client.call('repo_state', {});
  if (typeof s.actor !== 'string')
    throw new ZzError(
      'unauthorized',
      `the zz daemon at ${client.server} names no actor for this token`,
    );
  return s.actor;
}

/**
 * Local-only tools (run_in_sandbox) are never served over HTTP: through a daemon, the CLI
 * runs them itself, in-process, as the actor the daemon sees for the token — never silently
 * as the git identity. Other tools go to the daemon.
 */
function withLocalTools(remote: ToolClient, cwd: string): ToolClient {
  let local: Promise<{ repo: ZzRepo; actor: string }> | null = null;
  return {
    ...remote,
    async call(tool, args, o) {
      const { registry, runTool } = await import('../tools/index.js');
      const def = registry.get(tool);
      if (!def?.local) return remote.call(tool, args, o);
      local ??= (async () => {
        const actor = await daemonActor(remote);
        const { ZzRepo } = await import('../core/zz-repo.js');
        return { repo: await ZzRepo.open(cwd, { key: remote.repoKey }), actor };
      })();
      const { repo, actor } = await local;
      return runTool(def, args, {
        repo,
        caller: { actor },
        local: true,
        ...(o?.signal ? { signal: o.signal } : {}),
      });
    },
    close() {
      remote.close();
      void local?.then((l) => l.repo.close()).catch(() => {});
    },
  };
}

/**
 * fetch() and a body read reject with a TypeError both for the network and for a mistake made
 * here; only one with a system cause (refused, reset, timed out, the other side closed) is
 * about the network.
 */
function unreachable(e: unknown, server: string): ZzError | null {
  const cause = (e as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (!cause || typeof cause.code !== 'string') return null;
  const err = new ZzError(
    'unavailable',
    `cannot reach the zz daemon at ${server}: ${cause.code}${typeof cause.message === 'string' ? ` (${cause.message})` : ''}`,
  );
  if (cause.code !== 'ECONNREFUSED') sentAnyway.add(err);
  return err;
}

// The `unavailable` errors of calls whose request may have reached the daemon: all but a
// refused connection (nothing is sent before the connection is accepted).
const sentAnyway = new WeakSet<ZzError>();

/** Whether the call that failed with `e` may have reached the daemon (and been acted on). */
export function requestSent(e: ZzError): boolean {
  return sentAnyway.has(e);
}

export function httpClient(
  server: string,
  repoKey: string,
  token: string,
  /** Where the token came from: a refused ZZ_TOKEN (an agent's) is not fixed by `zz login`. */
  source: 'ZZ_TOKEN' | 'login' = 'login',
): ToolClient {
  return {
    mode: 'daemon',
    repoKey,
    server,
    async call(tool, args, o) {
      // Failures on this machine say so: reported as the daemon's invalid_argument they sent
      // people looking for a refusal the daemon never made (nothing reached it).
      let payload: string;
      try {
        payload = JSON.stringify(args);
      } catch (e) {
        throw new ZzError(
          'invalid_argument',
          `the arguments of ${tool} cannot be encoded as JSON here, so nothing was sent to the daemon: ${(e as Error).message}`,
        );
      }
      let res: Response;
      try {
        res = await fetch(`${server}/api/repos/${repoKey}/tools/${encodeURIComponent(tool)}`, {
          method: 'POST',
          ...(o?.signal ? { signal: o.signal } : {}),
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: payload,
        });
      } catch (e) {
        throw (
          unreachable(e, server) ??
          new ZzError(
            'invalid_argument',
            `could not send the call to ${server} (a failure on this machine, not an answer of the daemon's): ${(e as Error).message}`,
          )
        );
      }
      // An answer cut off after its headers (a daemon restarting, a socket cut) was lost in
      // transit like one never begun: `unavailable`, which callers retry (with the same
      // idempotency key), not a 500 of the daemon's.
      const text = await res.text().catch((e: unknown) => {
        const lost = unreachable(e, server);
        if (lost) throw lost;
        return ''; // not JSON: answered below as before, by the status
      });
      let body: { result?: unknown; error?: string; code?: string; details?: unknown } | null;
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        body = null;
      }
      if (res.ok && body && typeof body.result === 'object' && body.result !== null)
        return body.result as Record<string, unknown>;
      const code: ErrorCode =
        body?.code && body.code in ERROR_CODES ? (body.code as ErrorCode) : 'internal';
      if (code === 'unauthorized' && source === 'ZZ_TOKEN') {
        throw new ZzError(
          code,
          `the daemon at ${server} refused ZZ_TOKEN (unknown or revoked): an agent gets a new token with \`zz agent create <name>\`; unset ZZ_TOKEN to act as your own login`,
          body?.details,
        );
      }
      throw new ZzError(code, body?.error ?? `HTTP ${res.status} from ${server}`, body?.details);
    },
    close() {},
  };
}
