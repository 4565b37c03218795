// `npm ci`, `npm link`, `npm i -g <checkout>` and npx run `prepare`. Build only when dist/ is
// stale: every src/**/*.ts has a dist/**/*.js at least as new, and the tool manifest is newer
// than all of them. A fresh checkout builds once (~20 s); after that `prepare` takes well under
// a second, so installing or linking a built checkout does not rebuild it.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

function* walk(dir) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) yield* walk(p);
    else yield p;
  }
}

function stale() {
  if (!existsSync(src)) return false; // an installed package ships dist/ only
  const manifest = join(dist, 'cli', 'tool-manifest.json');
  if (!existsSync(manifest)) return 'no build yet';
  const built = statSync(manifest).mtimeMs;
  const configs = ['package.json', 'tsconfig.json', 'tsconfig.build.json'].map((f) =>
    join(root, f),
  );
  for (const f of configs)
    if (existsSync(f) && statSync(f).mtimeMs > built) return relative(root, f);
  for (const f of walk(src)) {
    // The dashboard's assets are copied, not compiled: stale when newer than the build.
    if (f.includes(`${join('web', 'assets')}`) && statSync(f).mtimeMs > built)
      return relative(root, f);
    if (!f.endsWith('.ts') || f.endsWith('.d.ts')) continue;
    const out = join(dist, relative(src, f)).replace(/\.ts$/, '.js');
    if (!existsSync(out)) return relative(root, f);
    const t = statSync(f).mtimeMs;
    if (t > statSync(out).mtimeMs || t > built) return relative(root, f);
  }
  return false;
}

const why = stale();
if (why) {
  const reason = why === 'no build yet' ? why : `${why} is newer than the build`;
  process.stderr.write(`zz: building dist/ (${reason})\n`);
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
} else if (existsSync(src)) {
  // Fresh: only (re)link this checkout's own bin, as the build would.
  execFileSync(process.execPath, [join(root, 'scripts', 'link-bin.mjs')], { stdio: 'inherit' });
}
