import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';

// `zz serve --host H` where H cannot be listened on is the user's mistake, said in one line
// with exit 2, not an "internal error" with node's stack (getaddrinfo ENOTFOUND).

const { dir, cleanup } = makeRepo();
afterAll(() => cleanup());

describe('zz serve --host that cannot be bound', () => {
  it('refuses a name that does not resolve in one line, exit 2', async () => {
    const env = cliEnv();
    expect((await zz(dir, env, 'init')).code).toBe(0);
    const r = await zz(dir, env, 'serve', '--host', 'no-such-host.invalid', '--port', '0');
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      /^zz: cannot listen on no-such-host\.invalid: no such host \((?:ENOTFOUND|EAI_AGAIN)\); pass an address of this machine, e\.g\. --host 127\.0\.0\.1$/,
    );
    expect(r.stderr).not.toMatch(/internal|\n\s+at /);
  });
});

/** Runs `zz serve ARGS` until it has said where it serves, then stops it as Ctrl-C does. */
async function serveBriefly(env: NodeJS.ProcessEnv, ...args: string[]) {
  let stdout = '';
  let stderr = '';
  let ctrlC!: () => void;
  const stopSignal = new Promise<void>((r) => (ctrlC = r));
  const serving = run(['serve', '--port', '0', ...args], {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    env,
    cwd: dir,
    isTTY: false,
    stopSignal,
  });
  const deadline = Date.now() + 20_000;
  while (!stdout.includes('zz serving') && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  ctrlC();
  expect(await serving, stderr).toBe(0);
  const warnings = stderr.split('\n').filter((l) => l.startsWith('zz: warning:'));
  return { stdout, stderr, warnings };
}

describe('zz serve bound off loopback', { timeout: 150_000 }, () => {
  it('warns once on stderr: reachable from other machines, plain HTTP, how to keep it local', async () => {
    const env = cliEnv();
    expect((await zz(dir, env, 'init')).code).toBe(0);
    const { stdout, warnings } = await serveBriefly(env, '--host', '0.0.0.0');
    const port = /:(\d+)\n$/.exec(stdout)![1];
    expect(warnings).toEqual([
      `zz: warning: http://0.0.0.0:${port} is reachable from other machines, and tokens travel to it over plain HTTP, unencrypted; to keep it on this machine, serve on loopback (leave out --host, or pass --host 127.0.0.1) and reach it from elsewhere through an SSH tunnel or a TLS proxy`,
    ]);
  });

  it('says nothing of the kind on loopback', async () => {
    const env = cliEnv();
    expect((await zz(dir, env, 'init')).code).toBe(0);
    for (const host of [[], ['--host', '127.0.0.1'], ['--host', 'localhost'], ['--host', '::1']]) {
      expect((await serveBriefly(env, ...host)).warnings, host.join(' ')).toEqual([]);
    }
  });
});

describe('zz serve log lines', { timeout: 60_000 }, () => {
  it('are neutralised whole: a path naming terminal escapes and bidi marks is shown, not obeyed', async () => {
    const env = cliEnv();
    expect((await zz(dir, env, 'init')).code).toBe(0);
    // Another clone this machine lists (repos.json): one that is gone is skipped, in a log line.
    const hostile = '/nonexistent/\x1b]0;owned\x07\x1b[2J\u202egpj.exe\u2028next';
    mkdirSync(join(env.XDG_CONFIG_HOME!, 'zz'), { recursive: true });
    writeFileSync(
      join(env.XDG_CONFIG_HOME!, 'zz', 'repos.json'),
      JSON.stringify({ repos: [{ path: hostile }] }),
    );
    const { stdout, stderr } = await serveBriefly(env);
    const skipped = stderr.split('\n').find((l) => l.startsWith('skipping '));
    expect(skipped, stderr).toContain(
      '/nonexistent/\\x1b]0;owned\\x07\\x1b[2J<U+202E>gpj.exe<U+2028>next',
    );
    // Nothing of the set reaches the terminal raw, in any line zz serve wrote.
    expect(stdout + stderr).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u202e]/);
  });
});
