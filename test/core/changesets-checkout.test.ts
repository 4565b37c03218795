import { existsSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejects, shipLanes } from '../helpers/core-fixture.js';

// commit_changeset and the checkout of `main` in the served worktree: local changes in the
// way or kept, a directory swapped for a file, another branch checked out, a branch moved
// before the CAS, a locked index; every test checks what git itself sees afterwards (refs,
// trees, the checkout, fsck). The landing itself: changesets.test.ts.

const setup = shipLanes();

describe('commit_changeset and the checkout', () => {
  it('refuses, moving nothing, when local changes are in the way', async () => {
    const env = await setup();
    const h0 = env.head();
    env.userCommit({ 'notes.txt': 'notes\n' });
    const h1 = env.head();
    const { csId, askId } = await env.changeset([
      { path: 'README.md', content: 'new readme\n' },
      { path: 'added.txt', content: 'added\n' },
    ]);
    expect(h0).not.toBe(h1);
    const attempt = async (why: string, code = 'dirty_worktree') => {
      const e = await rejects(env.commit({ ask_id: askId, changeset_id: csId }), code);
      expect(env.head(), why).toBe(h1);
      return e;
    };
    // A modified tracked file the commit changes.
    env.write('README.md', 'my local edit\n');
    const e = await attempt('unstaged');
    expect((e.details as { paths: string[] }).paths).toEqual(['README.md']);
    expect(e.message).toMatch(/README\.md/);
    expect(env.read('README.md')).toBe('my local edit\n');
    // Staged.
    env.git('add', 'README.md');
    await attempt('staged');
    env.git('reset', '-q', '--hard');
    // An untracked file where the commit adds one.
    env.write('added.txt', 'mine\n');
    expect((await attempt('untracked')).details).toMatchObject({ paths: ['added.txt'] });
    expect(env.read('added.txt')).toBe('mine\n');
    // An ignored one: read-tree alone would overwrite it silently.
    writeFileSync(join(env.dir, '.git', 'info', 'exclude'), 'added.txt\n');
    expect(env.status()).toBe('');
    expect((await attempt('ignored')).details).toMatchObject({ paths: ['added.txt'] });
    expect(env.read('added.txt')).toBe('mine\n');
    unlinkSync(join(env.dir, 'added.txt'));
    // Clean now: it lands.
    const r = await env.commit({ ask_id: askId, changeset_id: csId });
    expect(r.worktree_updated).toBe(true);
    expect(env.read('README.md')).toBe('new readme\n');
    expect(env.status()).toBe('');
    env.assertFsck();
  });

  it('keeps local changes the commit does not touch', async () => {
    const env = await setup();
    env.userCommit({ 'notes.txt': 'notes\n', 'lib/util.txt': 'util\n' });
    const { csId, askId } = await env.changeset([
      { path: 'lib/new.txt', content: 'new\n' },
      { path: 'README.md', content: 'readme v2\n' },
    ]);
    env.write('notes.txt', 'notes, edited locally\n');
    env.write('scratch/todo.txt', 'untracked\n');
    env.write('lib/util.txt', 'util, staged\n');
    env.git('add', 'lib/util.txt');
    const r = await env.commit({ ask_id: askId, changeset_id: csId });
    expect(r.fast_forward).toBe(true);
    expect(env.read('lib/new.txt')).toBe('new\n');
    expect(env.read('README.md')).toBe('readme v2\n');
    expect(env.read('notes.txt')).toBe('notes, edited locally\n');
    expect(env.read('scratch/todo.txt')).toBe('untracked\n');
    expect(env.read('lib/util.txt')).toBe('util, staged\n');
    expect(env.status().split('\n')).toEqual([
      'M  lib/util.txt',
      ' M notes.txt',
      '?? scratch/todo.txt',
    ]);
    env.assertFsck();
  });

  it('swaps a directory for a file (and back) in the checkout', async () => {
    const env = await setup();
    env.userCommit({ 'd/x.txt': 'x\n', 'f.txt': 'f\n' });
    const askId = await env.submitAsk();
    const h1 = env.head();
    // Whole files: a file becomes a directory when the same commit deletes it...
    const r = await env.commit({
      ask_id: askId,
      message: 'file to dir',
      expected_head: h1,
      files: [
        { path: 'f.txt', content: null },
        { path: 'f.txt/inside.txt', content: 'now a dir\n' },
      ],
    });
    expect(r.worktree_updated).toBe(true);
    expect(env.read('f.txt/inside.txt')).toBe('now a dir\n');
    // ...but a directory is not overwritten by a file in one call.
    await rejects(
      env.commit({
        ask_id: askId,
        message: 'dir to file',
        expected_head: r.commit,
        files: [{ path: 'd', content: 'file\n' }],
      }),
      'invalid_argument',
      /directory/,
    );
    // A changeset that deletes the directory's files and writes the file lands.
    const { csId, askId: submit } = await env.changeset([
      { path: 'd/x.txt', content: null },
      { path: 'd', content: 'now a file\n' },
    ]);
    expect(
      env.git('ls-tree', '-r', '--name-only', `refs/zz/changesets/${csId}`).split('\n'),
    ).toEqual(['README.md', 'd', 'f.txt/inside.txt']);
    await env.commit({ ask_id: submit, changeset_id: csId });
    expect(env.read('d')).toBe('now a file\n');
    expect(env.status()).toBe('');
  });

  it('leaves the checkout alone when another branch is checked out', async () => {
    const env = await setup();
    const { csId, askId } = await env.changeset([{ path: 'x.txt', content: 'x\n' }]);
    env.git('checkout', '-q', '-b', 'topic');
    const r = await env.commit({ ask_id: askId, changeset_id: csId });
    expect(r.worktree_updated).toBe(false);
    expect(env.git('rev-parse', 'main')).toBe(r.commit);
    expect(existsSync(join(env.dir, 'x.txt'))).toBe(false);
    expect(env.status()).toBe('');
  });

  it('rolls the checkout back when another process moves the branch before the CAS', async () => {
    const env = await setup();
    const h0 = env.head();
    const { csId, askId } = await env.changeset([
      { path: 'README.md', content: 'agent readme\n' },
      { path: 'new.txt', content: 'new\n' },
    ]);
    // Another process commits to main between our worktree update and our CAS.
    const elsewhere = env.git('commit-tree', `${h0}^{tree}`, '-p', h0, '-m', 'elsewhere');
    const refs = env.repo.git!.refs;
    const cas = refs.cas.bind(refs);
    refs.cas = async (ref, expected, next) => {
      if (ref === 'refs/heads/main') {
        // The worktree was updated first...
        expect(env.read('new.txt')).toBe('new\n');
        env.git('update-ref', 'refs/heads/main', elsewhere);
      }
      return cas(ref, expected, next);
    };
    try {
      const e = await rejects(
        env.commit({ ask_id: askId, changeset_id: csId }),
        'conflict',
        /moved/,
      );
      expect((e.details as { current_head: string }).current_head).toBe(elsewhere);
    } finally {
      refs.cas = cas;
    }
    // ...and is back at what it was: the other process's head, with nothing of ours in it.
    expect(env.head()).toBe(elsewhere);
    expect(existsSync(join(env.dir, 'new.txt'))).toBe(false);
    expect(env.read('README.md')).toBe('# demo\n\nA demo repository.\n');
    expect(env.status()).toBe('');
    // The Ask is untouched; landing again now merges onto the new head.
    const r = await env.commit({ ask_id: askId, changeset_id: csId });
    expect(r).toMatchObject({ merged: true, previous_head: elsewhere });
    expect(env.status()).toBe('');
    env.assertFsck();
  });

  it('a locked index (git running in the checkout) moves nothing', async () => {
    const env = await setup();
    const h0 = env.head();
    const { csId, askId } = await env.changeset([{ path: 'x.txt', content: 'x\n' }]);
    const lock = join(env.dir, '.git', 'index.lock');
    writeFileSync(lock, '');
    try {
      await rejects(env.commit({ ask_id: askId, changeset_id: csId }), 'ref_locked', /index/);
    } finally {
      unlinkSync(lock);
    }
    expect(env.head()).toBe(h0);
    expect(existsSync(join(env.dir, 'x.txt'))).toBe(false);
    await env.commit({ ask_id: askId, changeset_id: csId });
    expect(env.read('x.txt')).toBe('x\n');
  });
});
