import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// A TypeScript helper that tests spawn as a child process (a writer to SIGKILL, say), bundled
// with what it imports from src/ into one ES module that plain node runs. Through tsx the same
// child costs ~0.5 s of CPU to start on Node 20, bundled ~0.15 s, and the crash tests start
// dozens. Behaviour is the same: node's modules stay imports (a child that patches `fs.fsync`
// patches what src/ calls), and so do packages, found in node_modules.

const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const BUNDLES = join(PROJECT, 'node_modules', '.cache', 'zz-test-bundles');
const BUILDER = join(PROJECT, 'test', 'helpers', 'bundle-script.mjs');

function* tsFiles(dir: string, deep: boolean): Generator<string> {
  const entries = readdirSync(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : 1));
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (deep) yield* tsFiles(p, deep);
    } else if (e.name.endsWith('.ts')) yield p;
  }
}

const built = new Map<string, string>();

/**
 * The path of `entry` bundled (test/helpers/bundle-script.mjs). Its name is a hash of every
 * .ts under src/ and test/helpers/ and beside `entry` (what a helper may import), so a changed
 * source is never run from an old bundle. Built once per source state (~0.5 s), in a child
 * process so that callers stay synchronous; bundles of other states go after an hour.
 */
export function bundled(entry: string): string {
  const known = built.get(entry);
  if (known) return known;
  const hash = createHash('sha256').update(`${entry}\0`);
  const inputs = new Set([
    ...tsFiles(join(PROJECT, 'src'), true),
    ...tsFiles(join(PROJECT, 'test', 'helpers'), true),
    ...tsFiles(dirname(entry), false),
    BUILDER,
  ]);
  for (const f of inputs) hash.update(`${f}\0`).update(readFileSync(f));
  const name = basename(entry).replace(/\.ts$/, '');
  const out = join(BUNDLES, `${name}-${hash.digest('hex').slice(0, 20)}.mjs`);
  if (!existsSync(out)) {
    mkdirSync(BUNDLES, { recursive: true });
    execFileSync(process.execPath, [BUILDER, entry, out], { cwd: PROJECT, stdio: 'pipe' });
    for (const old of readdirSync(BUNDLES)) {
      const p = join(BUNDLES, old);
      if (p !== out && Date.now() - statSync(p).mtimeMs > 3_600_000)
        rmSync(p, { recursive: true, force: true });
    }
  }
  built.set(entry, out);
  return out;
}
