import type * as ChildProcesses from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { runInSandbox } from '../../src/git/sandbox.js';
import { runGitSync } from '../helpers/gen-repo.js';

// The pipe grace of run_in_sandbox (PIPE_GRACE_MS): after the command exits, its pipes are
// destroyed if they have not ended within a second. Output the command wrote just before it
// exited, still in the pipe when the exit is handled, must survive an event loop that stalls
// past the grace right then: the timer fires before the poll phase that would read it.
//
// What is made deterministic here (and would otherwise depend on the order in which one
// epoll batch hands over the exit and the pipe's data): the pipes are not read while the
// command runs (their handles stopped), so its output waits in the kernel; at the exit the
// handles read again and the loop is blocked for longer than the grace.

const hook = vi.hoisted(() => ({ onSpawn: null as ((c: ChildProcess) => void) | null }));
vi.mock('node:child_process', async (importOriginal) => {
  const real = await importOriginal<typeof ChildProcesses>();
  return {
    ...real,
    spawn: (...args: Parameters<typeof real.spawn>) => {
      const child = real.spawn(...args);
      hook.onSpawn?.(child);
      return child;
    },
  };
});

type Handle = { readStop(): number; readStart(): number };
const handleOf = (s: unknown) => (s as { _handle: Handle })._handle;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'zz-sandbox-grace-'));
  runGitSync(dir, ['init', '-q', '-b', 'main']);
  runGitSync(dir, ['config', 'user.name', 'T']);
  runGitSync(dir, ['config', 'user.email', 't@example.com']);
  writeFileSync(join(dir, 'a.txt'), 'a\n');
  runGitSync(dir, ['add', '-A']);
  runGitSync(dir, ['commit', '-q', '-m', 'a']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('runInSandbox pipe grace', () => {
  it('keeps the output a command wrote just before exiting when the loop stalls past the grace', async () => {
    let stalled = false;
    hook.onSpawn = (child) => {
      // Only the command itself (git's own spawns pass through untouched).
      if (!child.spawnargs.includes('sleep 0.3; printf out; printf err >&2')) return;
      hook.onSpawn = null;
      // Once runInSandbox has attached its listeners and its streams have started reading:
      // this 'exit' listener runs after its own (which arms the grace timer).
      setImmediate(() => {
        handleOf(child.stdout).readStop();
        handleOf(child.stderr).readStop();
        child.once('exit', () => {
          handleOf(child.stdout).readStart();
          handleOf(child.stderr).readStart();
          const until = Date.now() + 1_500;
          while (Date.now() < until) {
            // A synchronous stall longer than PIPE_GRACE_MS, right after the exit.
          }
          stalled = true;
        });
      });
    };
    const r = await runInSandbox({
      gitdir: join(dir, '.git'),
      workTree: dir,
      commit: 'main',
      command: ['sh', '-c', 'sleep 0.3; printf out; printf err >&2'],
      isolation: 'process-group',
    });
    expect(stalled).toBe(true);
    expect(r.exit_code).toBe(0);
    expect({ stdout: r.stdout, stderr: r.stderr }).toEqual({ stdout: 'out', stderr: 'err' });
  });
});
