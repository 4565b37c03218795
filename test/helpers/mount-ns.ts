import { spawn, spawnSync } from 'node:child_process';

// A child in a mount namespace of its own (`unshare -m`, root or a user namespace that allows
// it): `setup`, a shell line over "$1" (a mount), runs first, then the command. Used by the
// tests that need a real bind mount or a really full tmpfs without touching the host's mounts.

/** Whether `setup` (over `dir` as "$1") can run in a mount namespace here. */
export function canMountIn(setup: string, dir: string): boolean {
  return spawnSync('unshare', ['-m', 'sh', '-c', setup, 'sh', dir]).status === 0;
}

/**
 * Runs `setup` over `dir` ("$1"), then `argv`, in a mount namespace; resolves with the exit
 * code and the output.
 */
export function runInMountNs(
  setup: string,
  dir: string,
  argv: string[],
  cwd: string,
): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(
    'unshare',
    ['-m', 'sh', '-c', `${setup} && shift && exec "$@"`, 'sh', dir, ...argv],
    {
      cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, out, err })));
}
