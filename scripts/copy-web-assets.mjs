// The dashboard's own files (plain ES modules and CSS, no build step) are not TypeScript, so
// tsc does not copy them: put them next to the compiled src/web/ so the package ships them.
// preact and htm are served from node_modules at run time (they are runtime dependencies).
import { cpSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const to = join(root, 'dist', 'web', 'assets');
rmSync(to, { recursive: true, force: true });
cpSync(join(root, 'src', 'web', 'assets'), to, { recursive: true });
