import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  initRepo,
  ladderBuild,
  LADDER_REF,
  readLadder,
  ZzRepo,
  type LadderBuildResult,
} from '../src/core/index.js';
import { median, printTable } from './util.js';

// `zz ladder build` on real third-party code: 2,000 files (TypeScript, JavaScript, Markdown,
// JSON) copied from node_modules packages into a fresh repository. Measures the extractive full
// build (goal ≥ 1,000 files/s), an incremental build after a one-file commit (goal < 0.5 s) and
// a no-op rebuild, then prints sample rungs so a human can judge whether they read as useful.
// Run alone: `npx tsx bench/ladder-build.ts` (or `npm run bench -- ladder-build`).

const FILES = 2000;
const RUNS = 3;
const TEXT = /\.(?:ts|mts|cts|js|mjs|cjs|md|json)$/;
// Whole packages with real sources and docs first (zod ships its TypeScript sources).
const PREFERRED = [
  'zod',
  'eslint',
  'dependency-cruiser',
  '@typescript-eslint/typescript-estree',
  'vitest',
  'yargs',
  'minisearch',
  'chokidar',
];

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 }).trim();
}

function walk(root: string, out: string[], max: number): void {
  let entries: string[];
  try {
    entries = readdirSync(root).sort();
  } catch {
    return;
  }
  for (const e of entries) {
    if (out.length >= max) return;
    if (e === 'node_modules' || e.startsWith('.')) continue;
    const p = join(root, e);
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) continue;
    if (st.isDirectory()) walk(p, out, max);
    else if (st.isFile() && TEXT.test(e)) out.push(p);
  }
}

/** A fresh repository holding ~FILES files of third-party source under packages/<name>/. */
export function thirdPartyRepo(files = FILES): {
  dir: string;
  packages: string[];
  cleanup: () => void;
} {
  const nm = join(process.cwd(), 'node_modules');
  const dir = mkdtempSync(join(tmpdir(), 'zz-ladder-bench-'));
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'bench@example.com');
  git(dir, 'config', 'user.name', 'Bench');
  git(dir, 'config', 'commit.gpgsign', 'false');
  const others = readdirSync(nm)
    .filter((p) => !p.startsWith('.'))
    .flatMap((p) => (p.startsWith('@') ? readdirSync(join(nm, p)).map((q) => `${p}/${q}`) : [p]))
    .filter((p) => !PREFERRED.includes(p));
  const packages: string[] = [];
  let copied = 0;
  for (const pkg of [...PREFERRED, ...others]) {
    if (copied >= files) break;
    const list: string[] = [];
    walk(join(nm, pkg), list, files - copied);
    if (list.length === 0) continue;
    packages.push(pkg);
    for (const src of list) {
      const dest = join(dir, 'packages', pkg, relative(join(nm, pkg), src));
      mkdirSync(dirname(dest), { recursive: true });
      copyFileSync(src, dest);
    }
    copied += list.length;
  }
  writeFileSync(
    join(dir, 'README.md'),
    '# vendored\n\nThird-party JavaScript and TypeScript packages vendored for offline builds: schema validation (zod), linting (eslint), dependency rules and test runners.\n',
  );
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'vendor: import third-party packages');
  // Clones and long-lived checkouts hold their objects in packs; a fresh `git add` leaves them
  // loose (one file each), which would make every read of a blob slower than it usually is.
  git(dir, 'repack', '-adq');
  return { dir, packages, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

async function fresh(dir: string): Promise<ZzRepo> {
  const repo = await ZzRepo.open(dir, { key: 'bench/vendored' });
  await initRepo(repo, { owner: 'bench@example.com', default_branch: 'main' });
  return repo;
}

export async function benchLadderBuild(): Promise<Record<string, unknown>> {
  const { dir, packages, cleanup } = thirdPartyRepo();
  try {
    const files = Number(git(dir, 'ls-files').split('\n').length);
    const mb = Number(git(dir, 'count-objects', '-v').match(/size-pack: (\d+)/)?.[1] ?? 0) / 1024;
    console.log(
      `repository: ${files} files from ${packages.length} packages (${packages.slice(0, 8).join(', ')}…), ${mb.toFixed(1)} MB packed; load average ${loadavg()[0]!.toFixed(1)}`,
    );

    // Full builds from an empty Ladder, each in a fresh process-like state (new ZzRepo).
    const full: LadderBuildResult[] = [];
    const commitMs: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      try {
        git(dir, 'update-ref', '-d', LADDER_REF);
      } catch {
        /* first run */
      }
      const repo = await fresh(dir);
      const t0 = performance.now();
      let commitAt = 0;
      const r = await ladderBuild(repo, {
        actor: 'bench@example.com',
        onProgress: (p) => {
          if (p.phase === 'commit' && p.done === 0) commitAt = performance.now() - t0;
        },
      });
      full.push(r);
      commitMs.push(r.ms - commitAt);
      repo.close();
    }
    const fullMs = median(full.map((r) => r.ms));
    const storeMs = median(commitMs);
    const last = full[full.length - 1]!;
    const opBytes = git(dir, 'cat-file', '-p', LADDER_REF).length;

    // Incremental: one commit changing one file's doc comment, then a build.
    const repo = await fresh(dir);
    const targets = git(dir, 'ls-files', 'packages/zod/src')
      .split('\n')
      .filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))
      .slice(0, RUNS);
    const incr: LadderBuildResult[] = [];
    for (const [i, path] of targets.entries()) {
      const abs = join(dir, path);
      writeFileSync(
        abs,
        `/** Benchmark edit ${i}: a changed file comment. */\n` + readFileSync(abs, 'utf8'),
      );
      git(dir, 'commit', '-q', '-am', `bench: edit ${path}`);
      incr.push(await ladderBuild(repo, { actor: 'bench@example.com' }));
    }
    // No-op: nothing changed since the last build.
    const noop: LadderBuildResult[] = [];
    for (let i = 0; i < 5; i++) noop.push(await ladderBuild(repo, { actor: 'bench@example.com' }));
    repo.close();
    // A cold no-op (a new process: the Ladder's op log is read and folded first).
    const cold = await fresh(dir);
    const coldNoop = await ladderBuild(cold, { actor: 'bench@example.com' });

    const rows = [
      {
        build: 'full (empty Ladder)',
        median_ms: fullMs,
        files_per_s: Math.round(files / (fullMs / 1000)),
        written: last.written,
        summarized: last.summarized,
        goal: '≥ 1000 files/s',
      },
      {
        build: 'incremental (1 file)',
        median_ms: median(incr.map((r) => r.ms)),
        files_per_s: '',
        written: median(incr.map((r) => r.written)),
        summarized: median(incr.map((r) => r.summarized)),
        goal: '< 500 ms',
      },
      {
        build: 'no-op (warm)',
        median_ms: median(noop.map((r) => r.ms)),
        files_per_s: '',
        written: 0,
        summarized: 0,
        goal: 'no commit',
      },
      {
        build: 'no-op (cold process)',
        median_ms: coldNoop.ms,
        files_per_s: '',
        written: coldNoop.written,
        summarized: 0,
        goal: 'no commit',
      },
    ];
    printTable('ladder build', rows as Array<Record<string, string | number>>);
    console.log(
      `full build: ${last.rungs} rungs; reading, summarising and planning ${Math.round(fullMs - storeMs)} ms ` +
        `(${Math.round(files / ((fullMs - storeMs) / 1000))} files/s), the one ladder commit ${Math.round(storeMs)} ms ` +
        `(${last.written} rung blobs + trees written as loose objects); commit message ${(opBytes / 1024).toFixed(0)} KiB`,
    );
    console.log(`any no-op committed: ${noop.some((r) => r.committed) || coldNoop.committed}`);
    console.log(
      `incremental writes: ${incr.map((r) => `${r.written} (${r.reanchored} re-anchored)`).join(', ')}`,
    );

    // Sample rungs for a human to judge.
    const snap = await readLadder(cold);
    const pick = (pred: (p: string) => boolean) =>
      [...snap.state.values()].find((r) => pred(r.path));
    const samples = [
      snap.state.get('_repo'),
      snap.state.get('packages/zod'),
      pick((p) => /^packages\/zod\/src\/v4\/core$/.test(p)) ??
        pick((p) => p.startsWith('packages/zod/src/') && !p.includes('.')),
      pick((p) => /^packages\/eslint\/lib\/rules$/.test(p)),
      pick((p) => /^packages\/zod\/src\/v4\/core\/(?:errors|schemas|parse)\.ts$/.test(p)),
      pick((p) => /^packages\/eslint\/lib\/rules\/no-unused-vars\.js$/.test(p)) ??
        pick((p) => p.startsWith('packages/eslint/lib/rules/')),
      pick((p) => /^packages\/[^/]+\/README\.md$/i.test(p) && !p.includes('zod')),
      pick((p) => /^packages\/dependency-cruiser\/src\/.+\.(?:mjs|js)$/.test(p)),
    ].filter((r): r is NonNullable<typeof r> => r !== undefined);
    console.log('\n## sample rungs');
    for (const r of samples) {
      console.log(`\n[${r.kind}] ${r.path} — ${r.title}\n  ${r.summary.replace(/\n/g, '\n  ')}`);
    }
    cold.close();
    return {
      files,
      full_build_ms: fullMs,
      full_build_commit_ms: Math.round(storeMs),
      files_per_s: Math.round(files / (fullMs / 1000)),
      incremental_ms: median(incr.map((r) => r.ms)),
      noop_ms: median(noop.map((r) => r.ms)),
      noop_cold_ms: coldNoop.ms,
      rungs: last.rungs,
      commit_message_kib: Math.round(opBytes / 1024),
    };
  } finally {
    cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(await benchLadderBuild(), null, 2));
}
