import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { RefStore } from '../src/git/index.js';
import { makeRepo, sh } from '../test/helpers/temp-repo.js';
import { importFromCheckout } from './checkout.js';
import { median } from './util.js';

// The ref reads a `lane_list` makes outside the lock, in-process over a real repository: two
// reads of a ref (refs/zz/config and the Lane's, as LaneEntity.read makes them) and a listing
// of the Lanes' names (ZzRepo.laneIds), first with loose refs and no packed-refs (a fresh
// repository), then with every ref packed (after `git gc`). Each system call costs ~5-10 µs on
// the 2-vCPU VMs, so these reads are a measurable part of a ~650 µs request.
// With ZZ_BENCH_BASELINE=<another checkout of zz>, that checkout's RefStore runs beside this
// one's, round by round in this process (a busy machine's load weighs on both alike).
// Run: npx tsx bench/ref-reads.ts (or npm run bench -- ref-reads)

const ROUNDS = 7;
const READS = 20_000;

type Refs = Pick<RefStore, 'read' | 'refNames'>;

export async function benchRefReads(): Promise<Record<string, unknown>> {
  const baseline = process.env.ZZ_BENCH_BASELINE;
  const Base = baseline
    ? (await importFromCheckout<{ RefStore: typeof RefStore }>(baseline, 'src/git/ref-store.ts'))
        .RefStore
    : null;
  const { dir, cleanup } = makeRepo('zz-bench-refs-');
  const out: Record<string, unknown> = {};
  try {
    sh(dir, 'commit', '-q', '--allow-empty', '-m', 'x');
    sh(dir, 'update-ref', 'refs/zz/config', 'HEAD');
    sh(dir, 'update-ref', 'refs/zz/lanes/load', 'HEAD');
    const gitdir = join(dir, '.git');
    for (const layout of ['loose', 'packed'] as const) {
      if (layout === 'packed') sh(dir, 'pack-refs', '--all', '--prune');
      const sides: Array<{ name: string; refs: Refs }> = [
        { name: 'this checkout', refs: new RefStore(gitdir, { fsync: false }) },
      ];
      if (Base)
        sides.push({ name: `baseline ${baseline}`, refs: new Base(gitdir, { fsync: false }) });
      const us = sides.map(() => [] as number[]);
      for (let r = 0; r < ROUNDS; r++) {
        for (const [i, s] of sides.entries()) {
          const t = performance.now();
          for (let n = 0; n < READS; n++) {
            await s.refs.read('refs/zz/config');
            await s.refs.read('refs/zz/lanes/load');
            await s.refs.refNames('refs/zz/lanes/');
          }
          us[i]!.push(((performance.now() - t) * 1000) / READS);
        }
      }
      console.log(`\nTwo ref reads and a listing of the Lanes, ${layout} refs: µs each time`);
      for (const [i, s] of sides.entries()) {
        const m = median(us[i]!);
        console.log(
          `  ${s.name}: median ${m.toFixed(1)} (rounds in order ${us[i]!.map((x) => x.toFixed(1)).join(' · ')})`,
        );
        out[`${layout}_${i === 0 ? 'us' : 'baseline_us'}`] = Math.round(m * 10) / 10;
      }
      if (sides.length > 1) {
        out[`${layout}_ratio_vs_baseline`] =
          Math.round((median(us[0]!) / median(us[1]!)) * 1000) / 1000;
      }
    }
    return out;
  } finally {
    cleanup();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await benchRefReads();
