import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

// A private config home for a CLI run (removed when the test file ends). Apart from
// cli-harness.ts, which loads the whole CLI: the temp-dir probe (test/setup/temp-dirs.test.ts)
// runs in a child vitest, and importing the CLI there tripled that child's cost.
export function cliEnv(): NodeJS.ProcessEnv {
  const home = tempDir('zz-home-');
  // No ZZ_TOKEN of the developer's shell: unset, not empty (an empty one is refused).
  const { ZZ_TOKEN: _unset, ...rest } = process.env;
  return {
    ...rest,
    XDG_CONFIG_HOME: join(home, 'config'),
    XDG_CACHE_HOME: join(home, 'cache'),
    NO_COLOR: '1',
  };
}
