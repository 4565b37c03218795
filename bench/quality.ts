import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { initRepo, ladderBuild, readLadder, ZzRepo } from '../src/core/index.js';
import { toIndexRung } from '../src/core/ladder/search-sync.js';
import { LadderSearch } from '../src/search/index.js';
import { BLIND, HELD_OUT, JUDGED, type JudgedPackage } from './quality-queries.js';
import { printTable } from './util.js';

// Search quality on real code nobody here wrote: each judged package (bench/quality-queries.ts)
// is copied from node_modules into its own git repository, given an extractive Ladder
// (`zz ladder build`, no model) and searched for file rungs. The baseline is plain term
// frequency as `git grep` gives it: for each query word, `git grep -c -i -F` counts the lines of
// each file holding it, and files rank by the sum. Both rank the same files; recall@5 (share of
// the wanted files in the top 5) and MRR (1 / rank of the first wanted file, 0 past 10) are
// printed side by side, for the set the extraction was tuned on and for a held-out set written
// before tuning (bench/quality-queries.ts). Run alone: `npm run bench -- quality`;
// QUALITY_DEBUG=1 prints each query zz does not fully answer, with the wanted files' rungs.

const TOP = 5;
const MRR_DEPTH = 10;
const SKIP = /\.(?:map|png|jpe?g|gif|wasm|node)$|(?:^|\/)(?:node_modules|locales)(?:\/|$)/;
// Words `git grep` would match everywhere and no reader means as a term.
const STOP = new Set(['a', 'an', 'and', 'the', 'of', 'in', 'to', 'for', 'on', 'with', 'between']);

function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

function copyTree(src: string, dest: string, root: string): void {
  const st = statSync(src, { throwIfNoEntry: false });
  if (!st || SKIP.test(relative(root, src))) return;
  if (st.isDirectory()) {
    for (const e of readdirSync(src).sort()) copyTree(join(src, e), join(dest, e), root);
  } else if (st.isFile()) {
    mkdirSync(dirname(dest), { recursive: true });
    copyFileSync(src, dest);
  }
}

function packageRepo(pkg: JudgedPackage): string {
  const from = join(process.cwd(), 'node_modules', pkg.name);
  const dir = mkdtempSync(join(tmpdir(), 'zz-quality-'));
  git(dir, 'init', '-q', '-b', 'main');
  git(dir, 'config', 'user.email', 'bench@example.com');
  git(dir, 'config', 'user.name', 'Bench');
  git(dir, 'config', 'commit.gpgsign', 'false');
  for (const e of pkg.include ?? readdirSync(from)) copyTree(join(from, e), join(dir, e), from);
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', `import ${pkg.name}`);
  return dir;
}

/** `git grep` term frequency: Σ over query words of the lines of a file holding the word. */
function grepRank(dir: string, query: string): string[] {
  const words = query
    .toLowerCase()
    .split(/[^a-z0-9_$-]+/)
    .filter((w) => w.length > 0 && !STOP.has(w));
  const score = new Map<string, number>();
  for (const w of words) {
    let out: string;
    try {
      out = git(dir, 'grep', '-c', '-i', '-F', '-e', w, 'HEAD', '--');
    } catch {
      continue; // exit 1: no match
    }
    for (const line of out.split('\n')) {
      const m = /^HEAD:(.*):(\d+)$/.exec(line);
      if (m) score.set(m[1]!, (score.get(m[1]!) ?? 0) + Number(m[2]));
    }
  }
  return [...score]
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([p]) => p)
    .slice(0, MRR_DEPTH);
}

function judge(ranked: readonly string[], relevant: readonly string[]) {
  const top = new Set(ranked.slice(0, TOP));
  const recall = relevant.filter((r) => top.has(r)).length / relevant.length;
  const first = ranked.slice(0, MRR_DEPTH).findIndex((p) => relevant.includes(p));
  return { recall, rr: first < 0 ? 0 : 1 / (first + 1) };
}

interface Totals {
  n: number;
  zzRecall: number;
  zzRr: number;
  grepRecall: number;
  grepRr: number;
}

const zero = (): Totals => ({ n: 0, zzRecall: 0, zzRr: 0, grepRecall: 0, grepRr: 0 });

const row = (name: string, t: Totals) => ({
  package: name,
  queries: t.n,
  'zz recall@5': t.zzRecall / t.n,
  'zz MRR': t.zzRr / t.n,
  'grep recall@5': t.grepRecall / t.n,
  'grep MRR': t.grepRr / t.n,
});

async function runSet(
  title: string,
  set: readonly JudgedPackage[],
  search: LadderSearch,
  dirs: string[],
): Promise<Record<string, number>> {
  const rows: Array<Record<string, string | number>> = [];
  const misses: string[] = [];
  const totals = zero();
  for (const pkg of set) {
    const dir = packageRepo(pkg);
    dirs.push(dir);
    const key = `npm/${pkg.name.replace(/^@/, '').replace('/', '-')}`;
    const repo = await ZzRepo.open(dir, { key });
    await initRepo(repo, { owner: 'bench@example.com', default_branch: 'main' });
    await ladderBuild(repo, { actor: 'bench@example.com', changesetsLimit: 0 });
    const snap = await readLadder(repo);
    repo.close();
    await search.setRepo(key, snap.revision!, [...snap.state.values()].map(toIndexRung));
    const acc = zero();
    for (const q of pkg.queries) {
      const page = search.search({ query: q.query, repo: key, kind: 'file', limit: MRR_DEPTH });
      const zz = judge(
        page.hits.map((h) => h.path),
        q.relevant,
      );
      const grep = judge(grepRank(dir, q.query), q.relevant);
      acc.n++;
      acc.zzRecall += zz.recall;
      acc.zzRr += zz.rr;
      acc.grepRecall += grep.recall;
      acc.grepRr += grep.rr;
      if (zz.rr === 0) misses.push(`${pkg.name}: "${q.query}"`);
      if (process.env.QUALITY_EACH)
        console.log(
          `= ${pkg.name}: "${q.query}" recall ${zz.recall.toFixed(2)} rr ${zz.rr.toFixed(2)}`,
        );
      if (process.env.QUALITY_DEBUG && zz.recall < 1) {
        console.log(
          `\n? ${pkg.name}: "${q.query}" → ${page.hits
            .slice(0, TOP)
            .map((h) => h.path)
            .join(', ')}`,
        );
        for (const p of q.relevant) {
          const r = snap.state.get(p);
          console.log(
            `  want ${p}: ${r?.summary ?? '(no rung)'} [${(r?.symbols ?? []).slice(0, 12).join(' ')}]`,
          );
        }
      }
    }
    rows.push(row(pkg.name, acc));
    for (const k of Object.keys(totals) as Array<keyof Totals>) totals[k] += acc[k];
  }
  rows.push(row('all', totals));
  printTable(`${title}: zz ladder search (file rungs) vs git grep term frequency`, rows);
  if (misses.length > 0)
    console.log(`zz found nothing wanted in the top 10 for: ${misses.join('; ')}`);
  return {
    queries: totals.n,
    zz_recall5: totals.zzRecall / totals.n,
    zz_mrr: totals.zzRr / totals.n,
    grep_recall5: totals.grepRecall / totals.n,
    grep_mrr: totals.grepRr / totals.n,
  };
}

export async function benchQuality(): Promise<Record<string, unknown>> {
  const cache = mkdtempSync(join(tmpdir(), 'zz-quality-cache-'));
  const search = new LadderSearch({ cacheDir: cache, persistDelayMs: 60_000 });
  const dirs: string[] = [];
  try {
    const judged = await runSet('judged queries (tuned on)', JUDGED, search, dirs);
    const heldOut = await runSet(
      'held-out queries (written before tuning)',
      HELD_OUT,
      search,
      dirs,
    );
    const blind = await runSet(
      'blind queries (written before the last tuning)',
      BLIND,
      search,
      dirs,
    );
    return { judged, held_out: heldOut, blind };
  } finally {
    await search.close().catch(() => {});
    for (const d of [...dirs, cache]) rmSync(d, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchQuality();
}
