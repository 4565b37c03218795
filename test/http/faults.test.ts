import { spawnSync } from 'node:child_process';
import fs, { promises as fsp } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { laneGet } from '../../src/core/index.js';
import { knownError, ZzError } from '../../src/errors.js';
import { errorText } from '../../src/mcp/index.js';
import { ensureBuilt, ZZ_MAIN } from '../e2e/zz-process.js';
import { appFixture } from '../helpers/app-fixture.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { fsckProblems } from '../helpers/temp-repo.js';

// Faults of the machine are named, not hidden: a full disk → 507 insufficient_storage, a
// read-only repository → 503 read_only, each with the path; the CLI prints one line. The HTTP
// cases inject the fault (every file opened for writing under the repository's .git fails with
// the errno, as the kernel would answer); the last case, when the sandbox allows user and mount
// namespaces, runs the CLI against a really read-only bind mount and a really full tmpfs.

const OWNER = 'owner@example.com';

const restores: Array<() => void> = [];
afterEach(() => {
  for (const r of restores.splice(0).reverse()) r();
});

/** From now on, opening a file for writing under `dir` fails with `code`. */
function injectWriteFault(dir: string, code: 'ENOSPC' | 'EROFS' | 'EDQUOT' | 'EACCES'): void {
  const fail = (path: unknown, flags: unknown) => {
    const p = String(path);
    const writing = typeof flags === 'string' ? /[wax+]/.test(flags) : typeof flags === 'number';
    if (writing && p.startsWith(dir)) {
      throw Object.assign(new Error(`${code}: injected fault, open '${p}'`), {
        code,
        errno: -1,
        syscall: 'open',
        path: p,
      });
    }
  };
  // A write to a file opened before the fault fails too, as the kernel's would: the write
  // path writes into files made ahead of it (git/blank-files.ts), opened long before.
  const failFd = (fd: number) => {
    let p: string;
    try {
      p = fs.readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return; // not Linux: the opens above are what is injected
    }
    fail(p, 'w');
  };
  const { open } = fsp;
  const { openSync, writeSync, writevSync, open: openCb } = fs;
  fsp.open = (async (path: fs.PathLike, flags?: string | number, mode?: fs.Mode) => {
    fail(path, flags);
    return open(path, flags, mode);
  }) as typeof fsp.open;
  fs.openSync = ((path: fs.PathLike, flags?: fs.OpenMode, mode?: fs.Mode | null) => {
    fail(path, flags);
    return openSync(path, flags ?? 'r', mode);
  }) as typeof fs.openSync;
  fs.open = ((
    path: fs.PathLike,
    flags: fs.OpenMode,
    mode: fs.Mode,
    cb: (...a: unknown[]) => void,
  ) => {
    try {
      fail(path, flags);
    } catch (e) {
      process.nextTick(() => cb(e));
      return;
    }
    openCb(path, flags, mode, cb as never);
  }) as typeof fs.open;
  fs.writeSync = ((fd: number, ...rest: unknown[]) => {
    failFd(fd);
    return (writeSync as (...a: unknown[]) => number)(fd, ...rest);
  }) as typeof fs.writeSync;
  fs.writevSync = ((fd: number, ...rest: unknown[]) => {
    failFd(fd);
    return (writevSync as (...a: unknown[]) => number)(fd, ...rest);
  }) as typeof fs.writevSync;
  // Named imports of node:fs (import { openSync } from 'node:fs') see the patched function.
  syncBuiltinESMExports();
  restores.push(() => {
    fsp.open = open;
    Object.assign(fs, { openSync, writeSync, writevSync, open: openCb });
    syncBuiltinESMExports();
  });
}

async function setup() {
  const fx = await appFixture('local/demo', OWNER);
  restores.push(() => fx.repo.close());
  const token = await fx.token(OWNER);
  const call = (tool: string, body: unknown) => fx.tool(tool, body, token);
  return { dir: fx.dir, repo: fx.repo, call, logs: fx.logs };
}

describe('machine faults over HTTP', () => {
  for (const [errno, status, code] of [
    ['ENOSPC', 507, 'insufficient_storage'],
    ['EDQUOT', 507, 'insufficient_storage'],
    ['EROFS', 503, 'read_only'],
    ['EACCES', 503, 'read_only'],
  ] as const) {
    it(`${errno} on a write → ${status} ${code} with the path; acknowledged data stays`, async () => {
      const { dir, repo, call, logs } = await setup();
      const before = await call('lane_propose', { lane_id: 'kept', title: 'Acknowledged' });
      expect(before.status).toBe(200);
      injectWriteFault(join(dir, '.git'), errno);
      const r = await call('lane_propose', { lane_id: 'lost', title: 'Refused' });
      expect(r.status).toBe(status);
      expect(r.json.code).toBe(code);
      expect(r.json.details.path).toContain(join(dir, '.git'));
      expect(r.json.details.errno).toBe(errno);
      expect(r.json.error).not.toMatch(/\n|at .*\.ts/);
      expect(logs.some((l) => l.includes(code))).toBe(true);
      // Reads still work while the fault lasts, and show what was acknowledged.
      const read = await call('lane_get', { lane_id: 'kept' });
      expect(read.status).toBe(200);
      expect(read.json.result.lane.title).toBe('Acknowledged');
      restores.pop()!();
      // Nothing half-written: the refused Lane does not exist, the repository is sound, and
      // writing works again once the disk has room.
      expect((await call('lane_get', { lane_id: 'lost' })).status).toBe(404);
      expect(fsckProblems(dir)).toEqual([]);
      expect((await call('lane_propose', { lane_id: 'lost', title: 'Again' })).status).toBe(200);
      expect((await laneGet(repo, { actor: OWNER }, { lane_id: 'kept' })).lane.title).toBe(
        'Acknowledged',
      );
    });
  }

  it('a corrupt tokens.json is a 412 naming the file, not a crash; fixing it heals', async () => {
    const { repo, call } = await setup();
    const file = join(repo.git!.gitdir, 'zz', 'tokens.json');
    const good = fs.readFileSync(file, 'utf8');
    for (const bad of ['{oops', '{"version":1,"tokens":[{"hash":1}]}']) {
      fs.writeFileSync(file, bad);
      const r = await call('lane_list', {});
      expect(r.status, bad).toBe(412);
      expect(r.json.code).toBe('precondition_failed');
      expect(r.json.error).toContain(file);
    }
    fs.writeFileSync(file, good);
    expect((await call('lane_list', {})).status).toBe(200);
  });

  it('tells an MCP model what a machine fault means', () => {
    const text = errorText(
      knownError(new ZzError('git_failed', 'x: No space left on device'))!,
      'lane_propose',
    );
    expect(text).toMatch(/^Error insufficient_storage: no space left/);
    expect(text).toMatch(/free space/);
  });

  it('names faults reported by a child git on stderr too', () => {
    const git = new ZzError('git_failed', 'git update-ref failed', {
      stderr: "fatal: Unable to create '/r/.git/refs/zz/lanes/x.lock': Read-only file system",
    });
    expect(knownError(git)).toMatchObject({
      code: 'read_only',
      details: { path: '/r/.git/refs/zz/lanes/x.lock', errno: 'EROFS' },
    });
    const full = new ZzError('git_failed', 'git gc failed: error: No space left on device');
    expect(knownError(full, '/r/.git')).toMatchObject({
      code: 'insufficient_storage',
      details: { path: '/r/.git' },
    });
    // Anything else stays what it was: a bug is still a bug.
    expect(knownError(new Error('boom'))).toBeNull();
    expect(knownError(new ZzError('git_failed', 'git x failed: bad object'))?.code).toBe(
      'git_failed',
    );
  });
});

describe('machine faults in the CLI', () => {
  it('prints one line, never a stack, for an injected full disk', async () => {
    const { dir } = await setup();
    const env = cliEnv();
    injectWriteFault(join(dir, '.git'), 'ENOSPC');
    const r = await zz(dir, env, 'lane', 'propose', '--lane-id', 'x', '--title', 'X');
    expect(r.code).toBe(7);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^zz: no space left on the device holding .*\.git.* \(ENOSPC\)/);
  });

  // Real faults need a private mount namespace (unshare -rm: user + mount namespaces, no root
  // on the host). Where the sandbox forbids them this case says so and checks nothing.
  const canUnshare = spawnSync('unshare', ['-rm', 'true']).status === 0;
  it.runIf(canUnshare)(
    'real read-only bind mount and real full tmpfs: one line, exit 7, data kept',
    async () => {
      const { dir, call } = await setup();
      expect((await call('lane_propose', { lane_id: 'kept', title: 'Kept' })).status).toBe(200);
      const env = cliEnv();
      // The built zz: through tsx, from the sources, each start cost ~2.3 s of CPU against ~1 s.
      ensureBuilt();
      const zzIn = (script: string) =>
        spawnSync('unshare', ['-rm', 'sh', '-ec', script], {
          cwd: dir,
          env: { ...env, ZZ_MAIN, ZZ_DIR: dir },
          encoding: 'utf8',
          timeout: 60_000,
        });
      const propose = `node "$ZZ_MAIN" lane propose --lane-id new --title New`;
      const ro = zzIn(`mount --bind -o ro "$ZZ_DIR" "$ZZ_DIR"; ${propose}`);
      expect(ro.status, ro.stderr).toBe(7);
      expect(ro.stderr.trim().split('\n')).toHaveLength(1);
      expect(ro.stderr).toMatch(
        /^zz: .*\.git.* cannot be written \(EROFS: read-only file system\)/,
      );

      // A full disk: the objects directory on a 1 MiB tmpfs filled to the last byte.
      const objects = join(dir, '.git', 'objects');
      const copy = tempDir('zz-objects-');
      fs.cpSync(objects, copy, { recursive: true });
      const full = zzIn(
        [
          `mount -t tmpfs -o size=1m tmpfs "${objects}"`,
          `cp -a "${copy}/." "${objects}/"`,
          `dd if=/dev/zero of="${objects}/fill" bs=64k 2>/dev/null || true`,
          `dd if=/dev/zero of="${objects}/fill2" bs=1 2>/dev/null || true`,
          propose,
        ].join('\n'),
      );
      expect(full.status, full.stderr).toBe(7);
      expect(full.stderr.trim().split('\n')).toHaveLength(1);
      expect(full.stderr).toMatch(/^zz: no space left on the device holding .*\(ENOSPC\)/);

      // Outside the namespaces nothing changed: the acknowledged Lane is there, the refused one
      // is not, and the repository is sound.
      expect((await call('lane_get', { lane_id: 'kept' })).status).toBe(200);
      expect((await call('lane_get', { lane_id: 'new' })).status).toBe(404);
      expect(fsckProblems(dir)).toEqual([]);
    },
  );
});
