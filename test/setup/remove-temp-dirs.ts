import { afterAll } from 'vitest';
import { settleBackground } from '../../src/local/background.js';
import { removeTempDirs } from '../helpers/temp-dirs.js';

// Runs in every test file (vitest setupFiles): whatever tempDir() made is removed at the end,
// after the lazy background writes (a token's last-use stamp) have landed: one landing after
// the removal made its directory again, and those piled up in the temp dir.
afterAll(async () => {
  await settleBackground();
  removeTempDirs();
});
