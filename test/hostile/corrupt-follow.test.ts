import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// `zz lane events --follow` across Lanes: a Lane ref that cannot be read is skipped (the
// others keep flowing) and named on stderr, once, as lane_events names it in `corrupt`.

describe('zz lane events --follow beside a corrupt Lane', () => {
  it('names the Lane it skips on stderr, once, and keeps printing the others', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      await zz(dir, env, 'lane', 'propose', '--lane-id', 'x', '--title', 'X');
      const blob = sh(dir, 'hash-object', '-w', 'README.md');
      sh(dir, 'update-ref', 'refs/zz/lanes/broken', blob);
      let stdout = '';
      let stderr = '';
      // Resolved by the output itself as it arrives (no polling, no sleeps).
      const waiting: Array<{ re: RegExp; done: () => void }> = [];
      const printed = (re: RegExp) =>
        new Promise<void>((done) => (re.test(stdout) ? done() : waiting.push({ re, done })));
      let ctrlC!: () => void;
      const stopSignal = new Promise<void>((r) => (ctrlC = r));
      const following = run(['lane', 'events', '--follow', '--wait-ms', '200'], {
        stdout: (s) => {
          stdout += s;
          for (const w of waiting.filter((x) => x.re.test(stdout))) w.done();
        },
        stderr: (s) => (stderr += s),
        env,
        cwd: dir,
        isTTY: false,
        stopSignal,
      });
      await printed(/lane_propose/);
      await zz(dir, env, 'ask', 'post', '--lane-id', 'x', '--kind', 'work', '--title', 'T');
      await printed(/ask_post/);
      ctrlC();
      expect(await following).toBe(0);
      expect(stderr).toMatch(/^zz: skipped refs\/zz\/lanes\/broken, which cannot be read: .+\n$/);
    } finally {
      cleanup();
    }
  });
});
