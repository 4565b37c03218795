import { run } from '../../src/cli/index.js';

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
