import { ERROR_CODES, ZzError, type ErrorCode } from '../errors.js';
import { gitUserEmail, locateRepository } from '../core/identity.js';
import { readCredentials, normalizeServer } from './credentials.js';

// How the CLI reaches the tools: through the checkout's running daemon when there is one
// (found via <gitdir>/zz/daemon.json), otherwise in-process over the same runTool() path,
// acting as the local git identity. Heavy modules load only on the path that needs them.

export interface ToolClient {
  mode: 'daemon' | 'in-process';
  repoKey: string;
  server: string | null;
  /** The actor in-process calls act as (daemon calls act as their token's actor). */
  actor?: string;
  call(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
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
      const token = opts.env.ZZ_TOKEN || (await readCredentials(opts.env)).servers[server]?.token;
      if (!token) {
        throw new ZzError(
          'unauthorized',
          `zz serve is running at ${server}; run \`zz login\` to get a token for it`,
        );
      }
      return httpClient(server, repoKey, token);
    }
  }
  const [{ ZzRepo }, { registry, runTool }] = await Promise.all([
    import('../core/index.js'),
    import('../tools/index.js'),
  ]);
  const repo = await ZzRepo.open(opts.cwd, { key: repoKey });
  let actor: string;
  if (opts.env.ZZ_TOKEN) {
    // A token names its actor even without a daemon: verify it against this machine's store.
    const { TokenStore } = await import('../core/token-store.js');
    const who = await new TokenStore(found.gitdir).verify(opts.env.ZZ_TOKEN);
    if (!who)
      throw new ZzError('unauthorized', 'ZZ_TOKEN is not a valid token for this repository');
    actor = who.actor;
  } else {
    actor = await gitUserEmail(opts.cwd, opts.env);
  }
  return {
    mode: 'in-process',
    repoKey,
    server: null,
    actor,
    call: (tool, args) =>
      runTool(registry.require(tool), args, { repo, caller: { actor }, local: true }),
    close: () => repo.close(),
  };
}

export function httpClient(server: string, repoKey: string, token: string): ToolClient {
  return {
    mode: 'daemon',
    repoKey,
    server,
    async call(tool, args) {
      let res: Response;
      try {
        res = await fetch(`${server}/api/repos/${repoKey}/tools/${encodeURIComponent(tool)}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(args),
        });
      } catch (e) {
        throw new ZzError(
          'unavailable',
          `cannot reach the zz daemon at ${server}: ${(e as Error).message}`,
        );
      }
      const body = (await res.json().catch(() => null)) as {
        result?: unknown;
        error?: string;
        code?: string;
        details?: unknown;
      } | null;
      if (res.ok && body && typeof body.result === 'object' && body.result !== null)
        return body.result as Record<string, unknown>;
      const code: ErrorCode =
        body?.code && body.code in ERROR_CODES ? (body.code as ErrorCode) : 'internal';
      throw new ZzError(code, body?.error ?? `HTTP ${res.status} from ${server}`, body?.details);
    },
    close() {},
  };
}
