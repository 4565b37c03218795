import { readdirSync, readFileSync, statSync } from 'node:fs';
import { loadavg } from 'node:os';
import { extname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { summarizeFile } from '../src/core/ladder/extract.js';
import { median, percentile, printTable } from './util.js';

// The offline summariser's throughput: 2,000 real files from node_modules (code, Markdown,
// JSON, licences, maps, minified bundles: whatever a walk meets first), read into memory
// first so only summarizeFile is timed. Goal: fast enough that `zz ladder build` on a 10k-file
// repo spends its time in git, not here (research: ~1 ms per file for regex extraction).

const FILES = 2000;
const RUNS = 5;

export function collect(root: string, max: number): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: string[];
    try {
      entries = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const e of entries) {
      if (out.length >= max) return;
      const p = join(dir, e);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out.push(p);
    }
  };
  // Spread the sample over many packages rather than the first few alphabetically.
  const packages = readdirSync(root)
    .filter((p) => !p.startsWith('.'))
    .flatMap((p) => (p.startsWith('@') ? readdirSync(join(root, p)).map((q) => join(p, q)) : [p]));
  const per = Math.max(10, Math.ceil(max / packages.length));
  for (const p of packages) {
    if (out.length >= max) break;
    const before = out.length;
    walk(join(root, p));
    out.length = Math.min(out.length, before + per, max);
  }
  return out;
}

export async function benchExtract(): Promise<Record<string, unknown>> {
  const root = join(process.cwd(), 'node_modules');
  const paths = collect(root, FILES);
  const files = paths.map((p) => ({ path: relative(root, p), content: readFileSync(p) }));
  const bytes = files.reduce((n, f) => n + f.content.length, 0);
  const byExt = new Map<string, number>();
  for (const f of files)
    byExt.set(extname(f.path) || '(none)', (byExt.get(extname(f.path) || '(none)') ?? 0) + 1);

  const runs: number[] = [];
  const perFile: number[] = [];
  let skipped = 0;
  let slowest = { path: '', ms: 0 };
  for (let r = 0; r < RUNS; r++) {
    const t = performance.now();
    for (const f of files) {
      const t1 = r === RUNS - 1 ? performance.now() : 0;
      const out = summarizeFile(f.path, f.content);
      if (r === RUNS - 1) {
        const ms = performance.now() - t1;
        perFile.push(ms);
        if (ms > slowest.ms) slowest = { path: f.path, ms };
        if (out === null) skipped++;
      }
    }
    runs.push(performance.now() - t);
  }
  const ms = median(runs);
  const result = {
    files: files.length,
    mb: Math.round(bytes / 1e5) / 10,
    skipped_binary_or_huge: skipped,
    median_run_ms: Math.round(ms),
    files_per_s: Math.round(files.length / (ms / 1000)),
    mb_per_s: Math.round((bytes / 1e6 / (ms / 1000)) * 10) / 10,
    per_file_p50_ms: Math.round(median(perFile) * 1000) / 1000,
    per_file_p99_ms: Math.round(percentile(perFile, 99) * 100) / 100,
    slowest: { path: slowest.path, ms: Math.round(slowest.ms * 10) / 10 },
    top_extensions: Object.fromEntries([...byExt].sort((a, b) => b[1] - a[1]).slice(0, 8)),
    load_average: Math.round(loadavg()[0]! * 10) / 10,
  };
  printTable(`summarizeFile over ${files.length} node_modules files (${result.mb} MB)`, [
    { measure: 'median run', value: `${result.median_run_ms} ms` },
    { measure: 'throughput', value: `${result.files_per_s} files/s, ${result.mb_per_s} MB/s` },
    {
      measure: 'per file p50 / p99',
      value: `${result.per_file_p50_ms} / ${result.per_file_p99_ms} ms`,
    },
    { measure: 'slowest', value: `${result.slowest.path} (${result.slowest.ms} ms)` },
    { measure: 'skipped (binary / > 512 KiB)', value: String(skipped) },
  ]);
  return result;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  console.log(JSON.stringify(await benchExtract(), null, 2));
}
