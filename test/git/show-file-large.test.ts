import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUtf8 } from 'node:buffer';
import { Utf8Stream } from '../../src/git/blob-window.js';
import { sh } from '../helpers/temp-repo.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';

// git_show_file on blobs larger than any page: the daemon holds the page, never the blob
// (hostile review: one byte of a 100 MB file raised the daemon's RSS by ~100 MB). Its own file
// so that this process's peak RSS is the daemon's reads and nothing else's.

const MiB = 1024 * 1024;
/**
 * Twice the bound below: holding it whole is unmistakable. Streaming it leaves 64 KiB chunks
 * for the collector, 30-55 MiB at the peak whatever the blob's size (V8 collects when
 * external memory has grown by about 64 MiB), so the bound cannot be much lower.
 */
const BIG = 160 * MiB;
const BOUND = BIG / 2;

/** Peak resident memory of this process (Linux), reset by resetPeak(). */
const peak = (): number =>
  Number(/VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))![1]) * 1024;
const resetPeak = () => writeFileSync('/proc/self/clear_refs', '5');

/** Line i of the big text file: numbered, with a two-byte character to split pages on. */
const line = (i: number) => `line ${String(i).padStart(9, '0')} é ${'x'.repeat(i % 50)}\n`;

/** Where line i starts: line(j) is 19 + j % 50 bytes ("é" is two). */
function lineStart(i: number): number {
  const c = Math.floor(i / 50);
  const r = i % 50;
  return c * (50 * 19 + (49 * 50) / 2) + r * 19 + (r * (r - 1)) / 2;
}

/** Writes `size` bytes of lines into git's object store (no file on disk); the blob's id. */
async function hashText(dir: string, size: number, tail = Buffer.alloc(0)): Promise<string> {
  const git = spawn('git', ['hash-object', '-w', '--stdin'], { cwd: dir });
  let out = '';
  git.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const done = new Promise((r) => git.once('close', r));
  let left = size;
  for (let i = 0; left > 0;) {
    let chunk = '';
    while (chunk.length < 64 * 1024) chunk += line(i++);
    const b = Buffer.from(chunk).subarray(0, left);
    left -= b.length;
    if (!git.stdin.write(b)) await new Promise((r) => git.stdin.once('drain', r));
  }
  git.stdin.end(tail);
  await done;
  return out.trim();
}

/** Bytes [from, to) of a blob as native git prints it, streamed (nothing whole held here). */
function nativeRange(dir: string, oid: string, from: number, to: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const git = spawn('git', ['cat-file', 'blob', oid], { cwd: dir });
    const parts: Buffer[] = [];
    let pos = 0;
    git.stdout.on('data', (b: Buffer) => {
      const a = Math.max(pos, from);
      const z = Math.min(pos + b.length, to);
      if (a < z) parts.push(Buffer.from(b.subarray(a - pos, z - pos)));
      pos += b.length;
    });
    git.once('error', reject);
    git.once('close', () => resolve(Buffer.concat(parts)));
  });
}

let td: TestDaemon;
let token: string;
let textOid: string;
let zeroOid: string;
let badOid: string;

beforeAll(async () => {
  td = await startTestDaemon({ prefix: 'zz-bigblob-' });
  token = await td.token('owner@example.com');
  textOid = await hashText(td.dir, BIG);
  // A sparse file of zeros: binary (a NUL at once), nothing of it on disk.
  const zeros = `${td.dir}/.git/zeros`;
  spawnSync('truncate', ['-s', String(BIG), zeros]);
  zeroOid = sh(td.dir, 'hash-object', '-w', zeros);
  spawnSync('rm', [zeros]);
  sh(td.dir, 'update-index', '--add', '--cacheinfo', `100644,${textOid},big.txt`);
  sh(td.dir, 'update-index', '--add', '--cacheinfo', `100644,${zeroOid},zeros.bin`);
  // Past the size read whole (4 MiB), text but for one byte at its very end.
  badOid = await hashText(td.dir, 6 * MiB, Buffer.from([0xff]));
  sh(td.dir, 'update-index', '--add', '--cacheinfo', `100644,${badOid},bad-end.txt`);
  sh(td.dir, 'commit', '-q', '-m', 'big files');
}, 300_000);

afterAll(async () => {
  await td?.close();
});

async function show(args: Record<string, unknown>) {
  const res = await fetch(`${td.url}/api/repos/${td.key}/tools/git_show_file`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify(args),
  });
  const body = (await res.json()) as { result?: any; error?: unknown }; // eslint-disable-line @typescript-eslint/no-explicit-any
  expect(res.status, JSON.stringify(body.error)).toBe(200);
  return body.result;
}

const bytesOf = (r: { content: string; encoding: string }) =>
  r.encoding === 'base64' ? Buffer.from(r.content, 'base64') : Buffer.from(r.content, 'utf8');

describe('git_show_file on a blob larger than a page', { timeout: 300_000 }, () => {
  it('holds the page, not the blob: peak RSS grows far less than the blob, bytes as git has them', async () => {
    // Warm: the cat-file processes, the tool's modules, a read through the shared process.
    expect((await show({ path: 'README.md' })).content).toContain('demo');
    const offset = 100 * MiB + 1; // inside a line, maybe inside "é": the page moves to a boundary
    resetPeak();
    const before = peak();
    const page = await show({ path: 'big.txt', offset, limit: 4096 });
    const grown = peak() - before;
    expect(page.size).toBe(BIG);
    expect(page.encoding).toBe('utf8');
    expect(page.offset).toBeGreaterThanOrEqual(offset - 3);
    const bytes = bytesOf(page);
    expect(
      bytes.equals(await nativeRange(td.dir, textOid, page.offset, page.offset + bytes.length)),
    ).toBe(true);
    expect(page.next_offset).toBe(page.offset + bytes.length);
    // Holding the blob whole grew it by more than BIG; streaming, by the chunks not yet collected.
    expect(grown, `peak RSS grew ${(grown / MiB).toFixed(1)} MiB`).toBeLessThan(BOUND);

    // The next page of the same blob, and a binary one, also without the whole blob.
    resetPeak();
    const before2 = peak();
    const next = await show({ path: 'big.txt', offset: page.next_offset, limit: 100 });
    expect(
      bytesOf(next).equals(
        await nativeRange(td.dir, textOid, next.offset, next.offset + bytesOf(next).length),
      ),
    ).toBe(true);
    const z = await show({ path: 'zeros.bin', offset: 70 * MiB, limit: 1000 });
    expect(z).toMatchObject({
      encoding: 'base64',
      size: BIG,
      offset: 70 * MiB,
      next_offset: 70 * MiB + 1000,
    });
    expect(bytesOf(z).equals(Buffer.alloc(1000))).toBe(true);
    const last = await show({ path: 'zeros.bin', offset: BIG - 10 });
    expect(last).toMatchObject({ offset: BIG - 10, next_offset: null });
    expect(bytesOf(last).length).toBe(10);
    expect(peak() - before2).toBeLessThan(BOUND);

    // The shared cat-file process is still in step: other reads answer right.
    expect((await show({ path: 'README.md' })).content).toBe(
      readFileSync(`${td.dir}/README.md`, 'utf8'),
    );
    const small = await show({ path: 'README.md', offset: 2, limit: 4 });
    expect(small.content).toBe('demo');
  });

  it('pages the whole of a large text exactly as git has it, end to end', async () => {
    // The last pages of the big text (its end and the page boundaries by the limit).
    let offset: number | null = BIG - 3 * MiB - 7;
    const got: Buffer[] = [];
    while (offset !== null) {
      const p = await show({ path: 'big.txt', offset, limit: MiB + 1 });
      expect(p.encoding).toBe('utf8');
      got.push(bytesOf(p));
      offset = p.next_offset;
    }
    const all = Buffer.concat(got);
    expect(all.equals(await nativeRange(td.dir, textOid, BIG - all.length, BIG))).toBe(true);
    expect(all.length).toBeGreaterThanOrEqual(3 * MiB + 7);
  });
});

describe('text pages of a large blob', { timeout: 300_000 }, () => {
  it('move off the middle of a character at both ends, as for a small file', async () => {
    const e = lineStart(3_000_000) + 15; // the "é" of a line ~125 MiB in
    expect(await nativeRange(td.dir, textOid, e, e + 2)).toEqual(Buffer.from('é'));
    const inside = await show({ path: 'big.txt', offset: e + 1, limit: 100 });
    expect(inside.offset).toBe(e);
    expect(inside.content.startsWith('é')).toBe(true);
    // A page that would end after the first byte of "é" ends before it.
    const cut = await show({ path: 'big.txt', offset: e - 10, limit: 11 });
    expect(cut).toMatchObject({ offset: e - 10, next_offset: e, encoding: 'utf8' });
    expect(bytesOf(cut).equals(await nativeRange(td.dir, textOid, e - 10, e))).toBe(true);
    // A limit smaller than the character gives the character whole.
    const one = await show({ path: 'big.txt', offset: e, limit: 1 });
    expect(one).toMatchObject({ content: 'é', offset: e, next_offset: e + 2 });
  });
});

describe('the kind of a large blob', { timeout: 300_000 }, () => {
  it('is of the whole file: one invalid byte at the end makes its first page base64', async () => {
    const first = await show({ path: 'bad-end.txt', offset: 0, limit: 10 });
    expect(first).toMatchObject({ encoding: 'base64', size: 6 * MiB + 1, next_offset: 10 });
    expect(bytesOf(first).toString()).toBe(line(0).slice(0, 10));
    // Remembered: the next page says the same without reading to the end.
    const again = await show({ path: 'bad-end.txt', offset: 10, limit: 10 });
    expect(again.encoding).toBe('base64');
    expect(bytesOf(again).equals(await nativeRange(td.dir, badOid, 10, 20))).toBe(true);
  });
});

describe('Utf8Stream', () => {
  it('agrees with isUtf8 on the whole, however the bytes are split', () => {
    const samples = [
      Buffer.from('aé€😀z'.repeat(5)),
      Buffer.from([0x61, 0xc3]), // cut inside a character
      Buffer.from([0xe2, 0x82, 0x28]), // a bad continuation
      Buffer.from([0xc0, 0x80]), // overlong
      Buffer.from([0xed, 0xa0, 0x80]), // a surrogate
      Buffer.from([0x80, 0x61]),
      Buffer.concat([Buffer.from('😀'), Buffer.from([0xf0, 0x9f])]),
    ];
    for (const s of samples) {
      for (let a = 0; a <= s.length; a++) {
        for (let b = a; b <= s.length; b++) {
          const u = new Utf8Stream();
          u.push(s.subarray(0, a));
          u.push(s.subarray(a, b));
          u.push(s.subarray(b));
          expect(u.end(), `${s.toString('hex')} split at ${a},${b}`).toBe(isUtf8(s));
        }
      }
    }
  });
});
