import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// `zz init --no-fetch` sets up offline without touching remotes (it used to be refused with
// "Unknown argument: fetch"); without it, init fetches refs/zz/* first.

describe('zz init --no-fetch', () => {
  it('skips the fetch; plain init tries it', async () => {
    const env = cliEnv();
    const one = makeRepo();
    const two = makeRepo();
    try {
      for (const r of [one, two]) sh(r.dir, 'remote', 'add', 'origin', join(r.dir, 'missing'));
      const skipped = await zz(one.dir, env, 'init', '--no-fetch', '--json');
      expect(skipped.stderr).toBe('');
      expect(skipped.code).toBe(0);
      expect(skipped.json().fetch_failed).toEqual([]);
      expect(sh(one.dir, 'rev-parse', '--verify', 'refs/zz/config')).toMatch(/^[0-9a-f]{40}$/);
      const fetched = await zz(two.dir, env, 'init', '--json');
      expect(fetched.code).toBe(0);
      expect(fetched.json().fetch_failed).toEqual([expect.objectContaining({ remote: 'origin' })]);
    } finally {
      one.cleanup();
      two.cleanup();
    }
  });
});
