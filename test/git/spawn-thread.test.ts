import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { runGit, type GitRunOptions } from '../../src/git/index.js';
import { gitChildren } from '../helpers/child-handles.js';
import { makeRepo } from '../helpers/temp-repo.js';

// runGit's `offLoop` (git/spawn-thread.ts): the daemon's maintenance spawns git from a worker
// thread so that its loop does not wait while the child forks and execs. Whatever thread
// started it, runGit answers the same: output, stdin, exit codes, the output cap, a child that
// could not start. Each case runs both ways and the answers are compared.

/** runGit's answer or its failure, as plain data. */
async function outcome(args: string[], opts: GitRunOptions) {
  try {
    const r = await runGit(args, opts);
    return { stdout: r.stdout.toString('utf8'), stderr: r.stderr, code: r.code };
  } catch (e) {
    expect(e).toBeInstanceOf(ZzError);
    const z = e as ZzError;
    return { error: z.code, message: z.message, details: z.details };
  }
}

async function bothWays(args: string[], opts: GitRunOptions) {
  const onLoop = await outcome(args, opts);
  const offLoop = await outcome(args, { ...opts, offLoop: true });
  expect(offLoop).toEqual(onLoop);
  return offLoop;
}

describe('runGit off the event loop', () => {
  it('ends a run whose git exited but left a helper holding its output, and kills it (both ways)', async () => {
    const { dir, cleanup } = makeRepo('zz-spawn-grace-');
    try {
      // A shell alias leaves a child in git's process group holding stdout for 5 minutes, as
      // an orphaned `git remote-http` did (hostile review H3): the run ends after the grace.
      const marker = `zz-grace-${process.pid}-${Date.now()}`;
      const args = ['-c', `alias.linger=!sh -c 'sleep 300; : ${marker}' & echo started`, 'linger'];
      const t0 = Date.now();
      const r = await bothWays(args, { cwd: dir });
      expect(r).toMatchObject({ stdout: 'started\n', code: 0 });
      expect(Date.now() - t0).toBeLessThan(20_000);
      await new Promise((res) => setTimeout(res, 200));
      const { spawnSync } = await import('node:child_process');
      const left = spawnSync('pgrep', ['-f', marker], { encoding: 'utf8' });
      expect(left.stdout.trim()).toBe('');
    } finally {
      cleanup();
    }
  }, 60_000);

  it('answers as on the loop: output, stdin, exit codes, the cap, a child that cannot start', async () => {
    const { dir, cleanup } = makeRepo('zz-spawn-thread-');
    try {
      const log = await bothWays(['log', '--format=%s'], { cwd: dir });
      expect(log).toEqual({ stdout: 'initial\n', stderr: '', code: 0 });
      // stdin reaches the child.
      const hashed = await bothWays(['hash-object', '--stdin'], { cwd: dir, input: 'hello\n' });
      expect(hashed).toMatchObject({ stdout: 'ce013625030ba8dba906f756967f9e9ca394464a\n' });
      // A failure names the command and keeps git's message and code.
      const failed = await bothWays(['rev-parse', '--verify', 'nope^{commit}'], { cwd: dir });
      expect(failed).toMatchObject({ error: 'git_failed', details: { code: 128 } });
      expect((failed as { message: string }).message).toMatch(/^git rev-parse failed: fatal/);
      // An exit code the caller accepts is an answer, not a failure.
      const ok1 = await bothWays(['config', '--get', 'no.such'], { cwd: dir, okCodes: [1] });
      expect(ok1).toEqual({ stdout: '', stderr: '', code: 1 });
      // Output past the cap kills the child and fails.
      const capped = await bothWays(['cat-file', '-p', 'HEAD'], { cwd: dir, maxBuffer: 10 });
      expect(capped).toMatchObject({ error: 'git_failed' });
      expect((capped as { message: string }).message).toMatch(/produced more than 10 bytes/);
      // Niced: what `nice` runs is still git, and still answers.
      const niced = await bothWays(['log', '--format=%s'], { cwd: dir, nice: 5 });
      expect(niced).toMatchObject({ stdout: 'initial\n' });
      // A child that cannot start (its directory is gone): "could not run git".
      const gone = await bothWays(['status'], { cwd: join(dir, 'missing') });
      expect(gone).toMatchObject({ error: 'git_failed' });
      expect((gone as { message: string }).message).toMatch(/^could not run git: /);
    } finally {
      cleanup();
    }
  });

  it('runs jobs side by side, each answered with its own output', async () => {
    const { dir, cleanup } = makeRepo('zz-spawn-thread-many-');
    try {
      const inputs = Array.from({ length: 8 }, (_, i) => `blob ${i}\n`);
      const offLoop = await Promise.all(
        inputs.map((input) =>
          runGit(['hash-object', '--stdin'], { cwd: dir, input, offLoop: true }),
        ),
      );
      const onLoop = await Promise.all(
        inputs.map((input) => runGit(['hash-object', '--stdin'], { cwd: dir, input })),
      );
      expect(offLoop.map((r) => r.stdout.toString())).toEqual(
        onLoop.map((r) => r.stdout.toString()),
      );
      expect(new Set(offLoop.map((r) => r.stdout.toString())).size).toBe(8);
    } finally {
      cleanup();
    }
  });

  it('starts the child from another thread: no child process handle on this loop', async () => {
    const { dir, cleanup } = makeRepo('zz-spawn-thread-where-');
    try {
      // Only this case's children are counted (the earlier cases' handles close a turn or
      // more after their answers): each run carries a mark of its own on its command line.
      const run = (mark: string, offLoop: boolean) =>
        runGit(['-c', `zz.mark=${mark}`, 'log', '--format=%s'], { cwd: dir, offLoop });
      const mine = (mark: string) => gitChildren().filter((c) => c.includes(`zz.mark=${mark}`));
      // On the loop, spawn() has made the child's handle here by the time runGit returns.
      const onLoop = run('on', false);
      expect(mine('on')).toHaveLength(1);
      await onLoop;
      // Off it, this loop never holds one while the child runs.
      let running = true;
      const offLoop = run('off', true).finally(() => {
        running = false;
      });
      const seen = new Set<string>();
      while (running) {
        for (const c of mine('off')) seen.add(c);
        await new Promise((r) => setImmediate(r));
      }
      expect((await offLoop).stdout.toString()).toBe('initial\n');
      expect([...seen]).toEqual([]);
    } finally {
      cleanup();
    }
  });
});

describe('runGit on a terminal', () => {
  // ssh asks for a key's passphrase on the controlling terminal, which a git in a session of
  // its own (spawn `detached`, the stalled-remote fix) does not have: `terminal` runs keep this
  // process's session, so a person's `zz sync` can be asked (cli/sync-command.ts).
  const sessionOf = (stat: string) => Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
  const own = sessionOf(readFileSync('/proc/self/stat', 'utf8'));
  const gitSession = async (terminal: boolean) => {
    const { dir, cleanup } = makeRepo('zz-spawn-tty-');
    try {
      const r = await runGit(['-c', 'alias.sid=!cat /proc/$$/stat', 'sid'], {
        cwd: dir,
        terminal,
      });
      return sessionOf(r.stdout.toString('utf8'));
    } finally {
      cleanup();
    }
  };

  it.runIf(process.platform === 'linux')(
    "keeps this process's session for a terminal run, a session of its own otherwise",
    async () => {
      expect(await gitSession(true)).toBe(own);
      expect(await gitSession(false)).not.toBe(own);
    },
  );
});
