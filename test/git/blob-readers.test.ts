import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BLOB_READERS_MAX, BLOB_READERS_QUEUE_MAX } from '../../src/git/blob-window.js';
import { sh } from '../helpers/temp-repo.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';

// The one-off `git cat-file blob` readers of git_show_file (blob-window.ts), seen as processes
// (review M2): a client that leaves takes its git with it, and no more than BLOB_READERS_MAX
// run at once whatever the number of callers (the rest wait, then get a 429). The first page
// of a large text blob reads the whole blob (the text check), so each reader here runs for a
// while: long enough to be seen in /proc.

const MiB = 1024 * 1024;
const SIZE = 512 * MiB;

let td: TestDaemon;
let token: string;
let oid: string;

/** git processes this process (the daemon) started that are reading `oid` whole. */
function readersOf(blob: string): number[] {
  const pids: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (argv.includes('cat-file') && argv.includes('blob') && argv.includes(blob)) {
        pids.push(Number(d));
      }
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

beforeAll(async () => {
  td = await startTestDaemon({ prefix: 'zz-blobreaders-' });
  token = await td.token('owner@example.com');
  // Text (valid UTF-8, no NUL) of SIZE bytes, straight into git's object store.
  const git = spawn('git', ['hash-object', '-w', '--stdin'], { cwd: td.dir });
  let out = '';
  git.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const done = new Promise((r) => git.once('close', r));
  const chunk = Buffer.from('text line of a large file\n'.repeat(40_000));
  for (let left = SIZE; left > 0; left -= chunk.length) {
    const b = chunk.subarray(0, Math.min(left, chunk.length));
    if (!git.stdin.write(b)) await new Promise((r) => git.stdin.once('drain', r));
  }
  git.stdin.end();
  await done;
  oid = out.trim();
  sh(td.dir, 'update-index', '--add', '--cacheinfo', `100644,${oid},big.txt`);
  sh(td.dir, 'commit', '-q', '-m', 'big');
}, 300_000);
afterAll(async () => {
  await td?.close();
});

const call = (args: unknown, signal?: AbortSignal) =>
  fetch(`${td.url}/api/repos/${td.key}/tools/git_show_file`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(args),
    ...(signal ? { signal } : {}),
  });

describe('one-off blob readers', { timeout: 300_000 }, () => {
  it('a client that aborts takes its git with it', async () => {
    const acs = Array.from({ length: 3 }, () => new AbortController());
    const calls = acs.map((ac) =>
      call({ path: 'big.txt', limit: 1 }, ac.signal).catch((e: unknown) => e),
    );
    await expect.poll(() => readersOf(oid).length, { timeout: 20_000 }).toBe(3);
    // Stopped, so that none can finish on its own: only a kill ends them (SIGKILL ends a
    // stopped process too).
    const pids = readersOf(oid);
    for (const pid of pids) process.kill(pid, 'SIGSTOP');
    try {
      for (const ac of acs) ac.abort();
      await Promise.all(calls);
      await expect.poll(() => readersOf(oid).length, { timeout: 10_000 }).toBe(0);
    } finally {
      for (const pid of readersOf(oid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('a caller that leaves while waiting for a reader gives up its place in line', async () => {
    const pending = Symbol('pending');
    const settledBy = <T>(p: Promise<T>, ms: number) =>
      Promise.race([p, new Promise<typeof pending>((r) => setTimeout(() => r(pending), ms))]);
    const start = (ac: AbortController) =>
      call({ path: 'big.txt', limit: 1 }, ac.signal).then(
        (r) => r.status,
        () => 'aborted',
      );
    const running = Array.from({ length: BLOB_READERS_MAX }, () => new AbortController());
    const later = Array.from({ length: BLOB_READERS_QUEUE_MAX }, () => new AbortController());
    const runningCalls = running.map(start);
    try {
      await expect.poll(() => readersOf(oid).length, { timeout: 20_000 }).toBe(BLOB_READERS_MAX);
      // Every reader stopped: nothing leaves the line but by leaving.
      for (const pid of readersOf(oid)) process.kill(pid, 'SIGSTOP');
      const left = Array.from({ length: BLOB_READERS_QUEUE_MAX }, () => new AbortController());
      const leftCalls = left.map(start);
      await new Promise((r) => setTimeout(r, 1000));
      for (const ac of left) ac.abort();
      await Promise.all(leftCalls);
      // A full line again, none refused: the ones that left no longer hold places.
      const laterCalls = later.map(start);
      await new Promise((r) => setTimeout(r, 1000));
      for (const c of laterCalls) expect(await settledBy(c, 0)).toBe(pending);
      // And the line is full now.
      expect((await call({ path: 'big.txt', limit: 1 })).status).toBe(429);
    } finally {
      for (const ac of [...running, ...later]) ac.abort();
      await Promise.all(runningCalls);
    }
    await expect.poll(() => readersOf(oid).length, { timeout: 10_000 }).toBe(0);
  });

  it(`no more than ${BLOB_READERS_MAX} run at once; past the queue, a 429`, async () => {
    const n = BLOB_READERS_MAX + BLOB_READERS_QUEUE_MAX + 3;
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, readersOf(oid).length);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    // All arrive while the first readers still run: the text check of this blob was cut short
    // by the aborts above, so each one reads to the end until one of them finishes it.
    const answers = await Promise.all(
      Array.from({ length: n }, () =>
        call({ path: 'big.txt', offset: 0, limit: 16 }).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as { code?: string },
        })),
      ),
    );
    sampling = false;
    await sampler;
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(BLOB_READERS_MAX);
    const refused = answers.filter((a) => a.status === 429);
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused[0]!.body.code).toBe('too_many_requests');
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(
      BLOB_READERS_MAX + BLOB_READERS_QUEUE_MAX,
    );
    expect(answers.every((a) => a.status === 200 || a.status === 429)).toBe(true);
    expect(readersOf(oid)).toEqual([]);
  });
});
