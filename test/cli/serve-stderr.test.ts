import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { get as httpGet } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { spawnZzSource } from '../helpers/spawn-zz.js';
import { makeRepo } from '../helpers/temp-repo.js';

// `zz serve` logs a line on stderr per HTTP request. Under a supervisor that never reads
// stderr (a pipe nobody drains), every line past the full pipe was queued in zz, without
// bound. Now lines are dropped while stderr is backed up and one line counts them once it
// drains (the log of `zz mcp`, src/mcp/stderr-log.ts).

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** A GET on a connection of its own, closed after it (no keep-alive to hold zz serve's stop). */
const get = (url: string): Promise<number> =>
  new Promise((resolve, reject) => {
    httpGet(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });

describe('zz serve with a stderr nobody reads', { timeout: 180_000 }, () => {
  it('drops its log lines while stderr is full, then says how many; every request still answered', async () => {
    const r = makeRepo();
    const env = cliEnv();
    expect((await zz(r.dir, env, 'init')).code).toBe(0);
    const child = spawnZzSource(r.dir, env, ['serve', '--port', '0']);
    children.push(child);
    const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
    let stdout = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    const deadline = Date.now() + 60_000;
    while (!/ at (http:\S+)\n/.test(stdout) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 50));
    }
    const url = / at (http:\S+)\n/.exec(stdout)![1]!;
    // Each request is a 404 with a ~180-byte log line: 2,500 of them, 450 KB, fill the 64 KiB
    // pipe and this side's read-ahead many times over while nobody reads stderr.
    const n = 2500;
    const path = `/zz-log-${'x'.repeat(100)}`;
    let next = 0;
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < n) {
          next++;
          statuses.push(await get(`${url}${path}`));
        }
      }),
    );
    expect(statuses.filter((s) => s !== 404)).toEqual([]);
    // Read stderr now: it drains, and one line says how many were dropped.
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    const until = Date.now() + 30_000;
    while (!/dropped/.test(stderr) && Date.now() < until) {
      await new Promise((res) => setTimeout(res, 100));
    }
    child.kill('SIGTERM');
    expect(await exited, stderr.slice(-2000)).toBe(0);
    const dropped = [
      ...stderr.matchAll(/zz serve: (\d+) log lines? dropped while stderr was not being read/g),
    ]
      .map((m) => Number(m[1]))
      .reduce((a, b) => a + b, 0);
    const logged = stderr.split('\n').filter((l) => l.includes(` GET ${path} `)).length;
    // Every request logged or counted (a line of something else may be among the dropped);
    // most were dropped, what the pipes held was logged.
    expect(logged + dropped, stderr.slice(-1000)).toBeGreaterThanOrEqual(n);
    expect(logged + dropped).toBeLessThan(n + 10);
    expect(dropped).toBeGreaterThan(n / 2);
    expect(stderr).toContain('zz: stopping');
  });
});
