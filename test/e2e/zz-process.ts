import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Spawning the built `zz` for the end-to-end tests: a private config home per test (nothing
// touches the real ~/.config), every child tracked so that afterEach can kill what is left.

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const ZZ_MAIN = join(ROOT, 'dist', 'cli', 'main.js');

/** `npm test` builds first; a bare `vitest run test/e2e` on a fresh checkout builds here. */
export function ensureBuilt(): void {
  if (existsSync(ZZ_MAIN)) return;
  execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

const live = new Set<ChildProcessWithoutNullStreams>();
const dirs: string[] = [];

/** Kills every child still running (SIGKILL) and removes the private homes; for afterEach. */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...live].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          c.once('exit', () => resolve());
          c.kill('SIGKILL');
        }),
    ),
  );
  live.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** An environment with its own XDG config/cache home (and HOME), no ZZ_TOKEN, no colour. */
export function privateEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const home = mkdtempSync(join(tmpdir(), 'zz-e2e-home-'));
  dirs.push(home);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_CACHE_HOME: join(home, 'cache'),
    NO_COLOR: '1',
    ...extra,
  };
  delete env.ZZ_TOKEN;
  delete env.NODE_OPTIONS;
  if (extra.ZZ_TOKEN !== undefined) env.ZZ_TOKEN = extra.ZZ_TOKEN;
  return env;
}

export function spawnZz(cwd: string, env: NodeJS.ProcessEnv, args: string[]) {
  const child = spawn(process.execPath, [ZZ_MAIN, ...args], { cwd, env, stdio: 'pipe' });
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

export interface ZzResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  json(): any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Runs `zz ARGS` to completion. */
export function zz(
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: string[],
  opts: { timeoutMs?: number } = {},
): Promise<ZzResult> {
  const started = performance.now();
  const child = spawnZz(cwd, env, args);
  child.stdin.end();
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      resolve({
        code,
        signal,
        stdout,
        stderr,
        ms: performance.now() - started,
        json: () => {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`zz ${args.join(' ')}: stdout is not JSON:\n${stdout}\n${stderr}`);
          }
        },
      });
    });
  });
}

export interface Served {
  child: ChildProcessWithoutNullStreams;
  url: string;
  /** The repo keys the daemon printed (the checkout's first). */
  repoKeys: string[];
  /** Everything the daemon wrote to stderr so far (its request log). */
  log(): string;
  /** Settles with the exit code and signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Waits until the log has a line matching `re` (the log line follows the response). */
  waitForLog(re: RegExp, timeoutMs?: number): Promise<string>;
}

/** `zz serve --port 0` in the background, resolved once it printed its URL. */
export function serve(
  cwd: string,
  env: NodeJS.ProcessEnv,
  extra: string[] = [],
  timeoutMs = 20_000,
): Promise<Served> {
  const child = spawnZz(cwd, env, ['serve', '--port', '0', ...extra]);
  child.stdin.end();
  let out = '';
  let err = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
  const log = () => err;
  // The bound only ends a failing run (a loaded CI machine can hold a log line for seconds).
  const waitForLog = async (re: RegExp, ms = 30_000): Promise<string> => {
    const deadline = Date.now() + ms;
    for (;;) {
      const line = err.split('\n').find((l) => re.test(l));
      if (line) return line;
      if (Date.now() > deadline) throw new Error(`no daemon log line matches ${re}:\n${err}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`zz serve printed no URL within ${timeoutMs} ms:\n${out}\n${err}`));
    }, timeoutMs);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const m = /^zz serving (.+) at (http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, url: m[2]!, repoKeys: m[1]!.split(', '), log, exited, waitForLog });
      }
    });
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`zz serve exited (${code ?? signal}) before serving:\n${out}\n${err}`));
    });
  });
}

export interface ToolReply {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** POST /api/repos/<key>/tools/<tool> with fetch, as any HTTP client would. */
export async function callHttp(
  url: string,
  repoKey: string,
  tool: string,
  args: Record<string, unknown>,
  token?: string,
): Promise<ToolReply> {
  const res = await fetch(`${url}/api/repos/${repoKey}/tools/${tool}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: JSON.stringify(args),
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* left as text for the assertion message */
  }
  return { status: res.status, body };
}

export const median = (xs: readonly number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};
