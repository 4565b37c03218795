// Local-file writes that run after the request that caused them (a token's last-use stamp):
// tracked here so that a short-lived process (the CLI) can wait for them before it exits.
// Exiting in the middle of one leaves its lock file behind, and the next zz process then
// waits for a lock nobody will release.

const pending = new Set<Promise<unknown>>();

/** Registers background work; it is forgotten when it settles. */
export function trackBackground<T>(work: Promise<T>): Promise<T> {
  pending.add(work);
  const forget = () => pending.delete(work);
  work.then(forget, forget);
  return work;
}

/** Waits (at most `timeoutMs`) for every tracked piece of background work to settle. */
export async function settleBackground(timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (pending.size > 0 && Date.now() < deadline) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...pending]),
      new Promise((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now())))),
    ]);
    clearTimeout(timer);
  }
}
