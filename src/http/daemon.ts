import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { ZzRepo } from '../core/index.js';
import { isAlive, TokenStore } from '../core/token-store.js';
import { ZzError } from '../errors.js';
import { registry as defaultRegistry, type Registry, type ToolServices } from '../tools/index.js';
import { createApp, type McpHandler, type WebFrontEnd } from './app.js';
import { DEFAULT_HOST, DEFAULT_PORT, listen } from './server.js';

// `zz serve`: one daemon per checkout, found by others through <gitdir>/zz/daemon.json. The
// file is created exclusively before the port is bound, so two starts cannot both win; a file
// left by a dead process is taken over.

export interface DaemonOptions {
  cwd: string;
  port?: number;
  host?: string;
  /** More checkouts to serve (an error if one cannot be opened). */
  repos?: string[];
  /** Known clones, `{repos: [{path}]}`; default $XDG_CONFIG_HOME/zz/repos.json. Missing ones are skipped. */
  reposFile?: string;
  log?: (line: string) => void;
  registry?: Registry;
  maxBodyBytes?: number;
  /** Serves POST /api/repos/<o>/<r>/mcp; by default the MCP front end is loaded. */
  mcpHandler?: McpHandler | null;
  services?: Omit<ToolServices, 'repos'>;
  heartbeatMs?: number;
  /** Where the Ladder search index is persisted; default $XDG_CACHE_HOME/zz or ~/.cache/zz. */
  cacheDir?: string;
  /** Mounts the dashboard (src/web's createDashboard, passed in by the caller: http cannot import web). */
  web?: (deps: WebDeps) => WebFrontEnd;
}

export interface WebDeps {
  host: string;
  verifyToken(token: string, repo: string): Promise<{ actor: string } | null>;
  hasRepo(repo: string): boolean;
  stateDir: string;
}

export interface Daemon {
  url: string;
  port: number;
  repos: Map<string, ZzRepo>;
  tokens: TokenStore;
  /** Stops accepting, finishes in-flight requests, closes the repositories, removes daemon.json. */
  close(): Promise<void>;
}

export interface DaemonInfo {
  pid: number;
  url: string;
  started_at?: string;
  /** The key of the checkout the daemon was started in. */
  repo?: string;
}

const daemonFile = (gitdir: string) => join(gitdir, 'zz', 'daemon.json');

async function readInfoFile(
  file: string,
): Promise<{ pid: number; url: string | null; started_at?: string } | null> {
  try {
    const v = JSON.parse(await fsp.readFile(file, 'utf8')) as {
      pid?: unknown;
      url?: unknown;
      started_at?: unknown;
    };
    if (typeof v.pid !== 'number' || !Number.isInteger(v.pid) || v.pid <= 0) return null;
    return {
      pid: v.pid,
      url: typeof v.url === 'string' ? v.url : null,
      ...(typeof v.started_at === 'string' ? { started_at: v.started_at } : {}),
    };
  } catch {
    return null;
  }
}

// A live pid is not proof: after a reboot or in a container the pid of a dead daemon can
// belong to another process. The daemon must also answer /healthz with that pid.
async function answers(url: string, pid: number): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1500) });
    const body = (await res.json()) as { pid?: unknown };
    return res.ok && body.pid === pid;
  } catch {
    return false;
  }
}

/** The running daemon of a repository (by its common git dir), or null. */
export async function readDaemonInfo(gitdir: string): Promise<DaemonInfo | null> {
  const info = await readInfoFile(daemonFile(gitdir));
  if (!info || info.url === null || !isAlive(info.pid)) return null;
  if (!(await answers(info.url, info.pid))) return null;
  return {
    pid: info.pid,
    url: info.url,
    ...(info.started_at ? { started_at: info.started_at } : {}),
  };
}

/** Creates daemon.json exclusively (taking over one left by a dead process). */
async function claimDaemonFile(gitdir: string, startedAt: string): Promise<string> {
  const file = daemonFile(gitdir);
  await fsp.mkdir(join(gitdir, 'zz'), { recursive: true, mode: 0o700 });
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      const fh = await fsp.open(file, 'wx', 0o600);
      try {
        await fh.writeFile(
          JSON.stringify({ pid: process.pid, url: null, started_at: startedAt }) + '\n',
        );
      } finally {
        await fh.close();
      }
      return file;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const text = await fsp.readFile(file, 'utf8').catch(() => null);
    if (text === null) continue;
    const info = await readInfoFile(file);
    const live =
      info !== null &&
      isAlive(info.pid) &&
      // A file that names a URL must be answered there; one without is still starting.
      (info.url === null || (await answers(info.url, info.pid)));
    if (info && live) {
      throw new ZzError(
        'conflict',
        info.url
          ? `zz serve is already running for this repository at ${info.url} (pid ${info.pid})`
          : `zz serve is already starting for this repository (pid ${info.pid})`,
        { url: info.url, pid: info.pid },
      );
    }
    // Dead owner (or unreadable file): remove it, unless someone replaced it meanwhile.
    const again = await fsp.readFile(file, 'utf8').catch(() => null);
    if (again === text) await fsp.rm(file, { force: true });
  }
  throw new ZzError('conflict', `could not take ${file}; another zz serve is starting`);
}

async function writeDaemonFile(file: string, info: DaemonInfo): Promise<void> {
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, JSON.stringify(info) + '\n', { mode: 0o600 });
  await fsp.rename(tmp, file);
}

export function defaultReposFile(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'zz', 'repos.json');
}

async function reposFromFile(file: string, log: (line: string) => void): Promise<string[]> {
  let text: string;
  try {
    text = await fsp.readFile(file, 'utf8');
  } catch {
    return [];
  }
  try {
    const doc = JSON.parse(text) as { repos?: Array<{ path?: unknown }> };
    return (Array.isArray(doc.repos) ? doc.repos : []).flatMap((r) =>
      typeof r?.path === 'string' ? [r.path] : [],
    );
  } catch {
    log(`${file}: not valid JSON; ignoring it`);
    return [];
  }
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const log = opts.log ?? (() => {});
  const primary = await ZzRepo.open(opts.cwd);
  const gitdir = primary.git!.gitdir;
  const repos = new Map<string, ZzRepo>([[primary.key, primary]]);
  const closeRepos = () => {
    for (const r of repos.values()) r.close();
  };
  let file: string;
  try {
    file = await claimDaemonFile(gitdir, new Date().toISOString());
  } catch (e) {
    closeRepos();
    throw e;
  }
  let ladder: { search: unknown; ready: Promise<void>; close(): Promise<void> } | null = null;
  try {
    const seen = new Set([gitdir]);
    const add = async (path: string, strict: boolean) => {
      let repo: ZzRepo;
      try {
        repo = await ZzRepo.open(resolve(opts.cwd, path));
      } catch (e) {
        if (strict) throw e;
        log(`skipping ${path}: ${(e as Error).message}`);
        return;
      }
      const dir = repo.git!.gitdir;
      if (seen.has(dir) || repos.has(repo.key)) {
        if (!seen.has(dir))
          log(`skipping ${path}: another served repository already has the key ${repo.key}`);
        repo.close();
        return;
      }
      seen.add(dir);
      repos.set(repo.key, repo);
    };
    for (const p of opts.repos ?? []) await add(p, true);
    for (const p of await reposFromFile(opts.reposFile ?? defaultReposFile(), log))
      await add(p, false);

    const tokens = new TokenStore(gitdir, { log });
    const registry = opts.registry ?? defaultRegistry;
    // One Ladder search for every served repo, kept current on our own ladder commits and when
    // refs/zz/ladder moves from outside. Loaded here only: plain CLI calls import this file too.
    const { startServedSearch } = await import('../core/ladder/search-sync.js');
    const given = opts.services?.search as
      NonNullable<Parameters<typeof startServedSearch>[1]>['search'] | undefined;
    ladder = await startServedSearch(repos, {
      log,
      ...(given ? { search: given } : {}),
      ...(opts.cacheDir ? { cacheDir: opts.cacheDir } : {}),
    });
    // Persisted shards load in milliseconds; a large Ladder indexed from scratch finishes in
    // the background rather than holding up the listener.
    await Promise.race([ladder.ready, new Promise((r) => setTimeout(r, 2000).unref())]);
    const services: ToolServices = {
      ...opts.services,
      search: ladder.search,
      repos,
      // One store serves every repo until tokens are kept per repository.
      tokensFor: (key) => (repos.has(key) ? tokens : undefined),
    };
    let mcpHandler = opts.mcpHandler ?? undefined;
    if (opts.mcpHandler === undefined) {
      // Loaded on the first MCP request: the SDK is large and most daemons never serve MCP.
      let loaded: Promise<McpHandler> | null = null;
      const load = async (): Promise<McpHandler> => {
        const { createMcpHttpHandler } = await import('../mcp/index.js');
        return createMcpHttpHandler({
          registry,
          services,
          ...(opts.maxBodyBytes ? { maxRequestBodySize: opts.maxBodyBytes } : {}),
          onError: (e, tool) => log(`mcp ${tool}: ${(e as Error).stack ?? String(e)}`),
        });
      };
      mcpHandler = async (req, ctx) => {
        loaded ??= load().catch((e: unknown) => {
          loaded = null;
          throw e;
        });
        return (await loaded)(req, ctx);
      };
    }
    const server = await listen(
      (authority) =>
        createApp({
          ...(opts.web
            ? {
                web: opts.web({
                  host: authority,
                  verifyToken: (token) => tokens.verify(token),
                  hasRepo: (key) => repos.has(key),
                  stateDir: join(gitdir, 'zz'),
                }),
              }
            : {}),
          repos,
          tokens,
          registry,
          host: authority,
          log,
          services,
          ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
          ...(mcpHandler ? { mcpHandler } : {}),
          ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}),
        }),
      { host: opts.host ?? DEFAULT_HOST, port: opts.port ?? DEFAULT_PORT },
    );
    const startedAt = new Date().toISOString();
    // `repo` lets the CLI's fast path address this checkout without asking git for its key.
    await writeDaemonFile(file, {
      pid: process.pid,
      url: server.url,
      started_at: startedAt,
      repo: primary.key,
    });

    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        try {
          await server.close();
          await tokens.flush();
          await ladder?.close();
        } finally {
          closeRepos();
          const info = await readInfoFile(file);
          if (info?.pid === process.pid && info.url === server.url)
            await fsp.rm(file, { force: true });
        }
      })());
    return { url: server.url, port: server.port, repos, tokens, close };
  } catch (e) {
    await ladder?.close().catch(() => {});
    closeRepos();
    await fsp.rm(file, { force: true });
    throw e;
  }
}
