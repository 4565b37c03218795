import fs, { writeSync } from 'node:fs';
import { openRepository } from '../../src/git/index.js';
import { SYNC_WRITE_MAX } from '../../src/git/small-packs.js';
import { GitStore } from '../../src/store/index.js';

// Test-only writer for the SIGKILL test in pack-writer.test.ts:
//
//   node --import tsx test/git/pack-writer-child.ts <repo> <ref> <files per commit> [stall]
//
// Commits, until killed, a change of <files> files to <ref> through GitStore (so each commit's
// objects are written as one pack, then the ref moves), and prints `ack <revision>` after each
// commit landed, with writeSync so that a printed line is a line the parent reads even if a
// SIGKILL follows at once. Prints `ready` once the repository is open.
//
// [stall], fault injection for a deterministic kill point, after one commit landed: `pack`
// hangs when the first pack file is about to be renamed into place (both tmp files written and
// synced), `idx` when the .pack is in place and its .idx is about to be; it prints `stalled`
// and waits to be killed. With small commits, only a merged pack's renames are stall points.

const [repoDir, ref, filesArg, stall] = process.argv.slice(2);
if (!repoDir || !ref || !filesArg) throw new Error('usage: pack-writer-child <repo> <ref> <files>');
const files = Number(filesArg);
const pad = '.'.repeat(Math.ceil((2 * SYNC_WRITE_MAX) / Math.max(files, 1)));
const say = (line: string) => writeSync(1, line + '\n');

let armed = false;
if (stall === 'pack' || stall === 'idx') {
  const hang = (): never => {
    say('stalled');
    for (;;) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  };
  // pack-writer.ts calls fs.promises.rename through the module object, so this is seen.
  const rename = fs.promises.rename;
  fs.promises.rename = (from, to) => {
    if (armed && String(to).endsWith(`.${stall}`)) hang();
    return rename(from, to);
  };
  // Small packs, and merges of them where blanks are ready, are renamed with renameSync
  // (small-packs.ts, on `fs` at call time). A commit's own small pack is not a stall point:
  // a merged one is, told by its object count (a commit writes files + a few trees).
  const objectsIn = (pack: string): number => {
    const fd = fs.openSync(pack, 'r');
    try {
      const head = Buffer.alloc(12);
      fs.readSync(fd, head, 0, 12, 0);
      return head.readUInt32BE(8);
    } finally {
      fs.closeSync(fd);
    }
  };
  const renameSync = fs.renameSync;
  fs.renameSync = (from, to) => {
    if (armed && String(to).endsWith(`.${stall}`)) {
      const pack = stall === 'pack' ? String(from) : String(to).replace(/\.idx$/, '.pack');
      if (objectsIn(pack) > 4 * (files + 8)) hang();
    }
    renameSync(from, to);
  };
}

const git = await openRepository(repoDir);
const store = new GitStore(git);
say('ready');
for (let n = 0; ; n++) {
  const parent = await store.head(ref);
  const changes = new Map<string, string>();
  for (let i = 0; i < files; i++) {
    changes.set(
      `rungs/${i % 16}/${i}.json`,
      // Past PACK_MIN_OBJECTS files, and padded past SYNC_WRITE_MAX: a pack left for gc
      // (pack-writer's path) by either rule of ObjectWriter.isLarge.
      JSON.stringify({ commit: n, file: i, pid: process.pid, pad: files > 32 ? pad : '' }),
    );
  }
  const rev = await store.commit(ref, { parent, changes, ops: [], summary: `pack ${n}` });
  say(`ack ${rev}`);
  armed = true;
}
