import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { processStamp } from '../../src/local/file-lock.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, zz } from './zz-process.js';

// A daemon that accepts the connection and never answers (stopped with SIGSTOP, deadlocked):
// the CLI's fast path (src/cli/fast-path.ts) must give up after its bound and say what that
// means for the call, instead of hanging forever. The "daemon" here is a real loopback socket
// that reads the request and never writes a byte; daemon.json names it, with this test's pid and stamp
// as the daemon's (alive, so the CLI takes the fast path).

beforeAll(() => ensureBuilt());
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  await killAll();
  for (const c of cleanups.splice(0)) await c();
});

/** A loopback server that accepts and never answers; `requests` holds what each connection sent. */
async function silentServer(): Promise<{ url: string; requests: () => string[] }> {
  const sockets: Socket[] = [];
  const received: string[] = [];
  const server: Server = createServer((s) => {
    const i = received.push('') - 1;
    sockets.push(s);
    s.on('data', (b: Buffer) => (received[i] += b.toString('utf8')));
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${port}`, requests: () => [...received] };
}

async function hungDaemon(timeoutMs = '1500') {
  const { dir, cleanup } = makeRepo();
  cleanups.push(cleanup);
  const silent = await silentServer();
  mkdirSync(join(dir, '.git', 'zz'), { recursive: true });
  writeFileSync(
    join(dir, '.git', 'zz', 'daemon.json'),
    JSON.stringify({
      pid: process.pid,
      process_start: processStamp(process.pid) ?? undefined,
      url: silent.url,
      repo: 'local/demo',
    }),
  );
  // A bound of 1.5 s instead of the default's minutes; the CLI's own kill is far above it.
  const env = privateEnv({ ZZ_TOKEN: 'zz_test_token', ZZ_DAEMON_TIMEOUT_MS: timeoutMs });
  return { dir, env, silent };
}

describe('a daemon that never answers', () => {
  it('a read gives up after the bound and says it is safe to run again', async () => {
    const { dir, env, silent } = await hungDaemon();
    const r = await zz(dir, env, ['lane', 'list'], { timeoutMs: 60_000 });
    expect(r.signal).toBeNull();
    expect(r.code).toBe(7); // unavailable
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(
      /^zz: the zz daemon at http:\/\/127\.0\.0\.1:\d+ did not answer lane_list within 1\.5 s; running it again is safe \(is the daemon stuck\? .*\)\n$/,
    );
    // Asked once: the full path was not handed the call to wait on the same daemon again.
    expect(silent.requests()).toHaveLength(1);
    expect(silent.requests()[0]).toMatch(/^POST \/api\/repos\/local\/demo\/tools\/lane_list /);
  }, 90_000);

  it('a keyed write is not sent again, and the message gives the key it was sent with', async () => {
    const { dir, env, silent } = await hungDaemon();
    const r = await zz(
      dir,
      env,
      ['ask', 'post', '--lane-id', 'fp', '--kind', 'work', '--title', 'hung'],
      { timeoutMs: 60_000 },
    );
    expect(r.code).toBe(7);
    const m =
      /did not answer ask_post within 1\.5 s; it may or may not have been applied: repeat the command with --idempotency-key (cli-[0-9a-f]{24}), which cannot apply it twice/.exec(
        r.stderr,
      );
    expect(m, r.stderr).not.toBeNull();
    expect(silent.requests()).toHaveLength(1);
    // The key said is the one the daemon was sent.
    expect(silent.requests()[0]).toContain(`"idempotency_key":"${m![1]}"`);
  }, 90_000);

  it('a write without a key says to check before running it again', async () => {
    const { dir, env, silent } = await hungDaemon();
    const r = await zz(dir, env, ['token', 'revoke', '--actor', 'nobody@example.com'], {
      timeoutMs: 60_000,
    });
    expect(r.code).toBe(7);
    expect(r.stderr).toContain(
      'did not answer token_revoke within 1.5 s; it may or may not have been applied; check before running it again',
    );
    expect(silent.requests()).toHaveLength(1);
  }, 90_000);

  // Node runs a timer past 2^31-1 ms after 1 ms: "wait forever" as a huge bound once timed
  // every call out at once. It is the longest timer instead: still waiting when killed here.
  it('a bound past what a timer holds means waiting, not giving up at once', async () => {
    const { dir, env, silent } = await hungDaemon('99999999999');
    const r = await zz(dir, env, ['lane', 'list'], { timeoutMs: 4_000 });
    expect(r.stderr).not.toContain('did not answer');
    expect(r.signal).toBe('SIGKILL');
    expect(silent.requests()).toHaveLength(1);
  }, 90_000);
});
