import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Removes the temporary repos and homes the test helpers made (test/helpers/temp-dirs.ts).
    setupFiles: ['test/setup/remove-temp-dirs.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // A 2-core machine: more workers only fight over the disk and fsync.
    maxWorkers: 2,
  },
});
