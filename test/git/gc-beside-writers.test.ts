import { execFileSync, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { ZzError } from '../../src/errors.js';
import { openRepository, type GitRepository } from '../../src/git/index.js';
import { RefCasError } from '../../src/git/ref-store.js';
import { GitStore } from '../../src/store/index.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { fsckProblems, makeRepo } from '../helpers/temp-repo.js';

// Git's own maintenance beside durable writers (issue: a Lane ref named a missing commit after
// an hour of load in a served repository). Several writers per ref race on compare-and-swap
// (so some writes fail and leave unreachable small packs), small packs are merged and deleted
// in the background, and meanwhile `git gc --auto` (with limits low enough that it repacks
// all the time), `git repack -a -d` (no -A: it drops what is unreachable when it reads the
// refs), the daemon's geometric roll-up (`git repack -d -l --geometric=2`) and `git pack-refs
// --all --prune` run in loops. Afterwards every commit that landed
// and every ref's whole history must be readable. Bounded by writes, not time.

const REFS = 4;
const WRITERS_PER_REF = 2;
// ZZ_GC_STRESS_WRITES: more writes per writer, for a longer run by hand.
const WRITES_PER_WRITER = Number(process.env.ZZ_GC_STRESS_WRITES ?? 60);

function run(cwd: string, args: string[]): Promise<number> {
  return new Promise((resolve) => {
    const p = spawn('git', args, { cwd, stdio: 'ignore' });
    p.on('close', (code) => resolve(code ?? -1));
  });
}

describe('git maintenance beside durable writers', () => {
  let repo: GitRepository | undefined;
  let cleanup = () => {};
  afterEach(async () => {
    repo?.close();
    await repo?.objects.close();
    repo = undefined;
    cleanup();
  });

  it('gc --auto, repack -a -d, a geometric roll-up and pack-refs in loops beside racing writers lose no commit that landed', async () => {
    const seed = testSeed('gc beside writers');
    const rnd = prng(seed);
    const made = makeRepo('zz-gc-beside-');
    cleanup = made.cleanup;
    const dir = made.dir;
    repo = await openRepository(dir);
    const store = new GitStore(repo);
    const landed: string[] = [];
    let casFailures = 0;
    const writer = async (ref: string, tag: string): Promise<void> => {
      for (let k = 0; k < WRITES_PER_WRITER; k++) {
        const parent = await store.head(ref);
        const id = `${tag}-${k}`;
        const changes = new Map([
          [
            `asks/${Math.floor(rnd() * 8)}/${id}.json`,
            JSON.stringify({ id, x: 'x'.repeat(Math.floor(rnd() * 300)) }),
          ],
        ]);
        try {
          landed.push(await store.commit(ref, { parent, changes, ops: [], summary: `op ${id}` }));
        } catch (e) {
          // Lost the race (CAS), or starved of the lock past its timeout by the other writer
          // and pack-refs (ref_locked): not landed, and its objects are unreachable.
          if (!(e instanceof RefCasError) && !(e instanceof ZzError && e.code === 'ref_locked'))
            throw e;
          casFailures++;
        }
      }
    };
    let writing = true;
    const runs = { gc: 0, repack: 0, geometric: 0, packRefs: 0 };
    // Spaced out (seeded pauses), so that merges also run and delete between git's runs.
    const loop = async (name: keyof typeof runs, args: string[], pauseMs: number) => {
      while (writing) {
        await run(dir, args); // a failure (a pack deleted under it, a lock held) is retried
        runs[name]++;
        await new Promise((r) => setTimeout(r, pauseMs * (0.5 + rnd())));
      }
    };
    const gc = ['-c', 'gc.autoPackLimit=4', '-c', 'gc.auto=20', '-c', 'gc.autoDetach=false'];
    const maintenance = [
      loop('gc', [...gc, 'gc', '--auto', '--quiet'], 200),
      loop('repack', ['repack', '-a', '-d', '-q'], 300),
      loop('geometric', ['repack', '-d', '-l', '-q', '--geometric=2'], 150),
      loop('packRefs', ['pack-refs', '--all', '--prune'], 20),
    ];
    const writers: Array<Promise<void>> = [];
    for (let r = 0; r < REFS; r++) {
      for (let w = 0; w < WRITERS_PER_REF; w++) {
        writers.push(writer(`refs/zz/lanes/load${r}`, `${r}.${w}`));
      }
    }
    try {
      await Promise.all(writers);
    } finally {
      writing = false;
      await Promise.all(maintenance);
    }
    await repo.objects.small.idle();
    const ctx = `seed ${seed}, ${landed.length} landed, ${casFailures} CAS failures, runs ${JSON.stringify(runs)}`;
    expect(landed.length, ctx).toBeGreaterThan(0);
    expect(runs.repack + runs.gc, ctx).toBeGreaterThan(0);
    expect(runs.geometric, ctx).toBeGreaterThan(0);
    const check = execFileSync('git', ['cat-file', '--batch-check'], {
      cwd: dir,
      input: landed.join('\n') + '\n',
      encoding: 'utf8',
    });
    expect(
      check.split('\n').filter((l) => l.endsWith(' missing')),
      ctx,
    ).toEqual([]);
    for (let r = 0; r < REFS; r++) {
      const oids = execFileSync('git', ['rev-list', '--objects', `refs/zz/lanes/load${r}`], {
        cwd: dir,
        encoding: 'utf8',
      })
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(0, 40));
      const out = execFileSync('git', ['cat-file', '--batch-check'], {
        cwd: dir,
        input: oids.join('\n') + '\n',
        encoding: 'utf8',
      });
      expect(
        out.split('\n').filter((l) => l.endsWith(' missing')),
        ctx,
      ).toEqual([]);
    }
    expect(fsckProblems(dir), ctx).toEqual([]);
  }, 300_000);
});
