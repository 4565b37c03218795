import { afterAll } from 'vitest';
import { removeTempDirs } from '../helpers/temp-dirs.js';

// Runs in every test file (vitest setupFiles): whatever tempDir() made is removed at the end.
afterAll(removeTempDirs);
