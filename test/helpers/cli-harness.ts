import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as FastPath from '../../src/cli/fast-path.js';
import { run } from '../../src/cli/index.js';
import { version } from '../../src/cli/version.js';
import type * as Background from '../../src/local/background.js';
import { settleBackground } from '../../src/local/background.js';
import { ensureBuilt, ROOT } from '../e2e/zz-process.js';

// Runs the CLI in-process with captured IO and a private config home (removed when the test
// file ends).
export { cliEnv } from './cli-env.js';

export async function zz(cwd: string, env: NodeJS.ProcessEnv, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, {
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    env,
    cwd,
    isTTY: false,
  });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

/** A module of the built zz (dist/), typed as its source. */
async function built<T>(path: string): Promise<T> {
  ensureBuilt();
  return (await import(pathToFileURL(join(ROOT, 'dist', path)).href)) as T;
}

/**
 * What the built zz does with `args` (src/cli/main.ts), in this process: `--version`, then the
 * fast path straight to a running daemon, then the full command table, then the background
 * writes settled. The fast path is the built one (dist/, which `npm test` rebuilds when
 * stale): it needs the built tool manifest, and from src/ it never runs. Answers as
 * test/e2e/zz-process.ts's zz() does, for tests of what commands say and do rather than of the
 * process: a spawn costs 0.6-1 s of CPU on a loaded machine; exit by signal, piped output and
 * flushing are test/e2e's. Keep this in step with main.ts.
 */
export async function zzMain(cwd: string, env: NodeJS.ProcessEnv, args: string[]) {
  const [{ tryFastPath }, builtBackground] = await Promise.all([
    built<typeof FastPath>('cli/fast-path.js'),
    built<typeof Background>('local/background.js'),
  ]);
  const started = performance.now();
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: (s: string) => void (stdout += s),
    stderr: (s: string) => void (stderr += s),
    env,
    cwd,
    isTTY: false,
  };
  let code: number;
  if (args.length === 1 && args[0] === '--version') {
    io.stdout(`${version()}\n`);
    code = 0;
  } else {
    const fast = await tryFastPath(args, io);
    code = typeof fast === 'number' ? fast : await run(fast ?? args, io);
  }
  await Promise.all([settleBackground(), builtBackground.settleBackground()]);
  return {
    code: code as number | null,
    signal: null as NodeJS.Signals | null,
    stdout,
    stderr,
    ms: performance.now() - started,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    json(): any {
      try {
        return JSON.parse(stdout);
      } catch {
        throw new Error(`zz ${args.join(' ')}: stdout is not JSON:\n${stdout}\n${stderr}`);
      }
    },
  };
}
