import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/index.js';
import { initRepo, ZzRepo } from '../../src/core/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// `zz git show-file > f` writes the file as it is: into a pipe or a file (stdout not a TTY)
// the content goes out as its exact bytes, binary files included; on a terminal it is shown
// with control characters escaped. The review's case: a form feed and a bare CR came out
// altered, with exit 0.

const TEXT = 'page one\x0cpage two\rover\u202eright\x1b[2J'; // no final newline either
const BINARY = Buffer.from([0x00, 0xff, 0x0c, 0x0d, 0x1b, 0x9b, 0x89, 0x50, 0x4e, 0x47]);
// Past the tool's page (1 MiB), with a 3-byte character across each page boundary region.
const LONG = ('ab€\n'.repeat(100_000) + 'x'.repeat(1000)).repeat(5);
const LONG_BIN = Buffer.concat([BINARY, Buffer.alloc(2_500_000, 0x9b), BINARY]);

let dir: string;

beforeAll(async () => {
  dir = makeRepo('zz-show-raw-').dir;
  writeFileSync(join(dir, 'weird.txt'), TEXT);
  writeFileSync(join(dir, 'blob.bin'), BINARY);
  writeFileSync(join(dir, 'long.txt'), LONG);
  writeFileSync(join(dir, 'long.bin'), LONG_BIN);
  sh(dir, 'add', '.');
  sh(dir, 'commit', '-q', '-m', 'odd files');
  const repo = await ZzRepo.open(dir);
  await initRepo(repo, { owner: 'owner@example.com', default_branch: 'main' });
  repo.close();
});

/** The CLI in-process with stdout a terminal or not, capturing bytes written as bytes. */
async function showFile(path: string, isTTY: boolean, ...more: string[]) {
  let stdout = '';
  let stderr = '';
  const bytes: Buffer[] = [];
  const code = await run(['git', 'show-file', '--path', path, ...more], {
    stdout: (s) => (stdout += s),
    stdoutBytes: (b) => bytes.push(Buffer.from(b)),
    stderr: (s) => (stderr += s),
    env: cliEnv(),
    cwd: dir,
    isTTY,
  });
  return { code, stdout, stderr, bytes: Buffer.concat(bytes) };
}

describe('zz git show-file', () => {
  it('into a pipe or file writes the exact content: form feed, bare CR, escapes, no newline added', async () => {
    const r = await zz(dir, cliEnv(), 'git', 'show-file', '--path', 'weird.txt');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(TEXT);
    expect(r.stderr).toBe('');
  });

  it('into a pipe or file writes a binary file as its bytes', async () => {
    const r = await showFile('blob.bin', false);
    expect(r.code, r.stderr).toBe(0);
    expect(r.bytes.equals(BINARY)).toBe(true);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe('');
  });

  // The review's LOW: `> f` of a file past one page wrote its first MiB, with exit 0.
  it('into a pipe or file writes a file past one page whole; --offset/--limit ask for one page', async () => {
    const text = await showFile('long.txt', false);
    expect(text.code, text.stderr).toBe(0);
    expect(Buffer.byteLength(LONG)).toBeGreaterThan(2 * 1024 * 1024);
    expect(text.stdout.length).toBe(LONG.length);
    expect(text.stdout === LONG).toBe(true);
    expect(text.stderr).toBe('');
    const bin = await showFile('long.bin', false);
    expect(bin.code, bin.stderr).toBe(0);
    expect(bin.bytes.equals(LONG_BIN)).toBe(true);
    const page = await showFile('long.txt', false, '--limit', '1000');
    expect(page.code).toBe(0);
    expect(page.stdout).toBe(LONG.slice(0, page.stdout.length));
    expect(Buffer.byteLength(page.stdout)).toBeLessThanOrEqual(1000);
    expect(page.stderr).toMatch(/--offset \d+/);
  });

  it('on a terminal shows control characters as escapes and says a binary file is binary', async () => {
    const text = await showFile('weird.txt', true);
    expect(text.code).toBe(0);
    expect(text.stdout).toBe('page one\\x0cpage two\\x0dover<U+202E>right\\x1b[2J\n');
    const bin = await showFile('blob.bin', true);
    expect(bin.bytes.length).toBe(0);
    expect(bin.stdout).toBe('');
    expect(bin.stderr).toMatch(/blob\.bin is binary \(10 bytes\)/);
  });

  it('says so in its help', async () => {
    const r = await zz(dir, cliEnv(), 'git', 'show-file', '--help');
    expect(r.stdout).toMatch(/into a pipe or a file[\s\S]*exact bytes/);
  });
});
