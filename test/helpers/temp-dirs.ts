import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Temporary directories for tests (repos, homes), removed after each test file by the setup
// file test/setup/remove-temp-dirs.ts, whether or not the test remembered to clean up: before,
// hundreds of zz-home-* and zz-test-* piled up in the temp dir.

const made = new Set<string>();

/** A new empty directory under the OS temp dir, removed when the test file ends. */
export function tempDir(prefix = 'zz-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Directories made by tempDir() and not yet removed (for the cleanup test). */
export function liveTempDirs(): string[] {
  return [...made];
}

export function removeTempDirs(): void {
  for (const dir of made) {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
    made.delete(dir);
  }
}
