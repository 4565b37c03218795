import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createFileExclusive } from '../../src/local/index.js';
import { tempDir } from '../helpers/temp-dirs.js';

// A file made once and never replaced (a signing key): of racing creators exactly one wins,
// the file is never seen partial, and nothing is left beside it.

describe('createFileExclusive', () => {
  it('creates once; a second call leaves the first content', async () => {
    const dir = tempDir('zz-excl-');
    const file = join(dir, 'keys', 'k.pem');
    expect(await createFileExclusive(file, 'first\n', { mkdir: true })).toBe(true);
    expect(await createFileExclusive(file, 'second\n')).toBe(false);
    expect(readFileSync(file, 'utf8')).toBe('first\n');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readdirSync(join(dir, 'keys'))).toEqual(['k.pem']);
  });

  it('of 20 racing creators exactly one wins, and its content is whole', async () => {
    const dir = tempDir('zz-excl-');
    const file = join(dir, 'k');
    const bodies = Array.from({ length: 20 }, (_, i) => `${i}:`.padEnd(64 * 1024, String(i % 10)));
    const won = await Promise.all(bodies.map((b) => createFileExclusive(file, b)));
    expect(won.filter(Boolean)).toHaveLength(1);
    expect(readFileSync(file, 'utf8')).toBe(bodies[won.indexOf(true)]);
    expect(readdirSync(dir)).toEqual(['k']);
  });

  it('fails without leaving anything when the directory is missing (mkdir not asked)', async () => {
    const dir = tempDir('zz-excl-');
    await expect(createFileExclusive(join(dir, 'missing', 'k'), 'x')).rejects.toMatchObject({
      code: 'ENOENT',
    });
    expect(readdirSync(dir)).toEqual([]);
  });
});
