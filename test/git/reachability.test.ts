import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { droppedCommits } from '../../src/git/index.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

// droppedCommits errs towards keeping: only a commit this repository holds and no ref reaches
// is dropped; a missing object, a non-commit, a shallow clone or a history with a hole in it
// answers "not dropped" or "not known", never an error and never a guess.

const gitdir = (dir: string) => join(dir, '.git');

function commit(dir: string, name: string): string {
  writeFileSync(join(dir, name), `${name}\n`);
  sh(dir, 'add', name);
  sh(dir, 'commit', '-q', '-m', name);
  return sh(dir, 'rev-parse', 'HEAD');
}

describe('droppedCommits', () => {
  it('names held commits no ref reaches, and only those', async () => {
    const { dir } = makeRepo('zz-reach-');
    const kept = commit(dir, 'a');
    sh(dir, 'checkout', '-q', '-b', 'side');
    const gone1 = commit(dir, 'b');
    const gone2 = commit(dir, 'c');
    sh(dir, 'checkout', '-q', 'main');
    sh(dir, 'branch', '-q', '-D', 'side');
    const blob = sh(dir, 'rev-parse', 'HEAD:a');
    const missing = 'f'.repeat(40);
    const r = await droppedCommits(gitdir(dir), [kept, gone2, blob, missing, 'not-an-oid']);
    expect(r.dropped).toEqual(new Set([gone2]));
    // gone1 is unreachable too, but was not asked about.
    expect(r.dropped!.has(gone1)).toBe(false);
    expect((await droppedCommits(gitdir(dir), [])).dropped).toEqual(new Set());
  });

  it('knows nothing in a shallow clone, nor past a missing ancestor', async () => {
    const { dir } = makeRepo('zz-reach-shallow-');
    const old = commit(dir, 'a');
    commit(dir, 'b');
    const clone = join(makeRepo('zz-reach-clone-').dir, 'c');
    sh(dir, 'clone', '-q', '--no-local', dir, clone);
    sh(clone, 'fetch', '-q', '--depth=1', 'origin', 'main');
    expect(await droppedCommits(gitdir(clone), [old])).toEqual({
      dropped: null,
      reason: 'shallow',
    });

    // A commit held alone: its parent is not in this repository (as after fetching a single
    // commit by id from a partial source).
    const tree = sh(dir, 'rev-parse', 'HEAD^{tree}');
    const body = join(dir, '.git', 'orphan-commit');
    writeFileSync(
      body,
      `tree ${tree}\nparent ${'e'.repeat(40)}\nauthor A <a@example.com> 0 +0000\n` +
        `committer A <a@example.com> 0 +0000\n\norphan\n`,
    );
    const orphan = sh(dir, 'hash-object', '-t', 'commit', '-w', body);
    expect(await droppedCommits(gitdir(dir), [orphan])).toEqual({
      dropped: null,
      reason: 'incomplete',
    });
  });
});
