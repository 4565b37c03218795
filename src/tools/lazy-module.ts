// A tool's use cases are imported on its first call (a CLI command loads only its own; see
// cli/tool-calls.ts), then held. Hazard: an `import()` on every call is not free even for a
// module already loaded: each runs the loader's resolve step again (under a loader hook such
// as tsx's, a round trip to the hooks' thread). Done per tool call it took the daemon's CPU
// per request in the 64-client mixed load from 0.75 to 1.01 ms (bench/load, 3 Dec).

/** `load()` once, on first use; the same promise after (again after a failed load). */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let held: Promise<T> | undefined;
  return () => {
    if (held === undefined) {
      held = load();
      held.catch(() => (held = undefined));
    }
    return held;
  };
}
