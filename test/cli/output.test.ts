import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { neutralize } from '../../src/cli/terminal.js';

// What the CLI's text output shows: hostile values neutralised (issue 11.7), multi-line values
// whole or visibly cut (issue 13.2). Each test runs the command as a user would type it.

// ESC, CSI, OSC (retitle), BEL, C1 CSI, backspace, CR, bidi override and isolate.
const HOSTILE = 'evil\x1b]0;pwned\x07\x1b[2J\x9b31m\bX\rY \u202egnp.exe\u2066z';
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

describe('terminal output neutralises control characters', () => {
  it('zz lane get shows a hostile title as visible escapes, never raw', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      expect((await zz(dir, env, 'init')).code).toBe(0);
      const p = await zz(dir, env, 'lane', 'propose', '--lane-id', 'x', '--title', HOSTILE);
      expect(p.code).toBe(0);
      expect(p.stdout).not.toMatch(RAW);
      const post = await zz(dir, env, 'ask', 'post', '--lane-id', 'x', '--kind', 'work');
      expect(post.code).not.toBe(0); // a missing --title, for the error path below
      const g = await zz(dir, env, 'lane', 'get', '--lane-id', 'x');
      expect(g.code).toBe(0);
      expect(g.stdout).not.toMatch(RAW);
      expect(g.stdout).toContain(
        'title: evil\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\x08X\\x0dY <U+202E>gnp.exe<U+2066>z',
      );
      // --json keeps the value exactly (JSON escapes it).
      const j = await zz(dir, env, 'lane', 'get', '--lane-id', 'x', '--json');
      expect(j.json().lane.title).toBe(HOSTILE);
      expect(j.stdout).not.toMatch(RAW);
      // In a table too.
      const list = await zz(dir, env, 'lane', 'list');
      expect(list.stdout).not.toMatch(RAW);
      expect(list.stdout).toContain('evil\\x1b]0;pwned');
    } finally {
      cleanup();
    }
  });

  it('keeps line breaks in blocks, and CR only where it ends a line', () => {
    expect(neutralize('a\r\nb\rc\x1b', { multiline: true })).toBe('a\r\nb\\x0dc\\x1b');
    expect(neutralize('a\nb\tc')).toBe('a\\nb\\tc');
  });
});

describe('multi-line values are shown whole or marked', () => {
  it('zz git show-file prints the file; zz git diff prints hunks', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      const text = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of the file`).join('\n');
      writeFileSync(join(dir, 'notes.txt'), text + '\n');
      sh(dir, 'add', '.');
      sh(dir, 'commit', '-q', '-m', 'Add notes\n\nA body that explains why,\nover two lines.');
      const f = await zz(dir, env, 'git', 'show-file', '--path', 'notes.txt');
      expect(f.code).toBe(0);
      expect(f.stdout).toBe(text + '\n');
      expect(f.stderr).toBe('');
      // A page of it: the rest is announced on stderr with the command that shows it.
      const page = await zz(dir, env, 'git', 'show-file', '--path', 'notes.txt', '--limit', '20');
      // Piped, a page is its exact bytes (no newline added): pages joined make the file.
      expect(page.stdout).toBe(text.slice(0, 20));
      expect(page.stderr).toMatch(/showed bytes 0–19 of \d+ .*--offset 20/);
      const d = await zz(dir, env, 'git', 'diff');
      expect(d.code).toBe(0);
      expect(d.stdout).toContain('diff --git a/notes.txt b/notes.txt\n');
      expect(d.stdout).toContain('@@ -0,0 +1,30 @@\n+line 1 of the file\n+line 2 of the file\n');
      expect(d.stdout).toContain('+line 30 of the file\n');
      // A commit message in a table keeps its first line and is marked as cut.
      const log = await zz(dir, env, 'git', 'log');
      expect(log.stdout).toMatch(/Add notes …/);
      expect(log.stdout).toMatch(/--json prints every value whole/);
    } finally {
      cleanup();
    }
  });

  it('an Ask body and sandbox stdout are printed whole', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      await zz(dir, env, 'lane', 'propose', '--lane-id', 'docs', '--title', 'Docs');
      const body = 'First line.\nSecond line.\n\nA third paragraph.';
      const p = await zz(
        dir,
        env,
        'ask',
        'post',
        '--lane-id',
        'docs',
        '--kind',
        'work',
        '--title',
        'T',
        '--body',
        body,
      );
      expect(p.code).toBe(0);
      expect(p.stdout).toContain(
        '  body: |\n    First line.\n    Second line.\n    \n    A third paragraph.\n',
      );
      const s = await zz(
        dir,
        env,
        'run',
        'in-sandbox',
        '--commit',
        'main',
        '--command',
        'sh',
        '--command=-c',
        '--command',
        'for i in 1 2 3 4 5 6 7; do echo "out $i"; done',
      );
      expect(s.code).toBe(0);
      for (let i = 1; i <= 7; i++) expect(s.stdout).toContain(`  out ${i}\n`);
    } finally {
      cleanup();
    }
  });

  it('zz ladder read shows every line of a rung', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      writeFileSync(
        join(dir, 'README.md'),
        '# Demo\n\nThe demo explains things.\nIt has several sentences. And more.\n\n## Usage\n\nRun it.\n',
      );
      sh(dir, 'commit', '-qam', 'readme');
      await zz(dir, env, 'init');
      expect((await zz(dir, env, 'ladder', 'build')).code).toBe(0);
      const j = await zz(dir, env, 'ladder', 'read', '--path', 'README.md', '--json');
      expect(j.code).toBe(0);
      const t = await zz(dir, env, 'ladder', 'read', '--path', 'README.md');
      const rung = j.json().rung as Record<string, unknown>;
      for (const v of Object.values(rung)) {
        if (typeof v !== 'string') continue;
        for (const line of v.split('\n')) expect(t.stdout).toContain(line);
      }
    } finally {
      cleanup();
    }
  });

  it('zz ask list across Lanes, zz ask get, cancel and lane close render as tables and blocks', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      await zz(dir, env, 'lane', 'propose', '--lane-id', 'docs', '--title', 'Docs');
      const post = (lane: string, title: string) =>
        zz(
          dir,
          env,
          'ask',
          'post',
          '--lane-id',
          lane,
          '--kind',
          'work',
          '--title',
          title,
          '--body',
          `${title}\nsecond line`,
          '--json',
        );
      const a = (await post('docs', 'Write it')).json().ask.ask_id as string;
      const e = (await post('_repo', 'Elsewhere')).json().ask.ask_id as string;
      await zz(dir, env, 'ask', 'claim', '--lane-id', '_repo', '--ask-id', e);
      const claimed = await zz(dir, env, 'ask', 'list', '--state', 'claimed');
      expect(claimed.stdout).toMatch(new RegExp(`${e} +_repo +work +claimed +\\d +owner@`));
      expect(claimed.stdout).not.toContain(a);
      const open = await zz(dir, env, 'ask', 'list', '--mine', '--state', 'open');
      expect(open.stdout).toMatch(new RegExp(`^${a} +docs +work +open`, 'm'));
      expect(open.stdout).not.toContain(e);
      const list = await zz(dir, env, 'ask', 'list');
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(/ASK_ID +LANE_ID +KIND +STATE/);
      expect(list.stdout).toMatch(new RegExp(`${a} +docs +work +open`));
      expect(list.stdout).toMatch(/_repo +work +claimed .*Elsewhere/);
      const get = await zz(dir, env, 'ask', 'get', '--lane-id', 'docs', '--ask-id', a);
      expect(get.stdout).toContain('  body: |\n    Write it\n    second line\n');
      expect((await zz(dir, env, 'ask', 'cancel', '--lane-id', 'docs', '--ask-id', a)).code).toBe(
        0,
      );
      expect((await zz(dir, env, 'lane', 'close', '--lane-id', 'docs')).code).toBe(0);
      const cancelled = await zz(dir, env, 'ask', 'list', '--state', 'cancelled');
      expect(cancelled.stdout).toMatch(new RegExp(`${a} +docs +work +cancelled`));
      expect(cancelled.stdout).not.toContain('Elsewhere');
      // zz lane list: the counts whole, and when a Lane was closed.
      const lanes = await zz(dir, env, 'lane', 'list');
      const closedAt = (await zz(dir, env, 'lane', 'get', '--lane-id', 'docs', '--json')).json()
        .lane.closed.at as string;
      expect(lanes.stdout).toMatch(/LANE_ID +TITLE +COUNTS +CLOSED +COORDINATORS/);
      expect(lanes.stdout).toMatch(
        new RegExp(`docs +Docs +open=0 claimed=0 answered=0 cancelled=1 total=1 +${closedAt} `),
      );
      expect(lanes.stdout).toMatch(/_repo +Repository +open=0 claimed=1 .* total=1 +- +owner@/);
      expect(lanes.stdout).not.toContain('…');
      // An empty list is a list, not a dash.
      const agents = await zz(dir, env, 'agent', 'list');
      expect(agents.stdout).toBe('agents (0)\n(none)\n');
    } finally {
      cleanup();
    }
  });
});
