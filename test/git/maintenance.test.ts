import { execFileSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { fullGcDue, gcFull, repackGeometric, runGit } from '../../src/git/index.js';
import { gitChildren } from '../helpers/child-handles.js';
import { fsckProblems, makeRepo } from '../helpers/temp-repo.js';

// The daemon's roll-up of the packs zz's writes leave (git/maintenance.ts repackGeometric),
// against real git: the small packs become one, the repository's own large pack is not
// written again (gc --auto past 50 packs rewrites every object: `repack -A -d`), packs with a
// .keep (zz's in-flight packs) stay as they are, and no object is lost.

function git(dir: string, args: string[], input?: string): string {
  return execFileSync('git', args, { cwd: dir, input, encoding: 'utf8' }).trim();
}

const packDir = (dir: string) => join(dir, '.git', 'objects', 'pack');
const packs = (dir: string) =>
  readdirSync(packDir(dir))
    .filter((f) => f.endsWith('.pack'))
    .sort();

/**
 * A repository with a history of 300 files in one large pack, then `small` packs of two new
 * blobs each (as zz's group commits leave them), one of them kept, and one loose blob. Answers
 * every object written after the history, the large pack's name and the kept pack's.
 */
function setUp(dir: string, small: number) {
  for (let i = 0; i < 300; i++) writeFileSync(join(dir, `f${i}.txt`), `file ${i}\n`.repeat(20));
  git(dir, ['add', '.']);
  git(dir, ['commit', '-q', '-m', 'history']);
  git(dir, ['repack', '-a', '-d', '-q']);
  const [large] = packs(dir);
  const blobs: string[] = [];
  let kept = '';
  for (let i = 0; i < small; i++) {
    const pair = [`a ${i}\n`, `b ${i}\n`].map((text) =>
      git(dir, ['hash-object', '-w', '--stdin'], text),
    );
    blobs.push(...pair);
    const name = git(dir, ['pack-objects', '-q', join(packDir(dir), 'pack')], pair.join('\n'));
    if (i === 3) {
      kept = `pack-${name}.pack`;
      writeFileSync(join(packDir(dir), `pack-${name}.keep`), 'in flight\n');
    }
  }
  git(dir, ['prune-packed']);
  blobs.push(git(dir, ['hash-object', '-w', '--stdin'], 'loose\n'));
  return { blobs, large: large!, kept };
}

describe('geometric roll-up of small packs', () => {
  let cleanup = () => {};
  afterEach(() => cleanup());

  it('merges the small packs into one, leaves the large pack and a kept pack alone, loses nothing', async () => {
    const made = makeRepo('zz-geometric-');
    cleanup = made.cleanup;
    const dir = made.dir;
    const { blobs, large, kept } = setUp(dir, 52);
    const largeIno = statSync(join(packDir(dir), large)).ino;
    expect(packs(dir)).toHaveLength(1 + 52);

    expect(await repackGeometric(join(dir, '.git'))).toBe('done');

    const after = packs(dir);
    // The large pack is the same file (not written again); the kept one is untouched; the
    // other 51 and the loose blob are one new pack.
    expect(after).toContain(large);
    expect(statSync(join(packDir(dir), large)).ino).toBe(largeIno);
    expect(after).toContain(kept);
    expect(after).toHaveLength(3);
    const check = git(dir, ['cat-file', '--batch-check'], blobs.join('\n') + '\n');
    expect(check.split('\n').filter((l) => l.endsWith(' missing'))).toEqual([]);
    expect(git(dir, ['count-objects', '-v'])).toMatch(/^count: 0$/m);
    expect(fsckProblems(dir)).toEqual([]);
  });

  it("starts none of its git runs from the caller's event loop (the daemon's): config reads and the roll-up", async () => {
    const made = makeRepo('zz-geometric-offloop-');
    cleanup = made.cleanup;
    const dir = made.dir;
    setUp(dir, 4);
    // A spawn on this thread holds it until the child execs (git/spawn-thread.ts); started
    // from the worker thread, no child process handle is ever on this loop. The first roll-up
    // in a repository reads its config afresh (rev-parse and git config), the second from the
    // cache; both are watched.
    const children = () => gitChildren().length;
    const before = children();
    for (let round = 0; round < 2; round++) {
      let running = true;
      const rolled = repackGeometric(join(dir, '.git')).finally(() => {
        running = false;
      });
      let seen: string[] = [];
      while (running) {
        if (children() > before) seen = gitChildren();
        await new Promise((r) => setImmediate(r));
      }
      expect(await rolled).toBe('done');
      expect(seen).toEqual([]);
    }
  });

  it('does nothing when the user turned automatic gc off', async () => {
    const made = makeRepo('zz-geometric-off-');
    cleanup = made.cleanup;
    const dir = made.dir;
    setUp(dir, 6);
    const before = packs(dir);
    for (const [key, value] of [
      ['gc.autoPackLimit', '0'],
      ['gc.auto', '0'],
    ]) {
      git(dir, ['config', key!, value!]);
      expect(await repackGeometric(join(dir, '.git'))).toBe('off');
      expect(packs(dir)).toEqual(before);
      git(dir, ['config', '--unset', key!]);
    }
    // Set to anything else, it runs.
    git(dir, ['config', 'gc.autoPackLimit', '10']);
    expect(await repackGeometric(join(dir, '.git'))).toBe('done');
    expect(packs(dir).length).toBeLessThan(before.length);
  });

  it('reads gc.auto as git does: a negative value is off too, and the last value set wins', async () => {
    const made = makeRepo('zz-geometric-config-');
    cleanup = made.cleanup;
    const dir = made.dir;
    setUp(dir, 6);
    const before = packs(dir);
    // git's gc --auto does nothing at gc.auto ≤ 0 (need_to_gc), nor past gc.autoPackLimit ≤ 0.
    for (const [key, value] of [
      ['gc.auto', '-1'],
      ['gc.autoPackLimit', '-1'],
      ['gc.auto', '00'],
    ]) {
      git(dir, ['config', key!, value!]);
      expect(await repackGeometric(join(dir, '.git')), `${key}=${value}`).toBe('off');
      expect(packs(dir)).toEqual(before);
      git(dir, ['config', '--unset', key!]);
    }
    // 0 then 100 (a global 0 overridden in the repository reads the same): git uses 100.
    git(dir, ['config', '--add', 'gc.auto', '0']);
    git(dir, ['config', '--add', 'gc.auto', '100']);
    expect(await repackGeometric(join(dir, '.git'))).toBe('done');
    expect(packs(dir).length).toBeLessThan(before.length);
  });

  it('answers unsupported in a partial clone (a promisor remote), where git 2.39 dies in the roll-up', async () => {
    const made = makeRepo('zz-geometric-promisor-');
    cleanup = made.cleanup;
    const dir = made.dir;
    setUp(dir, 6);
    const before = packs(dir);
    // What `git clone --filter` sets; either one makes git's repack pass
    // --exclude-promisor-objects, which pack-objects --stdin-packs refuses (git 2.39).
    for (const config of [
      ['remote.origin.promisor', 'true'],
      ['extensions.partialClone', 'origin'],
    ]) {
      git(dir, ['config', 'remote.origin.url', dir]);
      git(dir, ['config', config[0]!, config[1]!]);
      expect(await repackGeometric(join(dir, '.git')), config[0]).toBe('unsupported');
      expect(packs(dir)).toEqual(before);
      git(dir, ['config', '--unset', config[0]!]);
    }
    git(dir, ['config', 'remote.origin.promisor', 'false']);
    expect(await repackGeometric(join(dir, '.git'))).toBe('done');
  });

  it('rolls up where the user asked for bitmaps (repack.writeBitmaps), which git refuses for an incremental repack', async () => {
    const made = makeRepo('zz-geometric-bitmaps-');
    cleanup = made.cleanup;
    const dir = made.dir;
    const { blobs, large } = setUp(dir, 6);
    const before = packs(dir);
    // git 2.39 dies: "Incremental repacks are incompatible with bitmap indexes"; every roll-up
    // failed, and the packs piled up.
    for (const key of ['repack.writeBitmaps', 'pack.writeBitmaps']) {
      git(dir, ['config', key, 'true']);
      expect(await repackGeometric(join(dir, '.git')), key).toBe('done');
      git(dir, ['config', '--unset', key]);
    }
    expect(packs(dir).length).toBeLessThan(before.length);
    expect(packs(dir)).toContain(large);
    const check = git(dir, ['cat-file', '--batch-check'], blobs.join('\n') + '\n');
    expect(check.split('\n').filter((l) => l.endsWith(' missing'))).toEqual([]);
  });
});

describe('git run nicer than the daemon', () => {
  let cleanup = () => {};
  afterEach(() => cleanup());

  it('takes the niceness asked for, and its own children inherit it', async () => {
    const made = makeRepo('zz-nice-');
    cleanup = made.cleanup;
    // An alias that runs a shell: what it prints is the niceness git ran with when it forked
    // (as repack forks pack-objects).
    const r = await runGit(['-c', 'alias.niceness=!nice', 'niceness'], { cwd: made.dir, nice: 7 });
    expect(Number(r.stdout.toString('utf8').trim())).toBe(Math.min(19, getPriority() + 7));
    const plain = await runGit(['-c', 'alias.niceness=!nice', 'niceness'], { cwd: made.dir });
    expect(Number(plain.stdout.toString('utf8').trim())).toBe(getPriority());
  });
});

describe('the full gc, seldom', () => {
  let cleanup = () => {};
  afterEach(() => cleanup());

  it('prunes an unreachable object older than two weeks, keeps a fresh one and what is reachable', async () => {
    const made = makeRepo('zz-fullgc-');
    cleanup = made.cleanup;
    const dir = made.dir;
    const gitdir = join(dir, '.git');
    const old = git(dir, ['hash-object', '-w', '--stdin'], 'unreachable, a month old\n');
    const loose = (oid: string) => join(gitdir, 'objects', oid.slice(0, 2), oid.slice(2));
    const month = new Date(Date.now() - 30 * 24 * 3600_000);
    utimesSync(loose(old), month, month);
    // Rolled up first, as the daemon's roll-ups do: it is in a pack then, and gc --auto (too
    // few packs, no loose objects) would leave it there for good.
    expect(await repackGeometric(gitdir)).toBe('done');
    const present = (oid: string) =>
      git(dir, ['cat-file', '--batch-check'], oid + '\n').endsWith('missing') ? 'missing' : 'there';
    expect(present(old)).toBe('there');
    // The pack it went to is new: date it back as well (git prunes the unreachable objects of
    // a pack by the pack's time).
    for (const f of readdirSync(packDir(dir))) utimesSync(join(packDir(dir), f), month, month);
    // Unreachable and just written (a write whose ref has not moved yet): kept.
    const fresh = git(dir, ['hash-object', '-w', '--stdin'], 'unreachable, just written\n');
    expect(await gcFull(gitdir)).toBe('done');
    expect([present(old), present(fresh)]).toEqual(['missing', 'there']);
    expect(git(dir, ['rev-parse', 'HEAD^{tree}'])).toMatch(/^[0-9a-f]{40}$/);
    expect(fsckProblems(dir)).toEqual([]);
  });

  it('leaves the recent unreachable objects of the packs it rewrites in a pack, not loosened one file each', async () => {
    // What zz's roll-ups keep packed (a sync's pruned history, writes that lost a CAS): git
    // 2.39's gc without cruft packs writes each one out as a loose file for two weeks (8,000
    // of them: 8,000 files), and past gc.auto's 6,700 every gc --auto rewrites the repository.
    const made = makeRepo('zz-fullgc-cruft-');
    cleanup = made.cleanup;
    const dir = made.dir;
    const gitdir = join(dir, '.git');
    const blobs = Array.from({ length: 40 }, (_, i) =>
      git(dir, ['hash-object', '-w', '--stdin'], `unreachable ${i}\n`),
    );
    expect(await repackGeometric(gitdir)).toBe('done');
    expect(git(dir, ['count-objects', '-v'])).toMatch(/^count: 0$/m);
    expect(await gcFull(gitdir)).toBe('done');
    expect(git(dir, ['count-objects', '-v'])).toMatch(/^count: 0$/m);
    const check = git(dir, ['cat-file', '--batch-check'], blobs.join('\n') + '\n');
    expect(check.split('\n').filter((l) => l.endsWith(' missing'))).toEqual([]);
  });

  it("takes the user's own gc.cruftPacks: set false, the recent unreachable objects are loosened as they asked", async () => {
    const made = makeRepo('zz-fullgc-nocruft-');
    cleanup = made.cleanup;
    const dir = made.dir;
    const gitdir = join(dir, '.git');
    git(dir, ['config', 'gc.cruftPacks', 'false']);
    for (let i = 0; i < 40; i++) git(dir, ['hash-object', '-w', '--stdin'], `unreachable ${i}\n`);
    // The roll-up still runs (the key is no reason to stop it).
    expect(await repackGeometric(gitdir)).toBe('done');
    expect(git(dir, ['count-objects', '-v'])).toMatch(/^count: 0$/m);
    expect(await gcFull(gitdir)).toBe('done');
    expect(git(dir, ['count-objects', '-v'])).toMatch(/^count: 40$/m);
  });

  it('is due once a day, counted from a mark on disk that the first ask makes', () => {
    const made = makeRepo('zz-fullgc-due-');
    cleanup = made.cleanup;
    const gitdir = join(made.dir, '.git');
    const day = 24 * 3600_000;
    expect(fullGcDue(gitdir, day)).toBe(false); // first ask: marked now, not due
    expect(fullGcDue(gitdir, day)).toBe(false);
    expect(fullGcDue(gitdir, day, Date.now() + day + 1000)).toBe(true);
    const mark = join(gitdir, 'zz', 'last-full-gc');
    const twoDays = new Date(Date.now() - 2 * day);
    utimesSync(mark, twoDays, twoDays);
    expect(fullGcDue(gitdir, day)).toBe(true);
  });

  it('is due when its mark is from the future (made while the clock was wrong), not years later', () => {
    const made = makeRepo('zz-fullgc-future-');
    cleanup = made.cleanup;
    const gitdir = join(made.dir, '.git');
    const day = 24 * 3600_000;
    expect(fullGcDue(gitdir, day)).toBe(false); // the mark is made
    const mark = join(gitdir, 'zz', 'last-full-gc');
    const nextYear = new Date(Date.now() + 365 * day); // a VM booted with its clock ahead
    utimesSync(mark, nextYear, nextYear);
    expect(fullGcDue(gitdir, day)).toBe(true);
    // Within a period ahead (clocks of a few seconds or hours apart): not due.
    const soon = new Date(Date.now() + 3600_000);
    utimesSync(mark, soon, soon);
    expect(fullGcDue(gitdir, day)).toBe(false);
  });

  it('is not due again the next minute when it failed', async () => {
    const made = makeRepo('zz-fullgc-fails-');
    cleanup = made.cleanup;
    const gitdir = join(made.dir, '.git');
    const day = 24 * 3600_000;
    expect(fullGcDue(gitdir, day)).toBe(false); // the mark is made
    const twoDays = new Date(Date.now() - 2 * day);
    utimesSync(join(gitdir, 'zz', 'last-full-gc'), twoDays, twoDays);
    expect(fullGcDue(gitdir, day)).toBe(true);
    git(made.dir, ['config', 'gc.pruneExpire', 'bogus']); // git gc dies on it
    await expect(gcFull(gitdir)).rejects.toThrow(/pruneexpire/i);
    expect(fullGcDue(gitdir, day)).toBe(false);
  });

  it('does nothing when the user turned automatic gc off', async () => {
    const made = makeRepo('zz-fullgc-off-');
    cleanup = made.cleanup;
    git(made.dir, ['config', 'gc.auto', '0']);
    const before = packs(made.dir);
    expect(await gcFull(join(made.dir, '.git'))).toBe('off');
    expect(packs(made.dir)).toEqual(before);
  });
});

describe('a git failure', () => {
  it('names the command git ran, not the first of its options', async () => {
    const made = makeRepo('zz-git-fails-');
    try {
      await expect(
        runGit(['--git-dir', join(made.dir, '.git'), '-c', 'gc.pruneExpire=bogus', 'gc'], {
          cwd: made.dir,
        }),
      ).rejects.toThrow(/^git gc failed: /);
    } finally {
      made.cleanup();
    }
  });
});
