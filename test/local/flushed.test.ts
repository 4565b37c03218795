import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { flushed } from '../../src/local/flushed.js';

// The one "wait until a stream has handed over what was written" (cli/main.ts before exit,
// mcp/stdio.ts before it ends its transport): real Writables whose sink takes data only when
// the test lets it.

function gatedSink(): { out: Writable; open: () => void; taken: () => number } {
  let taken = 0;
  const waiting: Array<() => void> = [];
  let isOpen = false;
  const out = new Writable({
    highWaterMark: 16,
    write(chunk: Buffer, _enc, done) {
      const take = () => {
        taken += chunk.length;
        done();
      };
      if (isOpen) take();
      else waiting.push(take);
    },
  });
  return {
    out,
    open: () => {
      isOpen = true;
      for (const w of waiting.splice(0)) w();
    },
    taken: () => taken,
  };
}

describe('flushed', () => {
  it('resolves only once the sink has taken every byte written before it', async () => {
    const sink = gatedSink();
    sink.out.write('a'.repeat(1000));
    sink.out.write('b'.repeat(1000));
    let done = false;
    const p = flushed(sink.out).then(() => (done = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(done).toBe(false);
    sink.open();
    await p;
    expect(sink.taken()).toBe(2000);
  });

  it('gives up after timeoutMs when nobody reads, and at once on an idle or ended stream', async () => {
    const sink = gatedSink();
    sink.out.write('x'.repeat(100));
    const started = Date.now();
    await flushed(sink.out, 100);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(sink.taken()).toBe(0);
    const idle = gatedSink();
    await flushed(idle.out, 60_000);
    idle.out.end();
    await flushed(idle.out);
  });
});
