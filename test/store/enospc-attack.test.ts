import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { testSeed } from '../helpers/seeded.js';
import { canMountIn, runInMountNs } from '../helpers/mount-ns.js';
import { tempDir } from '../helpers/temp-dirs.js';

// A full disk while the durable write path writes into its blanks (git/blank-files.ts): every
// write fails with ENOSPC (no crash, nothing half-named), no fd or file piles up over many
// failed writes, and once space is back the next writes land and git finds the repository
// sound. On a tmpfs mounted in a mount namespace of the child's own (root only: skipped
// elsewhere), so nothing outside the test sees it.

const PROJECT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

// The child, written to a temp file: plain ESM importing the sources through tsx.
const CHILD = `
import fs from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
const [mnt, project, seedArg] = process.argv.slice(2);
const { openRepository } = await import(join(project, 'src/git/index.ts'));
const { GitStore } = await import(join(project, 'src/store/index.ts'));
const dir = join(mnt, 'repo');
fs.mkdirSync(dir);
const git = (...a) => execFileSync('git', a, { cwd: dir, encoding: 'utf8' });
git('init', '-q', '-b', 'main');
git('-c', 'user.name=A', '-c', 'user.email=a@b.c', 'commit', '-q', '--allow-empty', '-m', 'i');
const repo = await openRepository(dir);
const store = new GitStore(repo);
let seed = Number(seedArg);
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const heads = new Map();
let n = 0;
const write = async () => {
  const ref = 'refs/zz/lanes/full-' + (n % 3);
  const parent = heads.get(ref) ?? null;
  const changes = new Map([['asks/' + (n % 5) + '/a.json', JSON.stringify({ n, pad: 'p'.repeat(Math.floor(rnd() * 2000)) })], ['asks/x/' + n + '.json', String(rnd())]]);
  const oid = await store.commit(ref, { parent, changes, ops: [], summary: 'w ' + n++ });
  heads.set(ref, oid);
};
for (let i = 0; i < 6; i++) await write();
const fdList = () => fs.readdirSync('/proc/self/fd').map((f) => { try { return fs.readlinkSync('/proc/self/fd/' + f); } catch { return '?'; } });
// Spare blanks hold an fd each (at most 2 + 2 per repository); every other fd naming a file
// on the full disk (the repository: its locks, objects, packs, temp files) is counted. Nothing
// else is: the runtime's own (anon_inode: epoll, io_uring, eventfd; pipes) and the files tsx
// and Node 24's loaders open and close when they like made the count differ by one, up and
// down, with nothing of ours leaked (CI, 3 December, twice).
const fds = () => fdList().filter((f) => f.startsWith(mnt + '/') && !f.includes('/zz/blanks/')).length;
const blankFds = () => fdList().filter((f) => f.includes('/zz/blanks/')).length;
// Fill the disk.
const filler = join(mnt, 'filler');
const fd = fs.openSync(filler, 'w');
const chunk = Buffer.alloc(64 * 1024, 7);
try { for (;;) fs.writeSync(fd, chunk); } catch (e) { if (e.code !== 'ENOSPC') throw e; }
try { for (;;) fs.writeSync(fd, chunk, 0, 512); } catch (e) { if (e.code !== 'ENOSPC') throw e; }
fs.closeSync(fd);
let before = 0;
const errors = {};
for (let i = 0; i < 40; i++) {
  if (i === 10) before = fds();
  try { await write(); errors.none = (errors.none ?? 0) + 1; }
  catch (e) { const c = e.code ?? e.message; errors[c] = (errors[c] ?? 0) + 1; }
}
const during = fds();
const spareFds = blankFds();
fs.rmSync(filler);
for (let i = 0; i < 6; i++) await write();
const problems = spawnSync('git', ['fsck', '--full', '--strict', '--no-dangling'], { cwd: dir, encoding: 'utf8' });
const refsOk = [...heads].every(([ref, oid]) => git('rev-parse', ref).trim() === oid);
repo.close();
await repo.objects.close();
const blanks = join(dir, '.git', 'zz', 'blanks');
// Holds of the refs' old files and a blank in flight go in the pool: polled (bounded).
const listBlanks = () => (fs.existsSync(blanks) ? fs.readdirSync(blanks) : []);
for (const t0 = Date.now(); listBlanks().length > 0 && Date.now() - t0 < 5000; ) await new Promise((r) => setTimeout(r, 5));
const pack = join(dir, '.git', 'objects', 'pack');
console.log(JSON.stringify({
  errors, before, during, spareFds, fsck: problems.status, fsckOut: problems.stdout + problems.stderr, refsOk,
  blanks: listBlanks(),
  stray: fs.readdirSync(pack).filter((f) => !/^pack-[0-9a-f]{40}\\.(pack|idx)$/.test(f)),
}));
`;

describe('a full disk under the blanks', () => {
  const canMount = canMountIn('mount -t tmpfs -o size=1m tmpfs "$1"', tempDir('zz-enospc-probe-'));

  it.runIf(canMount)(
    'fails writes cleanly with ENOSPC, leaks nothing, and writes again once space is back',
    async () => {
      const seed = testSeed('enospc');
      const mnt = tempDir('zz-enospc-');
      const script = join(tempDir('zz-enospc-child-'), 'child.mjs');
      writeFileSync(script, CHILD);
      const { code, out, err } = await runInMountNs(
        'mount -t tmpfs -o size=3m tmpfs "$1"',
        mnt,
        [process.execPath, '--import', 'tsx', script, mnt, PROJECT, String(seed)],
        PROJECT,
      );
      expect(code, err).toBe(0);
      const r = JSON.parse(out.trim().split('\n').at(-1)!) as {
        errors: Record<string, number>;
        before: number;
        during: number;
        spareFds: number;
        fsck: number;
        fsckOut: string;
        refsOk: boolean;
        blanks: string[];
        stray: string[];
      };
      console.log(`enospc: ${JSON.stringify(r.errors)}`);
      expect(Object.keys(r.errors)).toEqual(['ENOSPC']);
      expect(r.during).toBe(r.before);
      expect(r.spareFds).toBeLessThanOrEqual(4);
      expect(r.fsck, r.fsckOut).toBe(0);
      expect(r.refsOk).toBe(true);
      expect(r.blanks).toEqual([]);
      expect(r.stray).toEqual([]);
    },
    60_000,
  );
});
