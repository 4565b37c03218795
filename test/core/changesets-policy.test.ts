import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { assertTreePath } from '../../src/git/ref-names.js';
import {
  AGENT,
  ALICE,
  call,
  gitRepo,
  memoryRepo,
  rejects,
  ownerGrants,
} from '../helpers/core-fixture.js';
import { fsckProblems, sh } from '../helpers/temp-repo.js';

// Hardening 11.8: one path policy, applied when a changeset is recorded (ask_answer complete),
// not only when it lands: a path through a symlink, a 300-byte component, a path 2,047
// directories deep, control characters and bidi overrides are refused with 400 before anything
// is written, and nothing reaches the tree builder deep enough to overflow its stack.

const cleanups: Array<() => void> = [];
afterEach(() => {
  while (cleanups.length) cleanups.pop()!();
});

async function setup() {
  const { repo, dir, cleanup } = await gitRepo();
  cleanups.push(cleanup);
  mkdirSync(join(dir, 'docs'));
  writeFileSync(join(dir, 'docs', 'a.md'), 'a\n');
  symlinkSync('docs', join(dir, 'link'));
  symlinkSync('/tmp', join(dir, 'outside'));
  sh(dir, 'add', '-A');
  sh(dir, 'commit', '-q', '-m', 'links');
  await call(repo, ALICE, 'lane_propose', { lane_id: 'ship', title: 'Ship' });
  await ownerGrants(repo, 'ship', { coordinators: [ALICE], maintainers: [ALICE] });
  const head = sh(dir, 'rev-parse', 'HEAD');
  const answer = async (path: string, content: string | null = 'x\n') => {
    const w = (await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' }))
      .ask;
    await call(repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
    return call(repo, AGENT, 'ask_answer', {
      lane_id: 'ship',
      ask_id: w.ask_id,
      outcome: 'complete',
      changeset: { base: head, message: 'm', files: [{ path, content }] },
    });
  };
  const changesetRefs = () => sh(dir, 'for-each-ref', 'refs/zz/changesets/');
  return { repo, dir, head, answer, changesetRefs };
}

const deep = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`).join('/') + '/f.txt';

describe('changeset path policy at ask_answer', () => {
  it('refuses a path through a symlink (or writing through one) when it is recorded', async () => {
    const env = await setup();
    for (const path of ['link/x.md', 'outside/passwd', 'link']) {
      const e = await rejects(env.answer(path), 'invalid_argument', /symlink/);
      expect(e.status).toBe(400);
    }
    // Deleting the symlink itself is a change like any other.
    await env.answer('link', null);
    expect(env.changesetRefs().split('\n')).toHaveLength(1);
  });

  it('refuses a deletion of a directory or of nothing, and a changeset that changes nothing', async () => {
    // `content: null` deletes a file. On a directory the tree builder dropped the whole
    // subtree (a model's one entry deleted every test); on a missing path, or with the base's
    // own content, the "changeset" was empty and went through review and landing as done.
    const env = await setup();
    await rejects(env.answer('docs', null), 'invalid_argument', /"docs".*it is a directory/);
    await rejects(env.answer('nope/never.md', null), 'invalid_argument', /does not exist/);
    await rejects(env.answer('docs/a.md', 'a\n'), 'invalid_argument', /changes nothing/);
    expect(env.changesetRefs()).toBe('');
    await env.answer('docs/a.md', null);
    expect(env.changesetRefs().split('\n')).toHaveLength(1);
  });

  it('refuses long components, deep paths, control characters and bidi overrides', async () => {
    const env = await setup();
    const refused = [
      'a'.repeat(256) + '.txt',
      `docs/${'é'.repeat(128)}`, // 256 bytes in UTF-8
      deep(64),
      deep(2047),
      'docs/evil\x1b]0;pwned\x07.md',
      'docs/new\nline.md',
      'docs/\u202etxt.exe',
      'docs/\u2066x\u2069.md',
      'docs/\x85next.md',
      '../x',
      '/etc/passwd',
      '.git/config',
    ];
    for (const path of refused) {
      const e = await rejects(env.answer(path), 'invalid_argument');
      expect(e.status, JSON.stringify(path).slice(0, 80)).toBe(400);
    }
    expect(env.changesetRefs()).toBe('');
    // The limits themselves are accepted, and git finds the result sound.
    await env.answer('b'.repeat(255));
    const r = await env.answer(deep(63));
    const files = sh(
      env.dir,
      'ls-tree',
      '-r',
      '--name-only',
      `refs/zz/changesets/${r.changeset_id}`,
    );
    expect(files.split('\n')).toContain(deep(63));
    expect(fsckProblems(env.dir)).toEqual([]);
  });

  it('applies the same syntax to a memory repository and to direct commits', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'ship', title: 'Ship' });
    await ownerGrants(repo, 'ship', { coordinators: [ALICE], maintainers: [ALICE] });
    const w = (await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' }))
      .ask;
    await call(repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
    await rejects(
      call(repo, AGENT, 'ask_answer', {
        lane_id: 'ship',
        ask_id: w.ask_id,
        outcome: 'complete',
        changeset: {
          base: 'a'.repeat(40),
          message: 'm',
          files: [{ path: deep(100), content: 'x' }],
        },
      }),
      'invalid_argument',
      /deeper than 64/,
    );
    const env = await setup();
    const ask = (
      await call(env.repo, ALICE, 'ask_post', {
        lane_id: 'ship',
        kind: 'submit_changeset',
        title: 'direct',
      })
    ).ask.ask_id;
    for (const path of [deep(2047), 'x'.repeat(300), 'docs/\u202e.md']) {
      await rejects(
        call(env.repo, ALICE, 'commit_changeset', {
          lane_id: 'ship',
          ask_id: ask,
          message: 'm',
          expected_head: env.head,
          files: [{ path, content: 'x' }],
        }),
        'invalid_argument',
      );
    }
    expect(sh(env.dir, 'rev-parse', 'main')).toBe(env.head);
  });
});

describe('changeset content git fsck refuses (.gitmodules, .gitattributes)', () => {
  const BAD: Array<[string, string, RegExp]> = [
    ['.gitmodules', '[submodule "a"]\n\tpath = -x\n\turl = ./a\n', /gitmodulesPath/],
    ['.gitmodules', '[submodule "a"]\n\tpath = a\n\turl = --upload-pack=id\n', /gitmodulesUrl/],
    ['.gitmodules', '[submodule "a"]\n\tpath = a\n\turl = ../../:x\n', /gitmodulesUrl/],
    ['.gitmodules', '[submodule "../x"]\n\tpath = a\n', /gitmodulesName/],
    ['.gitmodules', '[submodule "a"]\n\tupdate = !id\n', /gitmodulesUpdate/],
    ['docs/.GITMODULES', '[submodule "a"]\n\tpath = -x\n', /gitmodulesPath/],
    ['gitmod~1', '[submodule "a"]\n\turl = -x\n', /gitmodulesUrl/],
    ['.gitmodules/x', 'a file under a directory git reads as .gitmodules', /gitmodulesBlob/],
    ['.gitattributes', 'a'.repeat(2048) + ' text\n', /gitattributesLineLength/],
  ];

  it('refuses it with 422 when the changeset is recorded, and records nothing', async () => {
    const env = await setup();
    for (const [path, content, why] of BAD) {
      const e = await rejects(env.answer(path, content), 'unsafe_content', why);
      expect(e.status).toBe(422);
      expect(e.message).toContain('not allowed');
    }
    expect(env.changesetRefs()).toBe('');
    // A sound .gitmodules (and a long but readable .gitattributes) is recorded, and git agrees.
    await env.answer('.gitmodules', '[submodule "lib"]\n\tpath = lib\n\turl = ../lib.git\n');
    await env.answer('.gitattributes', 'a'.repeat(2000) + ' text\n');
    expect(env.changesetRefs().split('\n')).toHaveLength(2);
    expect(fsckProblems(env.dir)).toEqual([]);
  });

  it('refuses it in a direct commit and when landing a changeset made elsewhere', async () => {
    const env = await setup();
    const post = async () =>
      (
        await call(env.repo, ALICE, 'ask_post', {
          lane_id: 'ship',
          kind: 'submit_changeset',
          title: 'land',
        })
      ).ask.ask_id;
    const ask = await post();
    for (const [path, content, why] of BAD) {
      await rejects(
        call(env.repo, ALICE, 'commit_changeset', {
          lane_id: 'ship',
          ask_id: ask,
          message: 'm',
          expected_head: env.head,
          files: [{ path, content }],
        }),
        'unsafe_content',
        why,
      );
    }
    // A changeset ref that never went through ask_answer (fetched from a remote, or written by
    // an older zz): refused when it lands, the branch unmoved.
    const bad = execFileSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: env.dir,
      input: '[submodule "a"]\n\tpath = -x\n',
      encoding: 'utf8',
    }).trim();
    const base = sh(env.dir, 'rev-parse', 'HEAD^{tree}');
    const tree = execFileSync('git', ['mktree'], {
      cwd: env.dir,
      input: sh(env.dir, 'ls-tree', base) + `\n100644 blob ${bad}\t.gitmodules\n`,
      encoding: 'utf8',
    }).trim();
    const commit = sh(env.dir, 'commit-tree', '-p', env.head, '-m', 'elsewhere', tree);
    sh(env.dir, 'update-ref', 'refs/zz/changesets/cs-0123456789', commit);
    await rejects(
      call(env.repo, ALICE, 'commit_changeset', {
        lane_id: 'ship',
        ask_id: await post(),
        changeset_id: 'cs-0123456789',
      }),
      'unsafe_content',
      /gitmodulesPath/,
    );
    expect(sh(env.dir, 'rev-parse', 'main')).toBe(env.head);
  });

  it('refuses it when the merge onto a moved branch makes it', async () => {
    // Each side alone is sound: the branch renamed notes.txt to .gitmodules, the changeset (on
    // the commit before) edited notes.txt. git's merge carries the edit into .gitmodules.
    const env = await setup();
    writeFileSync(join(env.dir, 'notes.txt'), '[submodule "a"]\n\tpath = a\n\turl = ./a\n');
    sh(env.dir, 'add', 'notes.txt');
    sh(env.dir, 'commit', '-q', '-m', 'notes');
    const base = sh(env.dir, 'rev-parse', 'HEAD');
    sh(env.dir, 'mv', 'notes.txt', '.gitmodules');
    sh(env.dir, 'commit', '-q', '-m', 'notes are the submodules');
    const head = sh(env.dir, 'rev-parse', 'HEAD');
    const w = (
      await call(env.repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' })
    ).ask;
    await call(env.repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
    const recorded = await call(env.repo, AGENT, 'ask_answer', {
      lane_id: 'ship',
      ask_id: w.ask_id,
      outcome: 'complete',
      changeset: {
        base,
        message: 'm',
        files: [{ path: 'notes.txt', content: '[submodule "a"]\n\tpath = -x\n\turl = ./a\n' }],
      },
    });
    // Reviewed and granted: only a reviewed changeset lands by id (changesets.ts).
    const review = recorded.follow_ups[0]!.ask_id;
    await call(env.repo, ALICE, 'ask_claim', { lane_id: 'ship', ask_id: review });
    const granted = await call(env.repo, ALICE, 'ask_answer', {
      lane_id: 'ship',
      ask_id: review,
      outcome: 'grant',
    });
    const land = granted.follow_ups[0]!;
    await call(env.repo, ALICE, 'ask_claim', { lane_id: 'ship', ask_id: land.ask_id });
    await rejects(
      call(env.repo, ALICE, 'commit_changeset', {
        lane_id: 'ship',
        ask_id: land.ask_id,
        changeset_id: recorded.changeset_id,
      }),
      'unsafe_content',
      /"\.gitmodules".*gitmodulesPath/,
    );
    expect(sh(env.dir, 'rev-parse', 'main')).toBe(head);
  });

  it('refuses it in a memory repository too', async () => {
    const { repo } = await memoryRepo();
    await call(repo, ALICE, 'lane_propose', { lane_id: 'ship', title: 'Ship' });
    await ownerGrants(repo, 'ship', { coordinators: [ALICE], maintainers: [ALICE] });
    const w = (await call(repo, ALICE, 'ask_post', { lane_id: 'ship', kind: 'work', title: 'w' }))
      .ask;
    await call(repo, AGENT, 'ask_claim', { lane_id: 'ship', ask_id: w.ask_id });
    const [path, content, why] = BAD[0]!;
    await rejects(
      call(repo, AGENT, 'ask_answer', {
        lane_id: 'ship',
        ask_id: w.ask_id,
        outcome: 'complete',
        changeset: { base: 'a'.repeat(40), message: 'm', files: [{ path, content }] },
      }),
      'unsafe_content',
      why,
    );
  });
});

describe('assertTreePath', () => {
  it('accepts ordinary paths and refuses every class of hostile one', () => {
    for (const ok of ['a', 'src/x.ts', 'with space/ü.txt', 'a'.repeat(255), deep(63)]) {
      expect(assertTreePath(ok)).toBe(ok);
    }
    for (const bad of [
      '',
      'a//b',
      'a/',
      './a',
      'a/..',
      '.git',
      'x/.GIT/y',
      'git~1/x',
      '.git\u200c',
      '-rf',
      'a\\b',
      'C:/x',
      'a\0b',
      'a\tb',
      'a\x7fb',
      'a\u202eb',
      'a\u200fb',
      'a'.repeat(256),
      deep(64),
      'x/'.repeat(2100) + 'y',
    ]) {
      expect(() => assertTreePath(bad), JSON.stringify(bad).slice(0, 60)).toThrow();
    }
  });
});
