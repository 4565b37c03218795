import { execFileSync, spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { processStamp } from '../../src/local/file-lock.js';
import { fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { ensureBuilt, killAll, privateEnv, spawnZz, zz, ZZ_MAIN } from './zz-process.js';

// Ctrl-C and `kill`/`timeout` must end a command that is not built to run until stopped. The
// CLI once turned every first SIGINT/SIGTERM into a stop request that only serve, mcp, work and
// --follow listen to, so a `zz ladder build` ran on through Ctrl-C and `timeout 60 zz lane list`
// against a stopped (Ctrl-Z'd) daemon never ended.

beforeAll(() => ensureBuilt());
const servers: Server[] = [];
afterEach(async () => {
  await killAll();
  for (const s of servers.splice(0)) s.closeAllConnections();
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
});

/** A "daemon" that takes requests and never answers: a stopped or hung `zz serve`. */
async function hungDaemon(dir: string): Promise<{ requested: Promise<IncomingMessage> }> {
  let seen!: (r: IncomingMessage) => void;
  const requested = new Promise<IncomingMessage>((r) => (seen = r));
  const server = createServer((req) => seen(req));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  mkdirSync(join(dir, '.git', 'zz'), { recursive: true });
  // Our own pid and process stamp: alive, as a stopped daemon's is, and the one that wrote it.
  writeFileSync(
    join(dir, '.git', 'zz', 'daemon.json'),
    JSON.stringify({
      pid: process.pid,
      process_start: processStamp(process.pid) ?? undefined,
      url: `http://127.0.0.1:${port}`,
      repo: 'local/demo',
    }),
  );
  return { requested };
}

/** Alive and not a zombie (an orphan is reaped by whoever adopted it, in its own time). */
/**
 * What a started process wrote to `file` (its pid, its cwd), or '' while it has not written it
 * yet. Hazard: writeFileSync and the shell's `>` create the file before they write it, so
 * "the file exists" is not "it holds the pid": Number('') is 0, and process.kill(0) signals
 * this process's own group (the test runner, its workers, and under CI's setsid the whole pass).
 */
function written(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : '';
}

/** The pid a started process wrote to `file`, once it has (never 0: see written()). */
async function pidIn(file: string): Promise<number> {
  await expect.poll(() => /^[1-9]\d*$/.test(written(file)), { timeout: 30_000 }).toBe(true);
  return Number(written(file));
}

/** Ends the process whose pid is in `file`, if it wrote one and is still there. */
function killPidIn(file: string): void {
  const pid = written(file);
  if (!/^[1-9]\d*$/.test(pid)) return;
  try {
    process.kill(Number(pid), 'SIGKILL');
  } catch {
    /* gone */
  }
}

function isRunning(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function exitOf(child: ReturnType<typeof spawnZz>) {
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
    child.once('exit', (code, signal) => r({ code, signal })),
  );
}

describe('signals end a command that is not long-running', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)(
    '%s ends a call waiting on a hung daemon',
    async (sig) => {
      const { dir, cleanup } = makeRepo();
      try {
        const { requested } = await hungDaemon(dir);
        const child = spawnZz(dir, privateEnv({ ZZ_TOKEN: 'zz_notarealtoken' }), ['lane', 'list']);
        child.stdin.end();
        const exited = exitOf(child);
        await requested; // the CLI is past start-up and waits for the answer
        child.kill(sig);
        // Died of the signal, as with no handler: a shell (below) tells that from an exit.
        expect(await exited).toEqual({ code: null, signal: sig });
      } finally {
        cleanup();
      }
    },
  );

  it("Ctrl-C stops a shell's loop around zz, not just the zz it was running", async () => {
    const { dir, cleanup } = makeRepo();
    try {
      const { requested } = await hungDaemon(dir);
      // A terminal's Ctrl-C goes to the whole foreground process group: bash and zz. bash goes
      // on with its loop unless zz died of the signal; zz once exited 130, and "next" followed.
      const loop = spawn(
        'bash',
        [
          '-c',
          'for i in 1 2; do "$0" "$1" lane list; echo "next $i"; done',
          process.execPath,
          ZZ_MAIN,
        ],
        {
          cwd: dir,
          env: privateEnv({ ZZ_TOKEN: 'zz_notarealtoken' }),
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      loop.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
        loop.once('close', (code, signal) => r({ code, signal })),
      );
      await requested;
      process.kill(-loop.pid!, 'SIGINT');
      expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
      expect(out).toBe('');
    } finally {
      cleanup();
    }
  });

  it('Ctrl-C ends a ladder build waiting on its model, and nothing is committed', async () => {
    const { dir, cleanup } = makeRepo();
    const tmp = tempDir('zz-signal-model-');
    const started = join(tmp, 'started');
    const script = join(tmp, 'hang.mjs');
    // Says it has the request (its pid, so the test can end it), then never answers.
    writeFileSync(
      script,
      `import { writeFileSync } from 'node:fs';\n` +
        `writeFileSync(${JSON.stringify(started)}, String(process.pid));\n` +
        `setInterval(() => {}, 1000);\n`,
    );
    try {
      const env = privateEnv();
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      const child = spawnZz(dir, env, ['ladder', 'build', '--model', `exec:node ${script}`]);
      child.stdin.end();
      const exited = exitOf(child);
      const model = await pidIn(started);
      child.kill('SIGINT');
      expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
      expect(sh(dir, 'for-each-ref', 'refs/zz/ladder')).toBe('');
      // The signal reached zz alone (as `kill` or `timeout` would), not the model's process
      // group as a terminal's Ctrl-C does: zz ended the model itself on its way out.
      await expect.poll(() => isRunning(model), { timeout: 30_000 }).toBe(false);
    } finally {
      killPidIn(started);
      cleanup();
    }
  });

  it('Ctrl-C during zz sync says it was interrupted, that local state is intact, and to rerun', async () => {
    const { dir, cleanup } = makeRepo();
    const tmp = tempDir('zz-signal-sync-');
    const remote = join(tmp, 'remote.git');
    const started = join(tmp, 'started');
    const uploadPack = join(tmp, 'slow-upload-pack.sh');
    // The remote's side of the fetch: says it has begun (its pid, to end it), then stalls.
    writeFileSync(uploadPack, `#!/bin/sh\necho $$ > '${started}'\nexec sleep 120\n`);
    chmodSync(uploadPack, 0o755);
    try {
      execFileSync('git', ['init', '-q', '--bare', remote]);
      sh(dir, 'remote', 'add', 'origin', remote);
      const env = privateEnv();
      expect((await zz(dir, env, ['init', '--no-fetch'])).code).toBe(0);
      expect(
        (await zz(dir, env, ['lane', 'propose', '--title', 'Web', '--lane-id', 'web'])).code,
      ).toBe(0);
      sh(dir, 'config', 'remote.origin.uploadpack', uploadPack);
      const child = spawnZz(dir, env, ['sync']);
      child.stdin.end();
      let stderr = '';
      child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
      const exited = exitOf(child);
      const uploader = await pidIn(started);
      child.kill('SIGINT');
      expect(await exited).toEqual({ code: null, signal: 'SIGINT' });
      expect(stderr).toBe(
        'zz: sync interrupted; local zz state is intact (each ref is as it was or as synced), run zz sync again to finish\n',
      );
      try {
        process.kill(uploader, 'SIGKILL');
      } catch {
        // Gone already: zz's exit kills the git runs it started, their helpers included
        // (git/git-groups.ts), and the stalled upload-pack is one of them.
      }
      // As it says: the next run finishes the job, and the repository is sound.
      sh(dir, 'config', '--unset', 'remote.origin.uploadpack');
      const again = await zz(dir, env, ['sync']);
      expect(again.code, again.stderr).toBe(0);
      expect(
        execFileSync(
          'git',
          ['--git-dir', remote, 'for-each-ref', '--format=%(refname)', 'refs/zz/lanes/'],
          { encoding: 'utf8' },
        ),
      ).toContain('refs/zz/lanes/web');
      expect(fsckProblems(dir)).toEqual([]);
    } finally {
      killPidIn(started);
      cleanup();
    }
  });

  // run_in_sandbox runs in-process, its command in a process group (or PID namespace) of its
  // own, which a terminal's Ctrl-C does not reach: ended at once, zz left the command running
  // and its checkout (a temp dir and a registered git worktree) behind.
  it('Ctrl-C ends a sandboxed run: its command is ended and its checkout removed', async () => {
    const { dir, cleanup } = makeRepo();
    const tmp = tempDir('zz-signal-sandbox-');
    const started = join(tmp, 'started');
    const script = join(tmp, 'hang.mjs');
    writeFileSync(
      script,
      `#!${process.execPath}\nimport { writeFileSync } from 'node:fs';\n` +
        `writeFileSync(${JSON.stringify(started)}, process.cwd());\n` +
        `setInterval(() => {}, 1000);\n`,
    );
    chmodSync(script, 0o755);
    const running = () =>
      readdirSync('/proc').filter((pid) => {
        try {
          return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script);
        } catch {
          return false;
        }
      });
    try {
      const env = privateEnv();
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      const child = spawnZz(dir, env, [
        'run',
        'in-sandbox',
        '--commit',
        'HEAD',
        // Far past the test's own timeout: only the signal can end this run in time.
        '--timeout-ms',
        '1800000',
        '--command',
        script,
      ]);
      child.stdin.end();
      const exited = exitOf(child);
      // Its content, not the file (see written()): read empty on a loaded machine, '' was
      // "not in the worktree list" of anything.
      await expect.poll(() => written(started), { timeout: 30_000 }).not.toBe('');
      const checkout = written(started);
      child.kill('SIGINT');
      const { code } = await exited;
      expect(code).not.toBe(0);
      expect(running()).toEqual([]);
      expect(existsSync(checkout)).toBe(false);
      expect(sh(dir, 'worktree', 'list', '--porcelain')).not.toContain(checkout);
    } finally {
      for (const pid of running()) process.kill(Number(pid), 'SIGKILL');
      cleanup();
    }
  });
});

describe('a closed output pipe', () => {
  it('ends zz work as a stop does: the Ask it holds is released, no stack is printed', async () => {
    // `zz work | head -1`, or a `--json` consumer that dies: the next line was an EPIPE
    // thrown as an unhandled 'error' event (exit 1 with a Node stack), and the Ask held at
    // that moment stayed claimed until its lease ran out.
    const { dir, cleanup } = makeRepo();
    const tmp = tempDir('zz-epipe-');
    const script = join(tmp, 'slow.mjs');
    writeFileSync(
      script,
      `setTimeout(() => process.stdout.write(JSON.stringify({ object: { message: 'm', files: [] } })), 60_000);\n`,
    );
    try {
      const env = privateEnv();
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      expect((await zz(dir, env, ['lane', 'propose', '--lane-id', 'p', '--title', 'P'])).code).toBe(
        0,
      );
      const posted = await zz(dir, env, [
        'ask',
        'post',
        '--lane-id',
        'p',
        '--kind',
        'work',
        '--title',
        'Hold me',
        '--json',
      ]);
      const askId = (posted.json() as { ask: { ask_id: string } }).ask.ask_id;
      const child = spawnZz(dir, env, [
        'work',
        '--lane',
        'p',
        '--model',
        `exec:${process.execPath} ${script}`,
      ]);
      child.stdin.end();
      let err = '';
      child.stderr.on('data', (c: Buffer) => (err += c.toString('utf8')));
      const exited = exitOf(child);
      let out = '';
      await new Promise<void>((resolve) => {
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString('utf8');
          if (out.includes('claimed')) resolve();
        });
      });
      child.stdout.destroy(); // the reader goes away while the Ask is held
      const { code } = await exited;
      expect(err).not.toMatch(/EPIPE|Unhandled|\n\s+at /);
      expect(code).not.toBe(1);
      const got = await zz(dir, env, ['ask', 'get', '--ask-id', askId, '--json']);
      expect((got.json() as { ask: { state: string; holder: string | null } }).ask).toMatchObject({
        state: 'open',
        holder: null,
      });
    } finally {
      cleanup();
    }
    // Seven zz processes and a worker: 15 s alone, past 60 s on a 2-core CI machine running
    // both test passes (load average 15-20).
  }, 180_000);
});

describe('a closed stderr', () => {
  it('does not stop zz mcp: stdout is its channel, stderr only its log', async () => {
    // A client that never reads zz mcp's stderr may close it; the first line logged there (a
    // line it could not parse) stopped the server as a closed stdout does, and the client lost
    // its tools for a log line nobody was reading.
    const { dir, cleanup } = makeRepo();
    try {
      const env = privateEnv();
      expect((await zz(dir, env, ['init'])).code).toBe(0);
      const child = spawnZz(dir, env, ['mcp']);
      child.stderr.destroy();
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
      let exited = false;
      child.once('exit', () => (exited = true));
      child.stdin.write('{"foo":1}\n'); // not JSON-RPC: a line on stderr
      await new Promise((r) => setTimeout(r, 1500));
      child.stdin.write(
        `${JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-06-18',
            capabilities: {},
            clientInfo: { name: 'test', version: '1' },
          },
        })}\n`,
      );
      const deadline = Date.now() + 15_000;
      while (!out.includes('"id":1') && !exited && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(exited).toBe(false);
      expect(out).toContain('"serverInfo"');
      child.stdin.end();
    } finally {
      cleanup();
    }
  }, 150_000);
});
