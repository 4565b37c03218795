import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv } from '../helpers/cli-env.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { initializeRequest, spawnZzMcp } from './helpers.js';

// A client that writes to `zz mcp` and does not read its stdout: zz must stop reading (the
// client's writes back up in the pipe) rather than queue every answer in memory, and once the
// client reads, every line has its answer. Before, 60,000 bad lines grew zz by ~50 MB.

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** Resident memory of a process, in bytes (Linux). */
const rss = (pid: number): number =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/**
 * A spawned `zz mcp` whose stdout is read only when lines() is called, and whose stderr is
 * read from the start, or (`readStderr: false`) only once readStderr() is called.
 */
function unreadMcp({ readStderr = true } = {}) {
  const r = makeRepo();
  const child = spawnZzMcp(r.dir, cliEnv());
  children.push(child);
  let stderr = '';
  const startStderr = () => child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  if (readStderr) startStderr();
  // The exit status, or the signal zz died of.
  const exited = new Promise<number | NodeJS.Signals | null>((res) =>
    child.once('exit', (code, signal) => res(code ?? signal)),
  );
  /** Writes `text` in 4 KiB pieces: what is queued on this side then shows what zz took. */
  const write = (text: string) => {
    const b = Buffer.from(text, 'utf8');
    for (let i = 0; i < b.length; i += 4096) child.stdin.write(b.subarray(i, i + 4096));
  };
  const send = (messages: unknown[]) =>
    write(messages.map((m) => JSON.stringify(m) + '\n').join(''));
  /** The next `n` lines of stdout, read while paused afterwards. */
  const lines = (n: number) =>
    new Promise<string[]>((resolve) => {
      const got: string[] = [];
      let rest = '';
      const onData = (c: Buffer) => {
        const parts = (rest + c.toString('utf8')).split('\n');
        rest = parts.pop()!;
        got.push(...parts);
        if (got.length >= n) {
          child.stdout.off('data', onData);
          child.stdout.pause();
          if (rest) child.stdout.unshift(Buffer.from(rest, 'utf8'));
          resolve(got);
        }
      };
      child.stdout.on('data', onData);
      child.stdout.resume();
    });
  return { child, exited, write, send, lines, stderr: () => stderr, readStderr: startStderr };
}

/** Whether a process is asleep (waiting on I/O), not running or waiting for a CPU (Linux). */
const asleep = (pid: number): boolean =>
  /^\d+ \(.*\) S /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

/**
 * Waits until zz has stopped taking what the client writes: for 3 s the bytes still queued on
 * the client's side unchanged and zz asleep at every look (a zz starved of CPU on a loaded
 * machine is not asleep, and is not taken for one that stopped reading). Returns what is still
 * queued (0 once zz has taken everything).
 */
async function untilStalled(child: ChildProcessWithoutNullStreams): Promise<number> {
  let last = -1;
  let since = Date.now();
  for (;;) {
    const queued = child.stdin.writableLength;
    if (queued !== last || !asleep(child.pid!)) [last, since] = [queued, Date.now()];
    else if (Date.now() - since >= 3000) return queued;
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('zz mcp with a client that does not read', { timeout: 180_000 }, () => {
  it('bad lines: zz stops reading while stdout is full, memory stays bounded, then every line is answered in order', async () => {
    const mcp = unreadMcp();
    mcp.send([initializeRequest(1)]);
    expect((await mcp.lines(1))[0]).toMatch(/"result".*"id":1}$/);
    const before = rss(mcp.child.pid!);
    // Short bad lines each get a ~130-byte answer: 60,000 of them would be 7.7 MB of answers
    // (~50 MB of queued writes) if zz took them all.
    const n = 60_000;
    const input = Array.from({ length: n }, (_, i) => `x${i}\n`).join('');
    mcp.write(input);
    const queued = await untilStalled(mcp.child);
    const grown = rss(mcp.child.pid!) - before;
    // zz took what the pipes and its read buffer hold (a few hundred KiB at most), no more.
    expect(queued, 'zz read all of stdin without anyone reading its answers').toBeGreaterThan(
      input.length / 3,
    );
    expect(grown).toBeLessThan(25 << 20);
    mcp.child.stdin.end();
    const answers = await mcp.lines(n);
    expect(await mcp.exited, mcp.stderr().slice(-2000)).toBe(0);
    expect(answers).toHaveLength(n);
    answers.forEach((line, i) => {
      const a = JSON.parse(line) as { id: null; error: { code: number; message: string } };
      expect(a.id).toBeNull();
      expect(a.error.code).toBe(-32700);
      // V8 quotes the text it could not parse: the answers come in the order of the lines.
      if (!a.error.message.includes(`"x${i}"`)) expect(a.error.message).toContain(`"x${i}"`);
    });
  });

  it('tool answers (the SDK transport) are held to the same bound: requests wait while answers queue', async () => {
    const mcp = unreadMcp();
    mcp.send([
      initializeRequest(1),
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    ]);
    const first = await mcp.lines(2);
    // The whole tool list, ~50 KB a copy: 1,000 requests for it (50 KB, taken in one read)
    // would queue 50 MB of answers, and the heap that made them (~115 MB).
    const listSize = first[1]!.length;
    expect(listSize).toBeGreaterThan(20_000);
    const before = rss(mcp.child.pid!);
    const n = 1000;
    const ids = Array.from({ length: n }, (_, i) => 3 + i);
    // In one write, so that zz reads them all at once (64 KiB holds ~1,300).
    mcp.child.stdin.write(
      ids.map((id) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list' }) + '\n').join(''),
    );
    await untilStalled(mcp.child);
    const grown = rss(mcp.child.pid!) - before;
    // 200 KB of requests fit in the pipe and zz's read buffer: what is queued here says nothing.
    // At most MAX_IN_FLIGHT (64) answers queued, ~3 MB, and the heap that made them (~16 MB
    // in all, 6 MB measured; 106 MB without the bound).
    expect(grown).toBeLessThan(50 << 20);
    mcp.child.stdin.end();
    // 50 MB of answers: each checked by its ends, not parsed.
    const answers = (await mcp.lines(n)).map((l) => ({
      id: Number(/"id":(\d+)\}$/.exec(l)?.[1]),
      tools: l.startsWith('{"result":{"tools":[') && l.length > listSize - 10,
    }));
    expect(await mcp.exited, mcp.stderr().slice(-2000)).toBe(0);
    expect(answers.map((a) => a.id).sort((a, b) => a - b)).toEqual(ids);
    expect(answers.filter((a) => !a.tools)).toEqual([]);
  });

  it('stderr not read: log lines are dropped while it is full and counted once it drains; every answer still arrives, in order', async () => {
    // A client that reads stdout and never stderr: each bad line logs a line there, and every
    // one written past the full pipe was queued in zz (40,000 grew it by 26 MB and rising).
    const mcp = unreadMcp({ readStderr: false });
    mcp.send([initializeRequest(1)]);
    expect((await mcp.lines(1))[0]).toMatch(/"result".*"id":1}$/);
    // First a line with an escape sequence, logged while stderr is still empty: it must be
    // shown there, not obeyed. Then 40,000 short bad lines, ~100 bytes of log each: 4 MB, the
    // 64 KiB pipe and the client's read buffer full many times over. The first 5,000 only warm
    // zz up: the heap that parsing lines takes (~15 MB) is not counted as growth.
    const n = 40_000;
    const warm = 5_000;
    const lines = Array.from({ length: n }, (_, i) => `x${i}\n`);
    const warmed = mcp.lines(warm + 1);
    mcp.write('\x1b[2Jx\n' + lines.slice(0, warm).join(''));
    const got = await warmed;
    const before = rss(mcp.child.pid!);
    const answers = mcp.lines(n - warm);
    mcp.write(lines.slice(warm).join(''));
    got.push(...(await answers));
    const grown = rss(mcp.child.pid!) - before;
    expect(got).toHaveLength(n + 1);
    expect(got[0]).toContain('\\u001b[2Jx');
    got.slice(1).forEach((line, i) => {
      const m = (JSON.parse(line) as { error: { message: string } }).error.message;
      if (!m.includes(`"x${i}"`)) expect(m).toContain(`"x${i}"`);
    });
    // A coarse guard only: at this size the heap's churn hides the queue (measured: 4 MB with
    // the bound, 10-15 MB without); the count of dropped lines below tells them apart.
    expect(grown).toBeLessThan(50 << 20);
    // Once stderr is read it drains, and one line says how many were dropped.
    mcp.readStderr();
    const deadline = Date.now() + 20_000;
    while (!/dropped/.test(mcp.stderr()) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
    }
    mcp.child.stdin.end();
    expect(await mcp.exited).toBe(0);
    const log = mcp.stderr();
    const dropped = [
      ...log.matchAll(/zz mcp: (\d+) log lines? dropped while stderr was not being read/g),
    ]
      .map((m) => Number(m[1]))
      .reduce((a, b) => a + b, 0);
    const logged = log.match(/answered a bad line with -32700/g)?.length ?? 0;
    // Every bad line logged or counted; most were dropped, what the pipes held was logged.
    expect(logged + dropped, log.slice(-1000)).toBe(n + 1);
    expect(dropped).toBeGreaterThan(n / 2);
    expect(log).toContain(String.raw`\x1b[2Jx`);
    expect(log).not.toContain('\x1b');
  }, 60_000);

  it('stdout not read: SIGTERM ends zz within its bound, by the signal', async () => {
    const mcp = unreadMcp();
    mcp.send([initializeRequest(1), { jsonrpc: '2.0', method: 'notifications/initialized' }]);
    await mcp.lines(1);
    // ~50 KB answers: 200 of them fill the 64 KiB pipe and the client's read buffer, and keep
    // MAX_IN_FLIGHT (64) waiting behind them.
    mcp.send(
      Array.from({ length: 200 }, (_, i) => ({ jsonrpc: '2.0', id: 2 + i, method: 'tools/list' })),
    );
    await untilStalled(mcp.child);
    const t0 = Date.now();
    mcp.child.kill('SIGTERM');
    // STOP_FLUSH_MS (5 s) and the shutdown around it; before, zz waited forever.
    const code = await Promise.race([
      mcp.exited,
      new Promise((r) => setTimeout(() => r('still running after 20 s'), 20_000)),
    ]);
    const took = Date.now() - t0;
    expect(code, mcp.stderr().slice(-2000)).toBe('SIGTERM');
    expect(mcp.stderr()).toMatch(
      /stdout was not read for 5 s after SIGTERM; \d+ bytes of output were dropped/,
    );
    // The bound, not an exit at once: answers a slow reader would still take are not cut.
    expect(took).toBeGreaterThan(4000);
  }, 60_000);
});
