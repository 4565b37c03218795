import { readdirSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { makeRepo } from '../helpers/temp-repo.js';

// A full gc's mark that cannot be set (git/maintenance.ts gcFull): a mark made by another user
// (`sudo zz serve` once), an immutable file, a read-only mount. Real git; only the mark's
// updates fail (EPERM, as utimes and open answer for a file of another user's or chattr +i).

const denied = vi.hoisted(() => ({ on: false }));
vi.mock(import('node:fs'), async (original) => {
  const fs = await original();
  const deny = (path: unknown) => {
    if (denied.on && String(path).endsWith('last-full-gc')) {
      throw Object.assign(new Error(`EPERM: operation not permitted, '${String(path)}'`), {
        code: 'EPERM',
      });
    }
  };
  return {
    ...fs,
    utimesSync: (...a: Parameters<typeof fs.utimesSync>) => (deny(a[0]), fs.utimesSync(...a)),
    writeFileSync: (...a: Parameters<typeof fs.writeFileSync>) => (
      deny(a[0]),
      fs.writeFileSync(...a)
    ),
  };
});
const { fullGcDue, gcFull } = await import('../../src/git/index.js');

let cleanup: (() => void) | undefined;
afterEach(() => {
  denied.on = false;
  cleanup?.();
  cleanup = undefined;
});

describe('full gc mark', () => {
  it('answers off, running no gc and throwing nothing, when its mark cannot be set (else it is due and fails on every tick, and the timer runs no gc at all)', async () => {
    const made = makeRepo('zz-fullgc-mark-');
    cleanup = made.cleanup;
    const gitdir = join(made.dir, '.git');
    const day = 24 * 3600_000;
    expect(fullGcDue(gitdir, day)).toBe(false); // the mark is made
    const twoDays = new Date(Date.now() - 2 * day);
    utimesSync(join(gitdir, 'zz', 'last-full-gc'), twoDays, twoDays);
    denied.on = true;
    expect(fullGcDue(gitdir, day)).toBe(true);
    const packs = () => readdirSync(join(gitdir, 'objects', 'pack')).sort();
    const before = packs();
    expect(await gcFull(gitdir)).toBe('off');
    expect(packs()).toEqual(before);
  });
});
