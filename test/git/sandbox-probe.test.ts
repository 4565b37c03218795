import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { namespaceAvailable } from '../../src/git/sandbox-ns.js';

// The PID-namespace probe (src/git/sandbox-ns.ts): a probe that timed out (a loaded machine)
// is not kept as "unavailable", so the next sandboxed run probes again instead of taking the
// weaker process-group isolation for the rest of the daemon's life. A fresh process (a file
// of its own, not in the shared list): the probe's answer is module state.

const user = process.getuid?.() === 0 ? [] : ['--user', '--map-current-user'];
const canUnshare =
  process.platform === 'linux' &&
  spawnSync('unshare', [...user, '--pid', '--fork', '--kill-child', 'true']).status === 0;

describe('the namespace probe', () => {
  it.runIf(canUnshare)('forgets a probe that timed out and keeps a definite answer', async () => {
    // 1 ms: killed before unshare can answer.
    expect(await namespaceAvailable(1)).toBe(false);
    expect(await namespaceAvailable()).toBe(true);
    // Kept now: even a probe that could not finish in time answers from it.
    expect(await namespaceAvailable(1)).toBe(true);
  });
});
