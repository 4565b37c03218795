import { describe, expect, it } from 'vitest';
import { KeyedQueue } from '../../src/local/index.js';

/** A promise and the function that settles it: the test decides when each piece ends. */
function gate(): { done: Promise<void>; open: () => void } {
  let open!: () => void;
  const done = new Promise<void>((r) => (open = r));
  return { done, open };
}

describe('KeyedQueue', () => {
  it('runs one piece per key at a time in call order, keys side by side, past failures', async () => {
    const q = new KeyedQueue();
    const log: string[] = [];
    const a1 = gate();
    const first = q.run('a', async () => {
      log.push('a1 start');
      await a1.done;
      log.push('a1 end');
      throw new Error('a1 failed');
    });
    const second = q.run('a', async () => {
      log.push('a2');
      return 2;
    });
    const other = q.run('b', async () => {
      log.push('b1');
      return 'b';
    });
    // b does not wait for a; a2 waits for a1 (which has not ended yet).
    expect(await other).toBe('b');
    expect(log).toEqual(['a1 start', 'b1']);
    a1.open();
    await expect(first).rejects.toThrow('a1 failed');
    expect(await second).toBe(2);
    expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
    // Nothing is kept for keys with no work left (cleared a few promise turns later).
    for (let i = 0; i < 5; i++) await Promise.resolve();
    expect(q.size).toBe(0);
  });
});
