import { join } from 'node:path';
import { run } from '../../src/cli/index.js';
import { tempDir } from './temp-dirs.js';

// Runs the CLI in-process with captured IO and a private config home (removed when the test
// file ends).
export function cliEnv(): NodeJS.ProcessEnv {
  const home = tempDir('zz-home-');
  return {
    ...process.env,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_CACHE_HOME: join(home, 'cache'),
    NO_COLOR: '1',
    ZZ_TOKEN: '',
  };
}

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
