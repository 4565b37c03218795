import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  commitsBetween,
  fetchZzRefs,
  parsePushPorcelain,
  pushZzRefs,
  RefCasError,
  RefStore,
  TransportError,
  updateRefsAtomic,
} from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// The git primitives of sync against a real bare remote: what git really prints, not what we
// think it prints.

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup() {
  const remote = mkdtempSync(join(tmpdir(), 'zz-remote-'));
  dirs.push(remote);
  sh(remote, 'init', '-q', '--bare');
  const a = makeRepo('zz-a-');
  const b = makeRepo('zz-b-');
  dirs.push(a.dir, b.dir);
  for (const d of [a.dir, b.dir]) sh(d, 'remote', 'add', 'origin', remote);
  return { remote, a: a.dir, b: b.dir };
}

/** A commit object on top of `parent` (or a root), made with plumbing. */
function mkCommit(dir: string, msg: string, parent?: string): string {
  const tree = sh(dir, 'mktree');
  const args = ['commit-tree', tree, '-m', msg];
  if (parent) args.push('-p', parent);
  return sh(dir, ...args);
}

const gd = (d: string) => join(d, '.git');

describe('sync transport on real git', () => {
  it('pushes atomically with leases, fetches into refs/zz-remotes, prunes deleted refs', async () => {
    const { remote, a, b } = setup();
    const c1 = mkCommit(a, 'one');
    const c2 = mkCommit(a, 'two');
    expect(
      await pushZzRefs(gd(a), 'origin', [
        { ref: 'refs/zz/lanes/x', expected: null, next: c1 },
        { ref: 'refs/zz/config', expected: null, next: c2 },
      ]),
    ).toEqual({ kind: 'ok' });
    await fetchZzRefs(gd(b), 'origin');
    const refs = new RefStore(gd(b));
    expect(await refs.read('refs/zz-remotes/origin/lanes/x')).toBe(c1);
    expect(await refs.read('refs/zz-remotes/origin/config')).toBe(c2);
    expect(sh(b, 'tag')).toBe('');
    // A ref deleted on the remote disappears from the tracking namespace on the next fetch.
    sh(remote, 'update-ref', '-d', 'refs/zz/lanes/x');
    await fetchZzRefs(gd(b), 'origin');
    expect(await refs.read('refs/zz-remotes/origin/lanes/x')).toBeNull();
    expect(await refs.read('refs/zz-remotes/origin/config')).toBe(c2);
  });

  it('a stale lease on one ref rejects the whole push (stale info), nothing moves', async () => {
    const { remote, a, b } = setup();
    const base = mkCommit(a, 'base');
    await pushZzRefs(gd(a), 'origin', [{ ref: 'refs/zz/lanes/x', expected: null, next: base }]);
    await fetchZzRefs(gd(b), 'origin');
    // b moves lanes/x on the remote first.
    const bNext = mkCommit(b, 'b', base);
    expect(
      await pushZzRefs(gd(b), 'origin', [{ ref: 'refs/zz/lanes/x', expected: base, next: bNext }]),
    ).toEqual({ kind: 'ok' });
    // a pushes two refs, one with a lease that is now stale.
    const aNext = mkCommit(a, 'a', base);
    const other = mkCommit(a, 'other');
    const out = await pushZzRefs(gd(a), 'origin', [
      { ref: 'refs/zz/lanes/x', expected: base, next: aNext },
      { ref: 'refs/zz/lanes/y', expected: null, next: other },
    ]);
    expect(out.kind).toBe('race');
    if (out.kind === 'race') expect(out.reason).toBe('stale_info');
    expect(sh(remote, 'for-each-ref', '--format=%(refname)', 'refs/zz/')).toBe('refs/zz/lanes/x');
    expect(sh(remote, 'rev-parse', 'refs/zz/lanes/x')).toBe(bNext);
  });

  it('pushes many refs in batches (20,000 on one command line was E2BIG); a failed batch ends the round', async () => {
    const { remote, a } = setup();
    const c = mkCommit(a, 'one');
    const many = Array.from({ length: 25 }, (_, i) => ({
      ref: `refs/zz/lanes/l${String(i).padStart(2, '0')}`,
      expected: null,
      next: c,
    }));
    expect(await pushZzRefs(gd(a), 'origin', many, { batch: 10 })).toEqual({ kind: 'ok' });
    const onRemote = () =>
      sh(remote, 'for-each-ref', '--format=%(refname)', 'refs/zz/').split('\n');
    expect(onRemote()).toHaveLength(25);
    // Batches of 10: the first lands, the second holds a stale lease and stops the round.
    const d = mkCommit(a, 'two');
    const more = Array.from({ length: 25 }, (_, i) => ({
      ref: `refs/zz/lanes/m${String(i).padStart(2, '0')}`,
      expected: null,
      next: d,
    }));
    more[12] = { ref: 'refs/zz/lanes/l00', expected: null, next: d }; // exists: a race
    const out = await pushZzRefs(gd(a), 'origin', more, { batch: 10 });
    expect(out.kind).toBe('race');
    expect(onRemote().filter((r) => r.startsWith('refs/zz/lanes/m'))).toHaveLength(10);
    expect(sh(remote, 'rev-parse', 'refs/zz/lanes/l00')).toBe(c);
  });

  it('must-not-exist lease: creating a ref someone else created is a race', async () => {
    const { a, b } = setup();
    const x = mkCommit(a, 'x');
    const y = mkCommit(b, 'y');
    expect(
      await pushZzRefs(gd(a), 'origin', [{ ref: 'refs/zz/config', expected: null, next: x }]),
    ).toEqual({ kind: 'ok' });
    const out = await pushZzRefs(gd(b), 'origin', [
      { ref: 'refs/zz/config', expected: null, next: y },
    ]);
    expect(out.kind).toBe('race');
  });

  it('a hidden ref on the server is fatal, an unreachable remote is offline', async () => {
    const { remote, a } = setup();
    sh(remote, 'config', 'receive.hideRefs', 'refs/zz/secret');
    const x = mkCommit(a, 'x');
    const out = await pushZzRefs(gd(a), 'origin', [
      { ref: 'refs/zz/secret/x', expected: null, next: x },
    ]);
    expect(out).toMatchObject({ kind: 'fatal', reason: 'hidden_ref' });

    sh(a, 'remote', 'add', 'gone', join(tmpdir(), 'zz-no-such-remote-' + process.pid));
    const off = await pushZzRefs(gd(a), 'gone', [
      { ref: 'refs/zz/config', expected: null, next: x },
    ]);
    expect(off.kind).toBe('offline');
    const err = await fetchZzRefs(gd(a), 'gone').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TransportError);
    expect((err as TransportError).failure.kind).toBe('offline');
    expect((err as TransportError).exitCode).toBe(7);
  });

  it('parses the rarer porcelain outcomes', () => {
    const line = (flag: string, ref: string, summary: string) =>
      `To /r\n${flag}\tabc:${ref}\t${summary}\nDone\n`;
    expect(
      parsePushPorcelain(line('!', 'refs/zz/a', '[rejected] (fetch first)'), '', 1),
    ).toMatchObject({ kind: 'race', reason: 'fetch_first', refs: ['refs/zz/a'] });
    expect(
      parsePushPorcelain(
        line(
          '!',
          'refs/zz/a',
          "[remote rejected] (cannot lock ref 'refs/zz/a': is at 1 but expected 2)",
        ),
        '',
        1,
      ),
    ).toMatchObject({ kind: 'race', reason: 'remote_rejected' });
    expect(
      parsePushPorcelain(
        line('!', 'refs/zz/a', '[remote rejected] (pre-receive hook declined)'),
        '',
        1,
      ),
    ).toMatchObject({ kind: 'fatal', reason: 'declined' });
    // The hook's own words (on stderr as "remote: …") are what says why, and what to do.
    expect(
      parsePushPorcelain(
        line('!', 'refs/zz/a', '[remote rejected] (pre-receive hook declined)'),
        "remote: only refs/heads/* may be pushed here\nremote: \nerror: failed to push some refs to '/r'\n",
        1,
      ),
    ).toEqual({
      kind: 'fatal',
      reason: 'declined',
      message:
        'refs/zz/a: [remote rejected] (pre-receive hook declined); the remote said: only refs/heads/* may be pushed here',
    });
    expect(
      parsePushPorcelain(
        '',
        "fatal: unable to access 'https://x/': Could not resolve host: x",
        128,
      ),
    ).toMatchObject({ kind: 'offline' });
    expect(
      parsePushPorcelain(
        '',
        'remote: Permission to o/r.git denied to bob.\nfatal: unable to access',
        128,
      ),
    ).toMatchObject({ kind: 'fatal', reason: 'permission' });
  });

  it('moves several refs in one transaction with old values, or none', async () => {
    const { a } = setup();
    const c1 = mkCommit(a, 'one');
    const c2 = mkCommit(a, 'two', c1);
    const refs = new RefStore(gd(a));
    await updateRefsAtomic(gd(a), [
      { ref: 'refs/zz/lanes/p', old: null, new: c1 },
      { ref: 'refs/zz/lanes/q', old: null, new: c1 },
    ]);
    const err = await updateRefsAtomic(gd(a), [
      { ref: 'refs/zz/lanes/p', old: c1, new: c2 },
      { ref: 'refs/zz/lanes/q', old: c2, new: c2 }, // wrong old value
    ]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefCasError);
    expect(await refs.read('refs/zz/lanes/p')).toBe(c1);
    // Git's lock protocol is shared: a RefStore write holding no lock, then update-ref.
    await refs.cas('refs/zz/lanes/q', c1, c2);
    await updateRefsAtomic(gd(a), [
      { ref: 'refs/zz/lanes/p', old: c1, new: c2 },
      { ref: 'refs/zz/lanes/q', old: c2, new: null },
    ]);
    expect(await refs.read('refs/zz/lanes/p')).toBe(c2);
    expect(await refs.read('refs/zz/lanes/q')).toBeNull();
    // A lock git or RefStore would take blocks the transaction.
    execFileSync('touch', [join(gd(a), 'refs/zz/lanes/p.lock')]);
    const locked = await updateRefsAtomic(gd(a), [
      { ref: 'refs/zz/lanes/p', old: c2, new: c1 },
    ]).catch((e: unknown) => e);
    expect((locked as { code?: string }).code).toBe('ref_locked');
    expect(await refs.read('refs/zz/lanes/p')).toBe(c2);
  });

  it('lists the commits between tips, parents first', async () => {
    const { a } = setup();
    const c1 = mkCommit(a, 'one');
    const c2 = mkCommit(a, 'two', c1);
    const c3 = mkCommit(a, 'three', c2);
    expect((await commitsBetween(gd(a), [c3], [c1])).map((c) => c.oid)).toEqual([c2, c3]);
    expect((await commitsBetween(gd(a), [c3], [])).map((c) => c.parents)).toEqual([[], [c1], [c2]]);
  });
});
