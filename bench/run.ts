// `npm run bench`: every benchmark, one after another, each side by side with its baseline.
// Not part of the tests. Prints tables as it goes and a JSON summary at the end.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
const suites: Array<[string, string, string]> = [
  ['read-path', './read-path.ts', 'benchReadPath'],
  ['store', './store.ts', 'benchStore'],
  ['ref-reads', './ref-reads.ts', 'benchRefReads'],
  ['core', './core.ts', 'benchCore'],
  ['http', './http.ts', 'benchHttp'],
  ['claim', './claim.ts', 'benchClaim'],
  ['load', './load.ts', 'benchLoad'],
  ['spawn', './spawn.ts', 'benchSpawn'],
  ['git-read', './git-read.ts', 'benchGitRead'],
  ['extract', './extract.ts', 'benchExtract'],
  ['ladder-build', './ladder-build.ts', 'benchLadderBuild'],
  ['pack-threshold', './ladder-build.ts', 'benchPackThreshold'],
  ['search', './search.ts', 'benchSearch'],
  ['search-start', './search-start.ts', 'benchSearchStart'],
  ['quality', './quality.ts', 'benchQuality'],
  ['mcp', './mcp.ts', 'benchMcp'],
  ['cli-startup', './cli-startup.ts', 'benchCliStartup'],
  ['work', './work.ts', 'benchWork'],
  ['web', './web.ts', 'benchWeb'],
  ['rss', './rss.ts', 'benchRss'],
  ['sync', './sync.ts', 'benchSync'],
  ['fold-refusals', './fold-refusals.ts', 'benchFoldRefusals'],
];

const only = process.argv.slice(2);
const summary: Record<string, unknown> = {};
for (const [name, file, fn] of suites) {
  if (only.length && !only.includes(name)) continue;
  if (!existsSync(join(here, file))) continue;
  console.log(`\n# ${name}`);
  const mod = (await import(file)) as Record<string, () => Promise<unknown>>;
  const run = mod[fn];
  if (typeof run !== 'function') throw new Error(`${file} does not export ${fn}`);
  summary[name] = await run();
}
console.log('\n# summary (JSON)\n' + JSON.stringify(summary, null, 2));
