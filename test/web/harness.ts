import {
  chromium,
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  type Page,
} from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { DaemonOptions } from '../../src/daemon/index.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';

// A real daemon on 127.0.0.1 (port 0) serving a fresh repository with the dashboard mounted,
// plus the system Chromium driven by playwright-core. Nothing is downloaded.

export const OWNER = 'owner@example.com';
export const CHROMIUM = process.env.ZZ_CHROMIUM ?? '/usr/bin/chromium';

export interface WebDaemon extends TestDaemon {
  /** Calls a tool over HTTP as the token's actor, like any other client. */
  call(
    token: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<Record<string, unknown>>;
  /** A one-time login URL, as `zz dashboard` prints it. */
  loginUrl(token: string): Promise<string>;
}

export async function startWebDaemon(
  opts: { dir?: string; port?: number; repos?: string[]; daemon?: Partial<DaemonOptions> } = {},
): Promise<WebDaemon> {
  const t = await startTestDaemon({
    ...(opts.dir ? { dir: opts.dir } : {}),
    prefix: 'zz-web-',
    owner: OWNER,
    daemon: { port: opts.port ?? 0, repos: opts.repos ?? [], ...opts.daemon },
  });
  const { daemon, key } = t;
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
    ...t,
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
  };
}

/**
 * Opens a one-time login link in `page` and confirms the sign-in (the page asks whom a link
 * signs in as, signed out too: login CSRF), then waits for the dashboard.
 */
export async function openLoginLink(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.getByRole('button', { name: /^(Sign in as|Switch to) / }).click();
  await page.locator('.top .me').waitFor();
}

/** A one-time login code's fragment value. */
export const codeOf = (url: string) => new URL(url).hash.replace('#code=', '');

/**
 * Signs in over HTTP as the dashboard page does (confirmed), giving the headers the page then
 * sends: the session cookie and its page key (X-ZZ-Session). `extra` goes into the request.
 */
export async function signInHeaders(
  w: WebDaemon,
  token: string,
  extra: Record<string, string> = {},
): Promise<{ cookie: string; 'x-zz-session': string }> {
  const res = await fetch(`${w.url}/auth/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: w.url, ...extra },
    body: JSON.stringify({ code: codeOf(await w.loginUrl(token)), switch: true }),
  });
  const body = (await res.json()) as { session_key?: string };
  if (res.status !== 200) throw new Error(`auth/session: ${res.status} ${JSON.stringify(body)}`);
  const set = res.headers.get('set-cookie')!;
  return { cookie: set.slice(0, set.indexOf(';')), 'x-zz-session': body.session_key! };
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

/**
 * For a test file: Chromium launched once; `newContext` opening a fresh browser context (its
 * own cookies) and `signedIn` one signed in with a one-time code, its page errors collected
 * for the test to check; contexts, and whatever a test pushes onto `cleanups`, are closed after
 * each test.
 */
export function useDashboardBrowser(): {
  cleanups: Array<() => unknown>;
  newContext(opts?: BrowserContextOptions): Promise<BrowserContext>;
  signedIn(
    w: WebDaemon,
    token: string,
    path?: string,
    viewport?: { width: number; height: number },
  ): Promise<Page & { errors: string[] }>;
} {
  let browser: Browser | undefined;
  const cleanups: Array<() => unknown> = [];
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const newContext = async (opts?: BrowserContextOptions) => {
    const context = await browser!.newContext(opts);
    cleanups.push(() => context.close());
    return context;
  };
  return {
    cleanups,
    newContext,
    async signedIn(w, token, path = '', viewport = { width: 1280, height: 800 }) {
      const context = await newContext({ viewport });
      const page = (await context.newPage()) as Page & { errors: string[] };
      page.errors = [];
      page.on('pageerror', (e) => page.errors.push(String(e)));
      await openLoginLink(page, await w.loginUrl(token));
      if (path) await page.goto(`${w.url}/${path}`);
      return page;
    },
  };
}
