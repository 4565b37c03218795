import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

// `zz` as a real process on real pipes, from the sources (through tsx): for what only shows
// across a process boundary (a pipe nobody reads, exit statuses, signals).

const MAIN = join(process.cwd(), 'src/cli/main.ts');
const TSX = pathToFileURL(join(process.cwd(), 'node_modules/tsx/dist/loader.mjs')).href;

/** `zz ARGS` spawned in `cwd`, its three stdio streams pipes. */
export function spawnZzSource(
  cwd: string,
  env: NodeJS.ProcessEnv,
  args: string[],
): ChildProcessWithoutNullStreams {
  return spawn(process.execPath, ['--import', TSX, MAIN, ...args], {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}
