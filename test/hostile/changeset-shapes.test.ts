import { afterEach, describe, expect, it } from 'vitest';
import {
  AGENT,
  ALICE,
  call,
  gitRepo,
  memoryRepo,
  rejects,
  ownerGrants,
} from '../helpers/core-fixture.js';
import { sh } from '../helpers/temp-repo.js';
import type { ZzRepo } from '../../src/core/index.js';

// Hardening 11.8, found by the audit: a changeset writing both `a` (a file) and `a/b` was
// recorded by ask_answer with `a/b` silently dropped from its tree — the reviewer saw one file,
// the submitter's other file was gone. The rule a direct commit already obeyed ("written as a
// file in the same commit") now holds wherever a set of changes enters, in either order.

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function answerWith(repo: ZzRepo, base: string, files: unknown[]) {
  const w = (await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' }))
    .ask;
  await call(repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
  return call(repo, AGENT, 'ask_answer', {
    lane_id: 'ship',
    ask_id: w.ask_id,
    outcome: 'complete',
    changeset: { base, message: 'm', files },
  });
}

describe('a changeset never loses one of its own files', () => {
  it('refuses a file and a path under it in one changeset, in either order', async () => {
    const { repo, dir, cleanup } = await gitRepo();
    cleanups.push(cleanup);
    await call(repo, ALICE, 'lane_propose', { lane_id: 'ship', title: 'Ship' });
    await ownerGrants(repo, 'ship', { coordinators: [ALICE], maintainers: [ALICE] });
    const head = sh(dir, 'rev-parse', 'HEAD');
    const shapes = [
      [
        { path: 'a', content: 'x' },
        { path: 'a/b', content: 'y' },
      ],
      [
        { path: 'd/e/f.txt', content: 'y' },
        { path: 'd', content: 'x' },
      ],
    ];
    for (const files of shapes) {
      const e = await rejects(
        answerWith(repo, head, files),
        'invalid_argument',
        /is written as a file in the same changeset/,
      );
      expect(e.status).toBe(400);
    }
    expect(sh(dir, 'for-each-ref', 'refs/zz/changesets/')).toBe('');
    // A direct commit obeys the same rule.
    const direct = (
      await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'submit_changeset', title: 'd' })
    ).ask.ask_id;
    await rejects(
      call(repo, ALICE, 'commit_changeset', {
        lane_id: 'ship',
        ask_id: direct,
        message: 'm',
        expected_head: head,
        files: shapes[1],
      }),
      'invalid_argument',
      /"d" is written as a file in the same commit/,
    );
    expect(sh(dir, 'rev-parse', 'main')).toBe(head);
    // A file turned into a directory by deleting it in the same changeset is a change like any
    // other (README.md exists at the base); every written file is in the recorded tree.
    const r = await answerWith(repo, head, [
      { path: 'README.md', content: null },
      { path: 'README.md/x', content: 'x' },
      { path: 'c', content: 'c' },
      { path: 'c2/d', content: 'd' },
    ]);
    const tree = sh(dir, 'ls-tree', '-r', '--name-only', `refs/zz/changesets/${r.changeset_id}`);
    expect(tree.split('\n')).toEqual(expect.arrayContaining(['README.md/x', 'c', 'c2/d']));
  });

  it('holds in a memory repository too (syntax only, no base tree)', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'ship', title: 'Ship' });
    await ownerGrants(repo, 'ship', { coordinators: [ALICE], maintainers: [ALICE] });
    await rejects(
      answerWith(repo, 'a'.repeat(40), [
        { path: 'a/b', content: 'y' },
        { path: 'a', content: 'x' },
      ]),
      'invalid_argument',
      /written as a file/,
    );
  });
});
