import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';

// `zz lane events --follow` prints events as they happen until Ctrl-C; `zz ladder search` in
// a repository without a Ladder says how to build one (issue 13.11).

async function until(what: () => boolean, label: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!what()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('zz lane events --follow', () => {
  it('prints each new event as it happens and stops on Ctrl-C', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      await zz(dir, env, 'lane', 'propose', '--lane-id', 'x', '--title', 'X');
      let stdout = '';
      let stderr = '';
      let ctrlC!: () => void;
      const stopSignal = new Promise<void>((r) => (ctrlC = r));
      const following = run(['lane', 'events', '--lane-id', 'x', '--follow'], {
        stdout: (s) => (stdout += s),
        stderr: (s) => (stderr += s),
        env,
        cwd: dir,
        isTTY: false,
        stopSignal,
      });
      await until(() => /lane_propose/.test(stdout), 'the existing event');
      const post = await zz(
        dir,
        env,
        'ask',
        'post',
        '--lane-id',
        'x',
        '--kind',
        'work',
        '--title',
        'T',
        '--json',
      );
      const askId = post.json().ask.ask_id as string;
      await until(
        () => new RegExp(`ask_post +owner@example\\.com +${askId}`).test(stdout),
        'the new event',
      );
      ctrlC();
      expect(await following).toBe(0);
      expect(stderr).toBe('');
      const [header, ...rows] = stdout.split('\n');
      expect(header).toMatch(/^TIME +LANE_ID +OP +ACTOR +ASK_ID$/);
      // Each line's values start where the header's columns do.
      const posted = rows.find((l) => l.includes(askId))!;
      expect(posted.indexOf('ask_post')).toBe(header!.indexOf('OP'));
      expect(posted.indexOf('owner@example.com')).toBe(header!.indexOf('ACTOR'));
      expect(posted.indexOf(askId)).toBe(header!.indexOf('ASK_ID'));
      // The loop did not print the first event twice.
      expect(stdout.match(/lane_propose/g)).toHaveLength(1);
    } finally {
      cleanup();
    }
  });
});

describe('zz lane events --follow with unreadable Lane refs', () => {
  it('names the first 50 once each and counts the rest once', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' });
      // Not lane ids: each is named unreadable by ref.
      const refs = Array.from({ length: 53 }, (_, i) => `refs/zz/lanes/BAD-${i}`);
      execFileSync('git', ['update-ref', '--stdin'], {
        cwd: dir,
        input: refs.map((r) => `create ${r} ${head.trim()}\n`).join(''),
      });
      let stdout = '';
      let stderr = '';
      let ctrlC!: () => void;
      const stopSignal = new Promise<void>((r) => (ctrlC = r));
      const following = run(['lane', 'events', '--follow'], {
        stdout: (s) => (stdout += s),
        stderr: (s) => (stderr += s),
        env,
        cwd: dir,
        isTTY: false,
        stopSignal,
      });
      await until(() => /lane_propose/.test(stdout), 'the first event');
      await zz(dir, env, 'lane', 'propose', '--lane-id', 'y', '--title', 'Y');
      await until(() => stdout.match(/lane_propose/g)?.length === 2, 'the next event');
      ctrlC();
      expect(await following).toBe(0);
      expect(
        stderr.match(/zz: skipped refs\/zz\/lanes\/BAD-\d+, which cannot be read/g),
      ).toHaveLength(50);
      expect(stderr.match(/zz: skipped 3 more lane ref\(s\) that cannot be read/g)).toHaveLength(1);
    } finally {
      cleanup();
    }
  });
});

describe('a search without a Ladder', () => {
  it('says to run zz ladder build, and stops saying it once there is one', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      const before = await zz(dir, env, 'ladder', 'search', '--query', 'demo');
      expect(before.code).toBe(0);
      expect(before.stderr).toBe(
        'zz: this repository has no Ladder yet; build it with `zz ladder build`\n',
      );
      expect((await zz(dir, env, 'ladder', 'build')).code).toBe(0);
      const after = await zz(dir, env, 'ladder', 'search', '--query', 'nothingmatchesthis');
      expect(after.code).toBe(0);
      expect(after.stderr).toBe('');
    } finally {
      cleanup();
    }
  });
});
