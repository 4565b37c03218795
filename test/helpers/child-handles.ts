// The git children this thread's event loop holds a handle of, by their command line: a child
// spawned on this loop is one of them until it has exited; one started from a worker thread
// (git/spawn-thread.ts) never is. Other children (vitest's, a helper's) are not counted.
export function gitChildren(): string[] {
  const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
  return handles
    .map((h) => (h as { spawnargs?: string[] }).spawnargs)
    .filter((a): a is string[] => Array.isArray(a) && (a[0] === 'git' || a[0] === 'nice'))
    .map((a) => a.join(' '));
}
