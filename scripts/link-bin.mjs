// After `npm ci` builds dist/, link this checkout's own `zz` into node_modules/.bin so that
// `npx zz …` runs the zz of this checkout (npm links only dependencies' bins, not the root's).
import { chmodSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'dist', 'cli', 'main.js');
const link = join(root, 'node_modules', '.bin', 'zz');
chmodSync(target, 0o755);
mkdirSync(dirname(link), { recursive: true });
rmSync(link, { force: true });
symlinkSync(relative(dirname(link), target), link);
