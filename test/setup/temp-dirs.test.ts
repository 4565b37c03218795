import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv } from '../helpers/cli-env.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { tempDir } from '../helpers/temp-dirs.js';

// The helpers' temporary repos and homes must not pile up in the temp dir: a probe test file,
// run by a child vitest, makes some and never cleans up; once it ends they must be gone.

const PROBE = process.env.ZZ_TEMP_DIR_PROBE;

describe.runIf(PROBE)('temp dir probe (run by the test below)', () => {
  it('makes a repo and a home and forgets them', () => {
    const repo = makeRepo();
    const env = cliEnv();
    const home = join(env.XDG_CONFIG_HOME!, '..');
    process.stdout.write(`\nPROBE ${JSON.stringify([repo.dir, home])}\n`);
    expect(existsSync(repo.dir) && existsSync(home)).toBe(true);
  });
});

describe.skipIf(PROBE)('test helpers', () => {
  it('remove their temporary repos and homes when a test file ends', () => {
    const out = tempDir('zz-probe-');
    const r = spawnSync(
      process.execPath,
      [
        'node_modules/vitest/vitest.mjs',
        'run',
        'test/setup/temp-dirs.test.ts',
        '--reporter=verbose',
      ],
      {
        env: { ...process.env, ZZ_TEMP_DIR_PROBE: join(out, 'probe') },
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const line = /PROBE (\[.*\])/.exec(r.stdout + r.stderr)?.[1];
    expect(line, r.stdout).toBeTruthy();
    const dirs = JSON.parse(line!) as string[];
    expect(dirs).toHaveLength(2);
    for (const d of dirs) expect(existsSync(d), d).toBe(false);
  });
});
