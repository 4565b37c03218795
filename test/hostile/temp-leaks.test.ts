import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dirs.js';

// Hardening 11.12 (temporary homes never removed), found again by the audit: 543 zz-tokens-*
// directories had piled up in /tmp, 5 more with every run of test/core/token-store.test.ts —
// its afterEach removed each directory, then a TokenStore's lazy last-use write (10 ms later,
// `mkdir: true`) made it again. Run test files in a child vitest with a temp dir of their own:
// when they end, nothing of theirs may be left in it, whatever made it.

const FILES = ['test/core/token-store.test.ts', 'test/setup/temp-dirs.test.ts'];

describe('test files leave nothing in the temp dir', () => {
  it(`${FILES.join(', ')}: the temp dir is empty when they end`, () => {
    const tmp = tempDir('zz-leaks-');
    const r = spawnSync(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', ...FILES], {
      env: { ...process.env, TMPDIR: tmp, ZZ_TEMP_DIR_PROBE: '' },
      encoding: 'utf8',
      timeout: 180_000,
    });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    // Lazy writes land a few ms after a test: the child has exited, so they have all landed.
    // tsx keeps its compile cache in <tmp>/tsx-<uid> (one, reused by every run): not ours.
    const left = readdirSync(tmp)
      .filter((n) => !/^tsx-\d+$/.test(n))
      .map((n) => join(tmp, n));
    expect(left).toEqual([]);
    // spawnSync blocks the worker, so vitest's timeout cannot cut the child short: it could
    // only fail a run that finished (76 s under CI load). The child's own bound is 180 s.
  }, 200_000);
});
