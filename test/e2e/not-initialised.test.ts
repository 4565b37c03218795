import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { zzMain as zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { ensureBuilt, killAll, privateEnv, serve } from './zz-process.js';

// A fresh clone of a repository whose zz state is on its remote has none of it until `zz init`
// (or `zz sync`). `zz lane list` there used to print "lanes (0) (none)" and nothing else, which
// a newcomer reads as "this project has no Lanes". Both paths say what to run: in-process, and
// the fast path to a daemon serving the clone. The daemon is a spawned `zz serve`; the commands
// run as the built zz runs them (zzMain: the fast path, then the command table) in this
// process: each spawn cost 0.6-1 s of CPU, and what is tested is what they say.

beforeAll(() => ensureBuilt());
afterEach(async () => {
  await killAll();
});

const HINT =
  'zz: zz is not initialised in this checkout; run `zz init` (in a clone it adopts the zz state already on the remote)\n';

describe('lists in a checkout where zz was never initialised', () => {
  it('say to run zz init, in-process and through a daemon, and stop once it ran', async () => {
    const { dir: origin, cleanup } = makeRepo();
    const env = privateEnv();
    try {
      expect((await zz(origin, env, ['init'])).code).toBe(0);
      const bare = tempDir('zz-uninit-remote-');
      sh(bare, 'init', '-q', '--bare');
      sh(origin, 'remote', 'add', 'origin', bare);
      sh(origin, 'push', '-q', 'origin', 'main');
      expect((await zz(origin, env, ['sync'])).code).toBe(0);

      const clone = tempDir('zz-uninit-clone-');
      sh(clone, 'clone', '-q', bare, '.');
      sh(clone, 'config', 'user.email', 'bob@example.com');
      for (const args of [
        ['lane', 'list'],
        ['ask', 'list'],
      ]) {
        const r = await zz(clone, env, args);
        expect(r.code, args.join(' ')).toBe(0);
        expect(r.stderr, args.join(' ')).toBe(HINT);
      }
      // Through the daemon's fast path (a token from `zz login`).
      const served = await serve(clone, env);
      expect((await zz(clone, env, ['login'])).code).toBe(0);
      const viaDaemon = await zz(clone, env, ['lane', 'list']);
      expect(viaDaemon.code).toBe(0);
      expect(viaDaemon.stderr).toBe(HINT);
      await served.waitForLog(/lane_list bob@example.com 200/);
      served.child.kill('SIGTERM');
      await served.exited;

      expect((await zz(clone, env, ['init'])).code).toBe(0);
      const after = await zz(clone, env, ['lane', 'list']);
      expect(after.stderr).toBe('');
      expect(after.stdout).toMatch(/^_repo /m);
      // An initialised repository with no Asks gets no hint.
      const asks = await zz(clone, env, ['ask', 'list']);
      expect(asks.stdout).toMatch(/\(none\)/);
      expect(asks.stderr).toBe('');
    } finally {
      cleanup();
    }
    // Past 60 s on a loaded 2-core CI machine when each command was a process of its own.
  }, 180_000);
});
