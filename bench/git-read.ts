import { pathToFileURL } from 'node:url';
import { CatFile } from '../src/git/cat-file.js';
import { clearHistoryCache, gitDiff, gitLog, gitShowFile } from '../src/git/history.js';
import { runGit } from '../src/git/native-git.js';
import { genRepo } from '../test/helpers/gen-repo.js';

// Reads of the user's history next to the native git command a client would otherwise spawn,
// on a generated 4,000-commit repo. Goals (DESIGN §2, rule 4): paging the whole log ≤ 1.5x one
// native `git log`; one file read ≤ 0.5x one `git show`. Runs alternate between the two sides
// so that machine noise hits both alike; figures are medians.

const COMMITS = 4000;
const RUNS = 15;

async function median(f: () => Promise<unknown>): Promise<number> {
  const ts: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await f();
    ts.push(performance.now() - t);
  }
  ts.sort((a, b) => a - b);
  return ts[Math.floor(ts.length / 2)]!;
}

/** Medians of a and b, measured in alternation. */
async function sideBySide(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
): Promise<{ ours_ms: number; native_ms: number; ratio: number }> {
  // Warm both (JIT, page cache, the cat-file process).
  await a();
  await b();
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    ta.push(await median1(a));
    tb.push(await median1(b));
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const ours = med(ta);
  const native = med(tb);
  return { ours_ms: round(ours), native_ms: round(native), ratio: round(ours / native) };
}

async function median1(f: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await f();
  return performance.now() - t;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

export async function benchGitRead(): Promise<Record<string, unknown>> {
  const repo = genRepo({ commits: COMMITS });
  const catFile = new CatFile(repo.gitdir);
  const r = { gitdir: repo.gitdir, workTree: repo.dir, catFile };
  const native = (args: string[]) => runGit(args, { cwd: repo.dir });
  try {
    const pageAll = async () => {
      let cursor: string | undefined;
      let n = 0;
      do {
        const page = await gitLog(r, { ref: 'main', limit: 500, cursor });
        n += page.commits.length;
        cursor = page.next_cursor ?? undefined;
      } while (cursor);
      if (n !== COMMITS) throw new Error(`paged ${n} commits, expected ${COMMITS}`);
    };
    const logFormat = '--format=%H%x00%P%x00%an%x00%ae%x00%at%x00%cn%x00%ce%x00%ct%x00%B%x00';

    const logCold = await sideBySide(
      async () => {
        clearHistoryCache();
        await pageAll();
      },
      () => native(['log', logFormat, 'main']),
    );
    const logWarm = await sideBySide(pageAll, () => native(['log', logFormat, 'main']));
    const logFirstPage = await sideBySide(
      async () => {
        clearHistoryCache();
        await gitLog(r, { ref: 'main', limit: 100 });
      },
      // Oldest first needs the whole walk natively too: `git log --reverse` is the equivalent.
      () => native(['log', '--reverse', logFormat, 'main']),
    );

    const path = repo.tipPaths.find((p) => p.startsWith('d03/')) ?? repo.tipPaths[0]!;
    const show = await sideBySide(
      () => gitShowFile(r, { commit: 'main', path }),
      () => native(['show', `main:${path}`]),
    );
    const diff = await sideBySide(
      () => gitDiff(r, { commit: 'main' }),
      () => native(['diff-tree', '-p', '-M', 'main']),
    );
    const medianSpawn = await median(() => native(['--version']));

    const rows: Array<[string, { ours_ms: number; native_ms: number; ratio: number }, string]> = [
      ['git_log: page all (500/page), cold cache', logCold, '≤ 1.5'],
      ['git_log: page all, warm cache', logWarm, '-'],
      ['git_log: first page of 100, cold (vs --reverse)', logFirstPage, '-'],
      ['git_show_file (warm cat-file)', show, '≤ 0.5'],
      ['git_diff (HEAD vs parent)', diff, '-'],
    ];
    console.log(`\ngit reads on a ${COMMITS}-commit repo, medians of ${RUNS} (ms)`);
    console.log(
      `${'case'.padEnd(44)}${'ours'.padStart(9)}${'native'.padStart(9)}${'ratio'.padStart(8)}  goal`,
    );
    for (const [name, m, goal] of rows) {
      console.log(
        `${name.padEnd(44)}${m.ours_ms.toFixed(2).padStart(9)}${m.native_ms.toFixed(2).padStart(9)}${m.ratio.toFixed(2).padStart(8)}  ${goal}`,
      );
    }
    console.log(`(one bare \`git --version\` spawn: ${medianSpawn.toFixed(2)} ms)`);
    return {
      commits: COMMITS,
      runs: RUNS,
      log_page_all_cold: logCold,
      log_page_all_warm: logWarm,
      log_first_page_cold: logFirstPage,
      show_file: show,
      diff,
      git_spawn_ms: round(medianSpawn),
    };
  } finally {
    catFile.close();
    repo.cleanup();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchGitRead();
}
