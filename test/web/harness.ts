import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { initRepo } from '../../src/core/index.js';
import { startDaemon, type Daemon } from '../../src/daemon/index.js';
import { makeRepo } from '../helpers/temp-repo.js';

// A real daemon on 127.0.0.1 (port 0) serving a fresh repository with the dashboard mounted,
// plus the system Chromium driven by playwright-core. Nothing is downloaded.

export const OWNER = 'owner@example.com';
export const CHROMIUM = process.env.ZZ_CHROMIUM ?? '/usr/bin/chromium';

export interface WebDaemon {
  dir: string;
  daemon: Daemon;
  key: string;
  url: string;
  /** Every line the daemon logged. */
  logs: string[];
  /** A bearer token for actor (minted in the daemon's token store). */
  token(actor: string, name?: string): Promise<string>;
  /** Calls a tool over HTTP as the token's actor, like any other client. */
  call(
    token: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<Record<string, unknown>>;
  /** A one-time login URL, as `zz dashboard` prints it. */
  loginUrl(token: string): Promise<string>;
  /** Stops the daemon; keepRepo leaves the repository for a restart. */
  close(opts?: { keepRepo?: boolean }): Promise<void>;
}

export async function startWebDaemon(
  opts: { dir?: string; port?: number; repos?: string[] } = {},
): Promise<WebDaemon> {
  const made = opts.dir ? null : makeRepo('zz-web-');
  const dir = opts.dir ?? made!.dir;
  const cache = mkdtempSync(join(tmpdir(), 'zz-web-cache-'));
  const logs: string[] = [];
  const daemon = await startDaemon({
    cwd: dir,
    port: opts.port ?? 0,
    reposFile: join(cache, 'none.json'),
    cacheDir: cache,
    mcpHandler: null,
    repos: opts.repos ?? [],
    log: (line) => logs.push(line),
  });
  const key = [...daemon.repos.keys()][0]!; // the checkout it started in comes first
  const repo = daemon.repos.get(key)!;
  await initRepo(repo, { owner: OWNER, default_branch: 'main' });
  const call = async (token: string, tool: string, args: Record<string, unknown>) => {
    const res = await fetch(`${daemon.url}/api/repos/${key}/tools/${tool}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(args),
    });
    const body = (await res.json()) as { result?: Record<string, unknown>; error?: string };
    if (!res.ok) throw new Error(`${tool}: ${res.status} ${body.error}`);
    return body.result!;
  };
  return {
    dir,
    daemon,
    key,
    url: daemon.url,
    logs,
    token: async (actor, name = 'login') => (await daemon.tokens.create(actor, name)).token,
    call,
    async loginUrl(token) {
      const res = await fetch(`${daemon.url}/auth/code`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ repo: key }),
      });
      const body = (await res.json()) as { path: string };
      if (!res.ok) throw new Error(`auth/code: ${res.status} ${JSON.stringify(body)}`);
      return daemon.url + body.path;
    },
    async close({ keepRepo = false } = {}) {
      await daemon.close();
      rmSync(cache, { recursive: true, force: true });
      if (!keepRepo) made?.cleanup();
    },
  };
}

export async function launchChromium(): Promise<Browser> {
  // playwright launches with a fresh temporary profile of its own. Without the
  // background-networking flags Chromium's own connections stall in a sandbox.
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
