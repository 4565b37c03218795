import { spawn } from 'node:child_process';
import { existsSync, promises as fsp, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import {
  processStartTime,
  settleBackground,
  trackBackground,
  withFileLock,
} from '../../src/local/index.js';
import { tempDir } from '../helpers/temp-dirs.js';

describe('withFileLock', () => {
  it('takes over a lock whose pid now names another process (pid reuse)', async () => {
    const dir = tempDir('zz-lock-');
    const file = join(dir, 'tokens.json');
    // A live process, but not the one that took the lock: its start time differs.
    const other = spawn(process.execPath, ['-e', 'setTimeout(()=>{}, 30000)'], { stdio: 'ignore' });
    try {
      const start = processStartTime(other.pid!);
      expect(start).not.toBeNull();
      writeFileSync(`${file}.lock`, `${other.pid} ${Number(start) - 1}`);
      let ran = false;
      await withFileLock(file, async () => (ran = true), { timeoutMs: 1_000, staleMs: 60_000 });
      expect(ran).toBe(true);
      expect(existsSync(`${file}.lock`)).toBe(false);
    } finally {
      other.kill();
    }
  });

  it('waits for a live holder and refuses with a clear error after the timeout', async () => {
    const dir = tempDir('zz-lock-');
    const file = join(dir, 'tokens.json');
    writeFileSync(`${file}.lock`, `${process.pid} ${processStartTime(process.pid)}`);
    await expect(
      withFileLock(file, async () => 1, { timeoutMs: 200, staleMs: 60_000 }),
    ).rejects.toThrow(new RegExp(`is held by process ${process.pid};`));
    expect(readFileSync(`${file}.lock`, 'utf8')).toContain(String(process.pid));
  });

  it('never takes a lock from a holder known to be alive, however long it holds it', async () => {
    // A holder past staleMs on a loaded machine: taken over by age, a second process got in
    // beside it and one read-modify-write of tokens.json was lost.
    const dir = tempDir('zz-lock-');
    const file = join(dir, 'tokens.json');
    const order: string[] = [];
    let entered!: () => void;
    const holding = new Promise<void>((r) => (entered = r));
    let leave!: () => void;
    const held = withFileLock(file, async () => {
      order.push('first in');
      entered();
      await new Promise<void>((r) => (leave = r));
      order.push('first out');
    });
    await holding;
    const second = withFileLock(file, async () => void order.push('second in'), {
      staleMs: 20,
      timeoutMs: 30_000,
    });
    // The lock's age passes staleMs many times over before the first lets go.
    while (Date.now() - statSync(`${file}.lock`).mtimeMs < 200) {
      await new Promise((r) => setTimeout(r, 20));
    }
    leave();
    await Promise.all([held, second]);
    expect(order).toEqual(['first in', 'first out', 'second in']);
  });

  it("two waiters taking over one dead holder's lock never both get in", async () => {
    // Each judged the lock stale; the slower checked it was still that file, then (a turn
    // later) removed it: by then the faster had removed it and made its own, and the slower
    // removed that and got in beside it. The slower's check is held here until the faster is
    // in; whatever the takeover does, no open of the lock may succeed while it is held.
    const dir = tempDir('zz-lock-');
    const file = join(dir, 'tokens.json');
    const lock = `${file}.lock`;
    const dead = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await new Promise((r) => dead.once('exit', r));
    writeFileSync(lock, `${dead.pid} 1`);
    const stat = fsp.stat.bind(fsp);
    const open = fsp.open.bind(fsp);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let gated = false;
    let held = false;
    let gotInWhileHeld = false;
    let opened: (() => void) | null = null;
    const statSpy = vi.spyOn(fsp, 'stat').mockImplementation(async (...args) => {
      const caller = new Error().stack ?? '';
      const st = await stat(...(args as Parameters<typeof stat>));
      // The takeover's "still the same file?" check of the first waiter to make it.
      if (!gated && args[0] === lock && /removeIfSame/.test(caller)) {
        gated = true;
        await gate;
      }
      return st;
    });
    const openSpy = vi.spyOn(fsp, 'open').mockImplementation(async (...args) => {
      try {
        const fh = await open(...(args as Parameters<typeof open>));
        if (args[0] === lock && held) gotInWhileHeld = true;
        return fh;
      } finally {
        if (args[0] === lock && held) opened?.();
      }
    });
    try {
      let inside = 0;
      let both = false;
      let entered = false;
      const enter = async (): Promise<void> => {
        if (++inside > 1) both = true;
        if (entered)
          opened?.(); // in beside (or after) the first: it need wait no longer
        else {
          entered = true;
          held = true;
          // The other waiter's next try at the lock, once it is let go on.
          const tried = new Promise<void>((r) => (opened = r));
          release();
          await tried;
          held = false;
        }
        inside--;
      };
      const opts = { timeoutMs: 10_000, staleMs: 60_000 };
      await Promise.all([withFileLock(file, enter, opts), withFileLock(file, enter, opts)]);
      expect(gotInWhileHeld).toBe(false);
      expect(both).toBe(false);
      expect(existsSync(lock)).toBe(false);
    } finally {
      statSpy.mockRestore();
      openSpy.mockRestore();
    }
  });

  it('serialises read-modify-writes in one process', async () => {
    const dir = tempDir('zz-lock-');
    const file = join(dir, 'n.txt');
    writeFileSync(file, '0');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withFileLock(file, async () => {
          const n = Number(readFileSync(file, 'utf8'));
          await new Promise((r) => setTimeout(r, 1));
          writeFileSync(file, String(n + 1));
        }),
      ),
    );
    expect(readFileSync(file, 'utf8')).toBe('20');
  });
});

describe('settleBackground', () => {
  it('waits for tracked work, and no longer than its timeout', async () => {
    let done = false;
    trackBackground(new Promise((r) => setTimeout(r, 50)).then(() => (done = true)));
    await settleBackground();
    expect(done).toBe(true);
    trackBackground(new Promise(() => {}));
    // A piece that never settles: settle still returns (the test's own timeout would fail it).
    await settleBackground(100);
  });
});
