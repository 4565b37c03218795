import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { ensureBuilt, ZZ_MAIN } from '../e2e/zz-process.js';

// Long text from a file: `--body-file PATH` (`-` for stdin) beside `--body`, and the same for
// every field the tool schemas mark as long text (answers' --result, Lane descriptions, commit
// messages). A 1 MB `--body` never reached zz: the kernel refuses the command line (E2BIG).

const { dir, cleanup } = makeRepo();
const files = tempDir('zz-text-files-');
const env = cliEnv();
afterAll(() => cleanup());
beforeAll(async () => {
  ensureBuilt();
  expect((await zz(dir, env, 'init')).code).toBe(0);
});

/** The built CLI in a process of its own, `input` on its stdin (not the sources through tsx:
 * ~1 s of CPU a start against ~2.3 s, which at CI's load took three starts past the bound). */
function zzProcess(input: string, ...args: string[]) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, [ZZ_MAIN, ...args], { cwd: dir, env });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.stdin.on('error', () => {}); // zz may stop reading once past the bound
    child.stdin.end(input);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const post = ['ask', 'post', '--lane-id', '_repo', '--kind', 'work', '--title'];
const asksPosted = async () =>
  (
    (await zz(dir, env, 'ask', 'list', '--lane-id', '_repo', '--json')).json() as {
      asks: unknown[];
    }
  ).asks.length;

describe('--body-file and the other long-text files', { timeout: 60_000 }, () => {
  it('why: a body past what a command line holds never reaches zz', () => {
    const r = spawnSync(process.execPath, ['-e', '0', '--', '--body', 'x'.repeat(1 << 20)]);
    expect((r.error as NodeJS.ErrnoException | undefined)?.code).toBe('E2BIG');
  });

  it('posts the file as the body, byte for byte, up to the body limit', async () => {
    const body = 'é\u202e line\r\n'.repeat(4000); // 60 000 bytes of UTF-8, odd characters kept
    writeFileSync(join(files, 'body.txt'), body);
    const r = await zz(
      dir,
      env,
      ...post,
      'from a file',
      '--body-file',
      join(files, 'body.txt'),
      '--json',
    );
    expect(r.code, r.stderr).toBe(0);
    const id = (r.json() as { ask: { ask_id: string } }).ask.ask_id;
    const got = await zz(dir, env, 'ask', 'get', '--ask-id', id, '--json');
    expect((got.json() as { ask: { body: string } }).ask.body).toBe(body);
  });

  it('refuses a file past the limit in one line naming the flag and the limit; nothing posted', async () => {
    writeFileSync(join(files, 'big.txt'), 'x'.repeat(1_000_000));
    const before = await asksPosted();
    const r = await zz(dir, env, ...post, 'too big', '--body-file', join(files, 'big.txt'));
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `zz: --body-file: ${join(files, 'big.txt')} holds more than 64 KiB of UTF-8, the most --body may be\n`,
    );
    // Exactly at the limit is fine; one byte past is not.
    writeFileSync(join(files, 'edge.txt'), 'y'.repeat(64 * 1024));
    expect((await zz(dir, env, ...post, 'edge', '--body-file', join(files, 'edge.txt'))).code).toBe(
      0,
    );
    writeFileSync(join(files, 'past.txt'), 'y'.repeat(64 * 1024 + 1));
    expect((await zz(dir, env, ...post, 'past', '--body-file', join(files, 'past.txt'))).code).toBe(
      2,
    );
    expect(await asksPosted()).toBe(before + 1);
  });

  it('refuses --body with --body-file, and a file that cannot be read, in one line each', async () => {
    writeFileSync(join(files, 'small.txt'), 'small');
    const both = await zz(
      dir,
      env,
      ...post,
      't',
      '--body',
      'x',
      '--body-file',
      join(files, 'small.txt'),
    );
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^zz: .*body.*body-file.*mutually exclusive/);
    const gone = await zz(dir, env, ...post, 't', '--body-file', join(files, 'nope.txt'));
    expect(gone.code).toBe(2);
    expect(gone.stderr).toBe(`zz: --body-file: cannot read ${join(files, 'nope.txt')} (ENOENT)\n`);
  });

  it('reads stdin for -, bounded the same way (and --args-file - works spaced too)', async () => {
    const ok = await zzProcess('from stdin\n', ...post, 'stdin', '--body-file', '-', '--json');
    expect(ok.code, ok.stderr).toBe(0);
    expect((JSON.parse(ok.stdout) as { ask: { body: string } }).ask.body).toBe('from stdin\n');
    const big = await zzProcess('z'.repeat(1_000_000), ...post, 'stdin', '--body-file', '-');
    expect(big.code).toBe(2);
    expect(big.stderr).toBe(
      'zz: --body-file: stdin holds more than 64 KiB of UTF-8, the most --body may be\n',
    );
    const args = await zzProcess('{}', 'call', 'repo_state', '--args-file', '-');
    expect(args.code, args.stderr).toBe(0);
  });

  it('gives a Lane description from a file, bounded in characters as the tool bounds it', async () => {
    const propose = (file: string, text: string) => {
      writeFileSync(join(files, file), text);
      const flags = ['--title', 'Docs', '--description-file', join(files, file)];
      return zz(dir, env, 'lane', 'propose', ...flags);
    };
    const ok = await propose('desc.md', 'é'.repeat(20_000)); // 40 000 bytes, 20 000 characters
    expect(ok.code, ok.stderr).toBe(0);
    const long = await propose('long.md', 'é'.repeat(20_001));
    expect(long.code).toBe(2);
    expect(long.stderr).toMatch(
      /^zz: --description-file: .* holds more than 20000 characters, the most --description may be\n$/,
    );
    const help = await zz(dir, env, 'ask', 'answer', '--help');
    expect(help.stdout).toMatch(/--result-file\s+Read --result from a file \(- for stdin\)/);
  });
});
