import { join } from 'node:path';
import type { ZzRepo } from '../core/index.js';
import type { AutoSyncOptions } from '../core/sync/auto-sync.js';
import type { ServedSearch } from '../core/ladder/search-sync.js';
import type { TokenStore } from '../core/token-store.js';
import { createApp, DEFAULT_HOST, DEFAULT_PORT, listen, type RepoHandler } from '../http/index.js';
import { DEFAULT_PORT_TRIES } from '../local/index.js';
import { registry as defaultRegistry, type Registry, type ToolServices } from '../tools/index.js';
import { createDashboard } from '../web/index.js';
import { startMaintenance, type Maintenance } from './maintenance.js';
import { lazyMcpHandler } from './mcp-mount.js';
import { openServedRepos } from './served-repos.js';

// `zz serve`: the composition root. Opens the served repositories (each with its own token
// store and daemon.json), starts the Ladder search and its ref watcher, mounts MCP on the HTTP
// app and listens. http/ and mcp/ never see each other: they meet here, through the app's hooks.

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
  /** Serves POST /api/repos/<o>/<r>/mcp; by default the MCP front end is loaded; null: none. */
  mcpHandler?: RepoHandler | null;
  services?: Omit<ToolServices, 'repos'>;
  heartbeatMs?: number;
  /** Open event streams per actor and in total (http/app.ts has the defaults). */
  maxStreamsPerPerson?: number;
  maxStreams?: number;
  /** Where the Ladder search index is persisted; default $XDG_CACHE_HOME/zz or ~/.cache/zz. */
  cacheDir?: string;
  /**
   * Watch the served repositories' refs to keep the Ladder search current (default true);
   * false as where inotify is unavailable: a search then catches up when it is asked.
   */
  watchRefs?: boolean;
  /** Background `git gc --auto`: commits between runs, and the slow timer (see maintenance.ts). */
  gc?: { everyCommits?: number; everyMs?: number };
  /** Syncing with the zz remote by itself (DESIGN §7); false: never. */
  sync?: AutoSyncOptions | false;
  /**
   * The user's environment (`zz serve` passes its own): commits are signed with the person's
   * key under its config dir, made there when the person has none (DESIGN §7). Without it
   * (embedders, tests) the process's environment is read and no key is made.
   */
  signingEnv?: NodeJS.ProcessEnv;
}

export interface Daemon {
  url: string;
  port: number;
  repos: Map<string, ZzRepo>;
  /** The token store of the checkout the daemon was started in. */
  tokens: TokenStore;
  /** The token store of a served repository (by key); each repo honours only its own tokens. */
  tokensFor(key: string): TokenStore | undefined;
  /** The background `git gc --auto` runs (idle() for tests). */
  maintenance: Maintenance;
  /** Stops accepting, finishes in-flight requests, closes the repositories, removes daemon.json. */
  close(): Promise<void>;
}

export async function startDaemon(opts: DaemonOptions): Promise<Daemon> {
  const log = opts.log ?? (() => {});
  const served = await openServedRepos({
    cwd: opts.cwd,
    ...(opts.repos ? { repos: opts.repos } : {}),
    ...(opts.reposFile ? { reposFile: opts.reposFile } : {}),
    log,
  });
  const repos = new Map([...served.byKey].map(([k, s]) => [k, s.repo]));
  const tokenStores = new Map([...served.byKey].map(([k, s]) => [k, s.tokens]));
  let ladder: ServedSearch | null = null;
  let autoSync: { close(): Promise<void> } | null = null;
  let server: Awaited<ReturnType<typeof listen>> | null = null;
  try {
    const registry = opts.registry ?? defaultRegistry;
    // One Ladder search for every served repo, kept current on our own ladder commits and when
    // refs/zz/ladder moves from outside. Loaded here only: plain CLI calls import this file too.
    const { startServedSearch } = await import('../core/ladder/search-sync.js');
    const given = opts.services?.search;
    ladder = await startServedSearch(repos, {
      log,
      ...(given ? { search: given } : {}),
      ...(opts.cacheDir ? { cacheDir: opts.cacheDir } : {}),
      ...(opts.watchRefs === false ? { watch: false } : {}),
    });
    // Persisted shards load in milliseconds; a large Ladder indexed from scratch finishes in
    // the background rather than holding up the listener.
    await Promise.race([ladder.ready, new Promise((r) => setTimeout(r, 2000).unref())]);
    const services: ToolServices = {
      ...opts.services,
      search: ladder.search,
      searchCurrent: ladder.sync.refresh,
      repos,
      // token_list / token_revoke over HTTP and MCP alike: each repo's own store.
      tokensFor: (key) => tokenStores.get(key),
    };
    const { startAutoSync, signWithPersonKey } = await import('../core/sync/index.js');
    for (const r of repos.values()) {
      log(await signWithPersonKey(r, opts.signingEnv, { makeKey: opts.signingEnv !== undefined }));
    }
    autoSync = opts.sync === false ? null : startAutoSync(repos, { log, ...opts.sync });
    const mcpHandler =
      opts.mcpHandler === undefined
        ? lazyMcpHandler({
            registry,
            services,
            log,
            ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
          })
        : opts.mcpHandler;
    server = await listen(
      (authority) => {
        // The dashboard: its page and cookie login, checked against each repo's own tokens.
        const web = createDashboard({
          host: authority,
          verifyToken: async (token, key) => (await tokenStores.get(key)?.verify(token)) ?? null,
          hasRepo: (key) => repos.has(key),
          tokenLive: async (id, actor, key) =>
            (await tokenStores.get(key)?.isLive(id, actor)) ?? false,
          stateDir: join(served.primary.repo.git!.gitdir, 'zz'),
        });
        return createApp({
          repos,
          tokens: (repo) => tokenStores.get(repo.key)!,
          registry,
          host: authority,
          log,
          services,
          ...(opts.maxBodyBytes ? { maxBodyBytes: opts.maxBodyBytes } : {}),
          ...(mcpHandler ? { mcpHandler } : {}),
          ...(opts.heartbeatMs ? { heartbeatMs: opts.heartbeatMs } : {}),
          ...(opts.maxStreamsPerPerson ? { maxStreamsPerPerson: opts.maxStreamsPerPerson } : {}),
          ...(opts.maxStreams ? { maxStreams: opts.maxStreams } : {}),
          pageHandler: web.handle,
          sessionCaller: web.sessionCaller,
        });
      },
      // Without a port of the caller's, the default and the next ones: a second checkout's
      // `zz serve` failed with "port 7433 … in use" in a user's first hour.
      opts.port === undefined
        ? { host: opts.host ?? DEFAULT_HOST, port: DEFAULT_PORT, tryNext: DEFAULT_PORT_TRIES }
        : { host: opts.host ?? DEFAULT_HOST, port: opts.port },
    );
    const { url, port } = server;
    const startedAt = new Date().toISOString();
    // `repo` lets the CLI's fast path address its checkout without asking git for its key.
    for (const [key, s] of served.byKey)
      await s.claim.publish({
        url,
        started_at: startedAt,
        repo: key,
      });

    const maintenance = startMaintenance(repos, { log, ...opts.gc });

    const listening = server;
    let closing: Promise<void> | null = null;
    const close = () =>
      (closing ??= (async () => {
        try {
          // daemon.json goes first: while it names this process, CLIs trust its port with
          // their tokens, and a closed listener lets anyone else bind that port.
          for (const s of served.byKey.values()) await s.claim.release().catch(() => {});
          await listening.close();
          await maintenance.close();
          await autoSync?.close();
          for (const t of tokenStores.values()) await t.flush();
          await ladder?.close();
        } finally {
          await served.close();
        }
      })());
    return {
      url,
      port,
      repos,
      tokens: served.primary.tokens,
      tokensFor: (key) => tokenStores.get(key),
      maintenance,
      close,
    };
  } catch (e) {
    await autoSync?.close().catch(() => {});
    // A failure after listening (daemon.json unwritable, say) must not leave the port bound.
    await server?.close().catch(() => {});
    await ladder?.close().catch(() => {});
    await served.close();
    throw e;
  }
}
