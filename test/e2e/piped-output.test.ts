import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, serve, zz, ZZ_MAIN } from './zz-process.js';

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

  it('zz git show-file > f writes the file as it is, binary or text', async () => {
    const { dir, cleanup } = makeRepo();
    try {
      const binary = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x0c, 0x0d, 0x1b, 0x9b]);
      const text = 'one\x0ctwo\rthree\u202e';
      writeFileSync(join(dir, 'logo.png'), binary);
      writeFileSync(join(dir, 'odd.txt'), text);
      sh(dir, 'add', '.');
      sh(dir, 'commit', '-q', '-m', 'odd files');
      const env = privateEnv();
      expect((await zz(dir, env, ['init', '--no-fetch'])).code).toBe(0);
      for (const [path, bytes] of [
        ['logo.png', binary],
        ['odd.txt', Buffer.from(text)],
      ] as const) {
        const r = spawnSync(process.execPath, [ZZ_MAIN, 'git', 'show-file', '--path', path], {
          cwd: dir,
          env,
        });
        expect(r.status, r.stderr.toString()).toBe(0);
        expect(r.stdout.equals(bytes), path).toBe(true);
      }
    } finally {
      cleanup();
    }
  });

  // Through a running daemon (the CLI's fast path answered the first page and stopped: a file
  // past one page came out as its first MiB, exit 0), and past 4 MiB, where the daemon streams
  // the blob from a one-off git for each page.
  it('zz git show-file > f through a running daemon writes a file past the largest page whole', async () => {
    const { dir, cleanup } = makeRepo();
    try {
      const line = (i: number) => `${String(i).padStart(7, '0')} ${'é'.repeat(40)}\n`;
      const text = Array.from({ length: 200_000 }, (_, i) => line(i)).join(''); // ~17.8 MB: 2 pages
      writeFileSync(join(dir, 'big.txt'), text);
      sh(dir, 'add', 'big.txt');
      sh(dir, 'commit', '-q', '-m', 'big');
      const env = privateEnv();
      expect((await zz(dir, env, ['init', '--no-fetch'])).code).toBe(0);
      expect((await zz(dir, env, ['login'])).code).toBe(0);
      const daemon = await serve(dir, env);
      const r = spawnSync(process.execPath, [ZZ_MAIN, 'git', 'show-file', '--path', 'big.txt'], {
        cwd: dir,
        env,
        maxBuffer: 64 * 1024 * 1024,
      });
      expect(r.status, r.stderr.toString()).toBe(0);
      expect(r.stdout.length).toBe(Buffer.byteLength(text));
      expect(r.stdout.equals(Buffer.from(text))).toBe(true);
      expect(r.stderr.toString()).toBe('');
      // It went through the daemon (its request log names the calls).
      await daemon.waitForLog(/git_show_file/);
    } finally {
      cleanup();
    }
  });
});
