// Builds one TypeScript entry (a test helper run as a child process; see bundled.ts) and what
// it imports from src/ into one ES module, so that a child starts under plain node, not tsx:
//
//   node test/helpers/bundle-script.mjs <entry.ts> <out.mjs>
//
// Packages stay imports (the bundle lives under node_modules/.cache, where node finds them),
// as do node's own modules: `fs.fsync` looked up on the fs module at call time is the same
// object a fault-injecting child patches. The output is written beside <out.mjs> and renamed
// over it, so that a reader never sees half a file.
import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { build } from 'vite';

const [entry, out] = process.argv.slice(2);
if (!entry || !out) throw new Error('usage: bundle-script.mjs <entry.ts> <out.mjs>');
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tmp = mkdtempSync(join(dirname(out), `.${basename(out)}-`));
try {
  await build({
    configFile: false,
    logLevel: 'silent',
    root,
    build: {
      ssr: entry,
      outDir: tmp,
      emptyOutDir: false,
      minify: false,
      target: 'node20',
      rollupOptions: { output: { format: 'es', entryFileNames: 'out.mjs' } },
    },
  });
  renameSync(join(tmp, 'out.mjs'), out);
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
