import type { Writable } from 'node:stream';

// Waiting until a stream has handed over what was written to it. Into a pipe, output past what
// the pipe holds (64 KiB) is still queued in this process, and process.exit drops it; a
// transport that ends must not cut its last answer either.

/**
 * Resolves once everything written to `out` so far has been handed to the OS (a write's
 * callback runs after every write before it), the stream failed or ended, or `timeoutMs`
 * passed (no bound when it is left out: a reader that never reads keeps the caller waiting).
 */
export function flushed(out: Writable, timeoutMs?: number): Promise<void> {
  if (out.destroyed || out.writableEnded || out.writableLength === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = timeoutMs === undefined ? undefined : setTimeout(resolve, timeoutMs);
    out.write('', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
