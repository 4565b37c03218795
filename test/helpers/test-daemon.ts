import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { initRepo, type ZzRepo } from '../../src/core/index.js';
import { startDaemon, type Daemon, type DaemonOptions } from '../../src/daemon/index.js';
import { tempDir } from './temp-dirs.js';
import { makeRepo } from './temp-repo.js';

// The one way tests start a real daemon: on 127.0.0.1, port 0, serving a checkout, with no
// served-repos file of the user's, its own cache directory and (unless asked) no MCP endpoint.

/** Options for a test daemon in `dir`: nothing of the user's is read or written. */
export function daemonOptions(dir: string, extra: Partial<DaemonOptions> = {}): DaemonOptions {
  return { cwd: dir, port: 0, reposFile: join(dir, 'none.json'), mcpHandler: null, ...extra };
}

export interface TestDaemon {
  /** The checkout the daemon started in. */
  dir: string;
  daemon: Daemon;
  /** That checkout's repo key and its ZzRepo as the daemon serves it. */
  key: string;
  repo: ZzRepo;
  url: string;
  /** Every line the daemon logged. */
  logs: string[];
  /** A bearer token for `actor`, minted in the daemon's token store. */
  token(actor: string, name?: string): Promise<string>;
  /** Stops the daemon and removes the cache; keepRepo leaves the checkout for a restart. */
  close(opts?: { keepRepo?: boolean }): Promise<void>;
}

/**
 * A daemon serving `dir` (or a fresh repository), initialised with `owner` as its owner
 * (`owner: null` leaves it uninitialised). `daemon` options override the defaults.
 */
export async function startTestDaemon(
  opts: {
    dir?: string;
    prefix?: string;
    owner?: string | null;
    daemon?: Partial<DaemonOptions>;
  } = {},
): Promise<TestDaemon> {
  const made = opts.dir ? null : makeRepo(opts.prefix ?? 'zz-test-');
  const dir = opts.dir ?? made!.dir;
  const cache = tempDir(`${opts.prefix ?? 'zz-test-'}cache-`);
  const logs: string[] = [];
  const daemon = await startDaemon(
    daemonOptions(dir, {
      reposFile: join(cache, 'none.json'),
      cacheDir: cache,
      log: (line) => logs.push(line),
      ...opts.daemon,
    }),
  );
  const key = [...daemon.repos.keys()][0]!; // the checkout it started in comes first
  const repo = daemon.repos.get(key)!;
  const owner = opts.owner === undefined ? 'owner@example.com' : opts.owner;
  if (owner !== null) await initRepo(repo, { owner, default_branch: 'main' });
  return {
    dir,
    daemon,
    key,
    repo,
    url: daemon.url,
    logs,
    token: async (actor, name = 'login') => (await daemon.tokens.create(actor, name)).token,
    async close({ keepRepo = false } = {}) {
      await daemon.close();
      rmSync(cache, { recursive: true, force: true });
      if (!keepRepo) made?.cleanup();
    },
  };
}
