import { execFileSync } from 'node:child_process';
import { existsSync, promises as fsp, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as zlib from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  countObjects,
  gcAuto,
  hashObject,
  openRepository,
  PACK_MIN_OBJECTS,
  type GitRepository,
} from '../../src/git/index.js';
import {
  adler32,
  crc32Table,
  encodeIndex,
  encodePack,
  entryHeader,
  storedZlib,
  writePack,
} from '../../src/git/pack-writer.js';
import { initRepo, ladderBuild, readLadder, ZzRepo } from '../../src/core/index.js';
import { startMaintenance } from '../../src/daemon/maintenance.js';
import { SYNC_WRITE_MAX } from '../../src/git/small-packs.js';
import { GitStore } from '../../src/store/index.js';
import { prng, testSeed } from '../helpers/seeded.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { fsck, fsckProblems, makeRepo, sh } from '../helpers/temp-repo.js';
import { expectSound } from './pack-fixture.js';

// The pack writer against real git: what it writes must be a pack git reads, verifies, repacks,
// fetches and pushes like its own, and a kill at any point must leave no ref pointing at an
// object that is not there.

const LADDER = 'refs/zz/ladder';

function files(n: number, tag: string, pad = 0): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const text = `rung ${i} of ${tag}`;
    m.set(`rungs/${i % 8}/f${i}.json`, JSON.stringify({ tag, i, text, pad: '.'.repeat(pad) }));
  }
  return m;
}

/**
 * Files enough for a pack left for gc, pack-writer's path: padded past SYNC_WRITE_MAX, so
 * ObjectWriter.isLarge makes the batch large whatever its count.
 */
function bigFiles(n: number, tag: string): Map<string, string> {
  return files(n, tag, Math.ceil((2 * SYNC_WRITE_MAX) / n));
}

function packsIn(gitdir: string): string[] {
  return readdirSync(join(gitdir, 'objects', 'pack'))
    .filter((n) => n.endsWith('.idx'))
    .sort();
}

describe('pack writer (encoding)', () => {
  it('writes type and size in the entry header as git reads them', () => {
    const decode = (b: Buffer) => {
      let size = b[0]! & 0x0f;
      let mult = 16;
      let i = 0;
      while (b[i]! & 0x80) {
        i++;
        size += (b[i]! & 0x7f) * mult;
        mult *= 128;
      }
      return { type: (b[0]! >> 4) & 7, size, length: i + 1 };
    };
    expect(decode(entryHeader('commit', 15))).toEqual({ type: 1, size: 15, length: 1 });
    expect(decode(entryHeader('tree', 16))).toEqual({ type: 2, size: 16, length: 2 });
    expect(decode(entryHeader('blob', 2 ** 35 + 77))).toEqual({
      type: 3,
      size: 2 ** 35 + 77,
      length: 6,
    });
  });

  it('computes zlib’s CRC-32 on Node versions without zlib.crc32', () => {
    const seed = testSeed('crc32');
    const rnd = prng(seed);
    const native = (zlib as { crc32?: (d: Buffer, v?: number) => number }).crc32;
    const known = Buffer.from('The quick brown fox jumps over the lazy dog');
    expect(crc32Table(known)).toBe(0x414fa339);
    for (let k = 0; k < 20; k++) {
      const a = Buffer.from(Array.from({ length: Math.floor(rnd() * 300) }, () => rnd() * 256));
      const b = Buffer.from(Array.from({ length: Math.floor(rnd() * 300) }, () => rnd() * 256));
      expect(crc32Table(b, crc32Table(a))).toBe(crc32Table(Buffer.concat([a, b])));
      if (native) expect(crc32Table(a)).toBe(native(a));
    }
  });

  // Trees are written as stored zlib streams built here (no zlib call): the same bytes as
  // zlib's level 0 in the blocks and the checksum, across the 64 KiB block boundary.
  it('writes stored zlib streams that inflate back, with zlib’s Adler-32', () => {
    const seed = testSeed('stored zlib');
    const rnd = prng(seed);
    expect(adler32(Buffer.from('Wikipedia'))).toBe(0x11e60398);
    for (const size of [0, 1, 300, 7_400, 65_535, 65_536, 65_537, 200_000]) {
      const body = Buffer.from(Array.from({ length: size }, () => Math.floor(rnd() * 256)));
      const prefix = Buffer.from([0x95, 0x02]);
      const out = storedZlib(body, prefix);
      expect(out.subarray(0, 2)).toEqual(prefix);
      const stream = out.subarray(2);
      expect(zlib.inflateSync(stream).equals(body), `size ${size} seed ${seed}`).toBe(true);
      const ref = zlib.deflateSync(body, { level: 0 });
      // Checksum as zlib's; blocks of 65,535 bytes at most (zlib's own split may differ).
      expect(stream.subarray(-4)).toEqual(ref.subarray(-4));
      expect(stream.length).toBe(2 + 5 * Math.max(1, Math.ceil(size / 65_535)) + size + 4);
    }
  });

  it('puts offsets past 2 GiB in the 64-bit table', () => {
    // A pack past 2 GiB is too big to write in a test; the index layout is checked directly.
    const big = [
      { oid: 'cc'.repeat(20), offset: 2 ** 33 + 5, crc: 3 },
      { oid: 'aa'.repeat(20), offset: 12, crc: 1 },
      { oid: 'bb'.repeat(20), offset: 2 ** 31, crc: 2 },
    ];
    const idx = encodeIndex(big, Buffer.alloc(20, 9));
    const n = 3;
    const names = 8 + 1024;
    const offsets = names + n * 24;
    const large = offsets + n * 4;
    expect(idx.readUInt32BE(8 + 0xaa * 4)).toBe(1);
    expect(idx.readUInt32BE(8 + 0xbb * 4)).toBe(2);
    expect(idx.readUInt32BE(8 + 255 * 4)).toBe(3);
    expect(idx.subarray(names, names + 20).toString('hex')).toBe('aa'.repeat(20));
    expect(idx.readUInt32BE(offsets)).toBe(12);
    expect(idx.readUInt32BE(offsets + 4)).toBe(0x80000000);
    expect(idx.readUInt32BE(offsets + 8)).toBe(0x80000001);
    expect(idx.readBigUInt64BE(large)).toBe(2n ** 31n);
    expect(idx.readBigUInt64BE(large + 8)).toBe(2n ** 33n + 5n);
    expect(idx.length).toBe(large + 16 + 40);
  });

  it('refuses object ids that are not SHA-1 (a sha256 repository)', () => {
    // openRepository refuses sha256 repositories before any write; this is the second guard.
    expect(() =>
      encodePack([{ oid: 'ab'.repeat(32), type: 'blob', body: Buffer.from('x') }]),
    ).toThrow(/not a SHA-1 object id/);
  });

  it('writes an object given twice once', () => {
    const body = Buffer.from('same\n');
    const oid = hashObject('blob', body).oid;
    const enc = encodePack([
      { oid, type: 'blob', body },
      { oid, type: 'blob', body },
    ]);
    expect(enc.count).toBe(1);
  });
});

describe('pack writer (real git)', () => {
  let dir: string;
  let gitdir: string;
  let git: GitRepository;
  let store: GitStore;
  let cleanup: () => void;

  beforeAll(async () => {
    ({ dir, cleanup } = makeRepo('zz-pack-'));
    gitdir = join(dir, '.git');
    git = await openRepository(dir);
    // Small commits loose here, so that the big pack is the only one (small packs: below).
    git.objects.smallPacks = false;
    store = new GitStore(git);
  });
  afterAll(() => {
    store.close();
    cleanup();
  });

  it('writes a big commit as one pack that fsck, verify-pack and a running cat-file accept', async () => {
    // The long-lived cat-file starts (and lists the packs) before the pack exists.
    expect((await git.catFile.read(sh(dir, 'rev-parse', 'HEAD:README.md')))?.data.toString()).toBe(
      '# demo\n\nA demo repository.\n',
    );
    const before = await countObjects(gitdir);
    const want = files(300, 'first');
    const rev = await store.commit(LADDER, { parent: null, changes: want, ops: [], summary: 'x' });
    const after = await countObjects(gitdir);
    expect(after.packs).toBe(before.packs + 1);
    // The Ladder's deterministic root commit and its empty tree are a small write: loose.
    expect(after.count - before.count).toBe(2);
    const [idx] = packsIn(gitdir);
    const verify = execFileSync('git', ['verify-pack', '-v', join(gitdir, 'objects/pack', idx!)], {
      cwd: dir,
      encoding: 'utf8',
    });
    // 300 blobs, 8 fan-out trees, rungs/, the root tree, the commit.
    expect(verify).toMatch(/non delta: 311 objects/);
    expect(() => fsck(dir)).not.toThrow();
    expect(expectSound(dir, rev)).toBe(311 + 2);
    // Read back through the cat-file process that was already running.
    const fresh = new GitStore(git);
    expect(await fresh.readAll(rev)).toEqual(want);
  });

  it('writes the same objects twice as the same pack, once', async () => {
    const objects = [...files(40, 'twice').values()].map((text) => {
      const body = Buffer.from(text);
      return { oid: hashObject('blob', body).oid, type: 'blob' as const, body };
    });
    const before = packsIn(gitdir).length;
    const a = await writePack(gitdir, objects, { fsync: true });
    const b = await writePack(gitdir, objects, { fsync: true });
    expect(b.name).toBe(a.name);
    expect(packsIn(gitdir).length).toBe(before + 1);
    expect(
      readdirSync(join(gitdir, 'objects', 'pack')).filter((n) => n.startsWith('tmp_')),
    ).toEqual([]);
    expect(sh(dir, 'cat-file', '-p', objects[7]!.oid)).toBe(objects[7]!.body.toString());
  });

  it('stores blobs and commits of up to 1 KiB as they are and deflates larger ones; git reads both', async () => {
    const body = (n: number) => Buffer.from(JSON.stringify({ pad: 'x'.repeat(n - 10) }));
    const objects = [body(1024), body(1025), body(3000)].map((b) => ({
      oid: hashObject('blob', b).oid,
      type: 'blob' as const,
      body: b,
    }));
    const enc = encodePack(objects);
    const stored = (oid: string): boolean => {
      const e = enc.entries.find((x) => x.oid === oid)!;
      // After the type-and-size header: zlib's header, then a stored block's 5-byte header.
      const z = e.data.subarray(
        e.data.length - (objects.find((o) => o.oid === oid)!.body.length + 11),
      );
      return z[0] === 0x78 && z[1] === 0x01 && z[2] === 0x01;
    };
    expect(objects.map((o) => stored(o.oid))).toEqual([true, false, false]);
    await writePack(gitdir, objects, { fsync: true });
    for (const o of objects) expect(sh(dir, 'cat-file', '-p', o.oid)).toBe(o.body.toString());
    expect(() => fsck(dir)).not.toThrow();
  });

  it('writes a commit of a few objects loose when small packs are off, else as one small pack', async () => {
    const before = await countObjects(gitdir);
    const parent = await store.head(LADDER);
    const loose = await store.commit(LADDER, {
      parent,
      changes: files(3, 'small'),
      ops: [],
      summary: 's',
    });
    const after = await countObjects(gitdir);
    expect(after.packs).toBe(before.packs);
    expect(after.count).toBeGreaterThan(before.count);
    expect(PACK_MIN_OBJECTS).toBeGreaterThanOrEqual(16);
    // Durable writes (the default) of 2..PACK_MIN_OBJECTS objects: one small pack, nothing loose.
    git.objects.smallPacks = true;
    try {
      await store.commit(LADDER, {
        parent: loose,
        changes: files(3, 'small pack'),
        ops: [],
        summary: 's',
      });
    } finally {
      git.objects.smallPacks = false;
    }
    const last = await countObjects(gitdir);
    expect(last.packs).toBe(after.packs + 1);
    expect(last.count).toBe(after.count);
    expect(() => fsck(dir)).not.toThrow();
  });

  it('push, clone and fetch carry the ladder ref and its packed objects', async () => {
    const remote = tempDir('zz-pack-remote-');
    sh(remote, 'init', '-q', '--bare');
    sh(dir, 'push', '-q', remote, `${LADDER}:${LADDER}`);
    expect(() => fsck(remote)).not.toThrow();
    const clone = tempDir('zz-pack-clone-');
    sh(clone, 'clone', '-q', '--bare', remote, '.');
    sh(clone, 'fetch', '-q', 'origin', 'refs/zz/*:refs/zz/*');
    expect(sh(clone, 'rev-parse', LADDER)).toBe(await store.head(LADDER));
    // A second big commit: pushed (objects read out of our packs) and fetched into the clone.
    const parent = await store.head(LADDER);
    const want = files(120, 'second');
    const rev = await store.commit(LADDER, { parent, changes: want, ops: [], summary: 'y' });
    sh(dir, 'push', '-q', remote, `${LADDER}:${LADDER}`);
    sh(clone, 'fetch', '-q', 'origin', 'refs/zz/*:refs/zz/*');
    expect(sh(clone, 'rev-parse', LADDER)).toBe(rev);
    expect(() => fsck(clone)).not.toThrow();
    expectSound(clone, rev);
    const cloned = await openRepository(clone);
    try {
      expect(await new GitStore(cloned).readAll(rev)).toEqual(
        new Map([...files(300, 'first'), ...files(3, 'small'), ...want]),
      );
    } finally {
      cloned.close();
    }
  });

  it('git gc repacks our packs and every object stays readable, also to the running cat-file', async () => {
    const rev = (await store.head(LADDER))!;
    const want = await store.readAll(rev);
    // --prune=now: nothing writes beside this test, and the unreachable blobs of the test
    // above would otherwise be loosened rather than dropped.
    sh(dir, 'gc', '-q', '--prune=now');
    const counts = await countObjects(gitdir);
    expect(counts.count).toBe(0);
    expect(counts.packs).toBe(1);
    expect(() => fsck(dir)).not.toThrow();
    expectSound(dir, rev);
    expect(await new GitStore(git).readAll(rev)).toEqual(want);
  });
});

describe('pack writer: the Ladder', () => {
  it('a full build is one pack that a fresh reader folds; an incremental build is a small pack, none for gc', async () => {
    const { dir, cleanup } = makeRepo('zz-pack-ladder-');
    try {
      for (let i = 0; i < 60; i++) {
        const file = join(dir, 'src', `mod${i}.ts`);
        mkdirSync(dirname(file), { recursive: true });
        writeFileSync(
          file,
          `/** Module ${i}: adds ${i}. */\nexport const add${i} = (x: number) => x + ${i};\n`,
        );
      }
      sh(dir, 'add', '-A');
      sh(dir, 'commit', '-q', '-m', 'modules');
      const repo = await ZzRepo.open(dir, { key: 'test/ladder-pack' });
      await initRepo(repo, { owner: 'owner@example.com', default_branch: 'main' });
      const full = await ladderBuild(repo, { actor: 'owner@example.com' });
      expect(full.written).toBeGreaterThan(60);
      expect(repo.git!.objects.packsWritten).toBe(1);
      writeFileSync(
        join(dir, 'src', 'mod7.ts'),
        '/** Module 7, changed. */\nexport const seven = 7;\n',
      );
      sh(dir, 'commit', '-q', '-am', 'change one');
      const incr = await ladderBuild(repo, { actor: 'owner@example.com' });
      expect(incr.committed).toBe(true);
      expect(repo.git!.objects.packsWritten).toBe(1);
      repo.close();
      expect(fsckProblems(dir)).toEqual([]);
      // A new reader (its own cat-file) folds the whole Ladder from the pack and the loose objects.
      const fresh = await ZzRepo.open(dir, { key: 'test/ladder-pack' });
      try {
        const snap = await readLadder(fresh);
        expect(snap.state.size).toBe(incr.rungs);
        expect(snap.state.get('src/mod7.ts')?.summary).toMatch(/changed/i);
        expect(snap.state.get('src/mod42.ts')?.summary).toMatch(/Module 42/);
      } finally {
        fresh.close();
      }
    } finally {
      cleanup();
    }
  });
});

describe('pack writer: durability', () => {
  afterEach(() => vi.restoreAllMocks());

  it('fsyncs the pack, its index and objects/pack/, and renames the .idx last, before the ref moves', async () => {
    const { dir, cleanup } = makeRepo('zz-pack-durable-');
    const git = await openRepository(dir);
    try {
      const ref = 'refs/zz/lanes/durable-pack';
      // Each event notes whether the ref had moved by then (however the ref store syncs it).
      const events: string[] = [];
      const note = (e: string) =>
        events.push(existsSync(join(dir, '.git', ref)) ? `${e} after the ref moved` : e);
      const probe = await fsp.open(dir, 'r');
      const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
      await probe.close();
      const realSync = proto.sync;
      vi.spyOn(proto, 'sync').mockImplementation(async function (this: fsp.FileHandle) {
        const st = await this.stat();
        note(st.isDirectory() ? 'sync dir' : 'sync file');
        return realSync.call(this);
      });
      const realRename = fsp.rename;
      vi.spyOn(fsp, 'rename').mockImplementation((from, to) => {
        if (String(to).includes('/objects/pack/'))
          note(`rename ${String(to).replace(/^.*\./, '')}`);
        return realRename(from, to);
      });

      const changes = bigFiles(100, 'durable');
      const rev = await new GitStore(git).commit(ref, {
        parent: null,
        changes,
        ops: [],
        summary: 'd',
      });
      expect(await git.refs.read(ref)).toBe(rev);
      expect(events.slice(0, 5), events.join(', ')).toEqual([
        'sync file', // the pack and its index, side by side
        'sync file',
        'rename pack',
        'rename idx',
        'sync dir', // objects/pack/
      ]);
    } finally {
      git.close();
      cleanup();
    }
  });
});

describe('pack writer: many packs', () => {
  it('60 big commits leave 60 packs that reads find; gc --auto consolidates them past gc.autoPackLimit', async () => {
    const { dir, cleanup } = makeRepo('zz-pack-many-');
    const gitdir = join(dir, '.git');
    const git = await openRepository(dir);
    const store = new GitStore(git);
    try {
      const ref = 'refs/zz/lanes/many';
      const revs: string[] = [];
      const commitOne = async (n: number) => {
        const parent = await store.head(ref);
        // Files of earlier commits stay: each commit rewrites 40 and keeps the rest.
        const changes = bigFiles(40, `build ${n}`);
        revs.push(await store.commit(ref, { parent, changes, ops: [], summary: `b${n}` }));
      };
      const base = (await countObjects(gitdir)).packs;
      for (let n = 0; n < 40; n++) await commitOne(n);
      expect((await countObjects(gitdir)).packs).toBe(base + 40);
      // Below git's gc.autoPackLimit (50) gc --auto leaves them.
      await gcAuto(gitdir);
      expect((await countObjects(gitdir)).packs).toBe(base + 40);
      for (let n = 40; n < 60; n++) await commitOne(n);
      expect((await countObjects(gitdir)).packs).toBe(base + 60);
      const reader = new GitStore(git); // no tree cache: every read goes to cat-file
      expect(await reader.readAll(revs[59]!)).toEqual(bigFiles(40, 'build 59'));
      expect(await reader.readAll(revs[7]!)).toEqual(bigFiles(40, 'build 7'));
      await gcAuto(gitdir);
      const after = await countObjects(gitdir);
      expect(after.packs).toBeLessThanOrEqual(2);
      expect(after.count).toBe(0);
      expect(fsckProblems(dir)).toEqual([]);
      const again = new GitStore(git);
      expect(await again.readAll(revs[59]!)).toEqual(bigFiles(40, 'build 59'));
      expect(await again.readAll(revs[3]!)).toEqual(bigFiles(40, 'build 3'));
    } finally {
      store.close();
      cleanup();
    }
  });
});

describe('pack writer: daemon maintenance', () => {
  it('runs gc --auto as packs accumulate, which keeps their number bounded', async () => {
    const { dir, cleanup } = makeRepo('zz-pack-maint-');
    const repo = await ZzRepo.open(dir, { key: 'test/maint' });
    const logged: string[] = [];
    const maint = startMaintenance(new Map([[repo.key, repo]]), { log: (l) => logged.push(l) });
    try {
      const ref = 'refs/zz/lanes/maint';
      const revs: string[] = [];
      for (let n = 0; n < 70; n++) {
        const parent = await repo.store.head(ref);
        const rev = await repo.store.commit(ref, {
          parent,
          changes: bigFiles(40, `m${n}`),
          ops: [],
          summary: `m${n}`,
        });
        revs.push(rev);
        // What an Entity does after its commit lands.
        repo.emitFor(ref, rev, []);
      }
      await maint.idle();
      expect(logged).toEqual([]);
      expect(repo.git!.objects.packsWritten).toBe(70);
      // Consolidated at least once past 50; at most a few runs' worth written since.
      expect((await countObjects(join(dir, '.git'))).packs).toBeLessThanOrEqual(25);
      expect(await new GitStore(repo.git!).readAll(revs[69]!)).toEqual(bigFiles(40, 'm69'));
      expect(fsckProblems(dir)).toEqual([]);
    } finally {
      await maint.close();
      repo.close();
      cleanup();
    }
  });
});

/**
 * Starts the child writer (commits of `files` files) once per point in `points` and SIGKILLs
 * it: at a stall point ('pack': inside a pack write, before the .pack is renamed into place;
 * 'idx': between the .pack and the .idx), or ('') at a random moment up to `windowMs` after its
 * first commit. After each kill: the ref is an acknowledged commit (or the one after it), and
 * git finds every object it reaches.
 */
