import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, zz, ZZ_MAIN } from './zz-process.js';

// `zz … --json | next-step` in a script: the whole output reaches a reader slower than zz.
// zz exits with process.exit, which drops whatever a pipe had not yet taken: past the pipe's
// 64 KiB a `zz lane get --json | jq` got the first 64–576 KiB of a 10 MB answer, and exit 0.

beforeAll(ensureBuilt);
afterEach(killAll);

describe('output into a pipe', () => {
  it('arrives whole when the reader is slower than zz', async () => {
    const { dir, cleanup } = makeRepo();
    try {
      const line = 'x'.repeat(99) + '\n';
      writeFileSync(join(dir, 'big.txt'), line.repeat(6000)); // 600 KB, far past a pipe
      sh(dir, 'add', 'big.txt');
      sh(dir, 'commit', '-q', '-m', 'big');
      const env = privateEnv();
      expect((await zz(dir, env, ['init', '--no-fetch'])).code).toBe(0);
      // What a script does: zz into a reader that is busy for a while before it reads.
      const out = execFileSync(
        'sh',
        [
          '-c',
          `"$0" "$1" git show-file --path big.txt --json | (sleep 2; cat)`,
          process.execPath,
          ZZ_MAIN,
        ],
        { cwd: dir, env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
      );
      const parsed = JSON.parse(out) as { content: string };
      expect(parsed.content).toBe(line.repeat(6000));
      // A reader that stops early (`| head`): zz ends quietly, no EPIPE stack, with 141 as a
      // program ended by SIGPIPE (git log | head) reports it under pipefail (main.ts).
      const early = spawnSync(
        'bash',
        [
          '-c',
          `set -o pipefail; "$0" "$1" git show-file --path big.txt --json | head -c 10 >/dev/null`,
          process.execPath,
          ZZ_MAIN,
        ],
        { cwd: dir, env, encoding: 'utf8' },
      );
      expect(early.stderr).toBe('');
      expect(early.status).toBe(141);
    } finally {
      cleanup();
    }
  });
});
