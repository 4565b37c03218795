import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startTestDaemon } from '../helpers/test-daemon.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeProject, makeRepo, sh } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, serve, zz } from './zz-process.js';
import { initializeRequest } from '../mcp/helpers.js';

// A new user's first hour, as README's Quick start and docs/walkthrough.md have it, run with the
// built `zz` on real repositories: each test is a friction met doing exactly that on
// pallets/click, expressjs/express and prettier/prettier, kept from coming back.

beforeAll(() => ensureBuilt());
afterEach(async () => {
  await killAll();
});

describe('the first hour', () => {
  it('finds what `zz ladder build` just wrote beside a running daemon, before its ref watcher fires', async () => {
    // Walkthrough §7: `zz ladder build` runs in-process and moves refs/zz/ladder under the
    // daemon; the daemon's index followed only when its ref watcher fired, so the search run
    // next answered "hits (0)". With the watcher off (as where inotify is unavailable) the
    // search must still see the Ladder: it catches the index up when asked.
    const td = await startTestDaemon({ daemon: { watchRefs: false } });
    try {
      const env = privateEnv();
      mkdirSync(join(td.dir, 'src'));
      writeFileSync(
        join(td.dir, 'src', 'parser.py'),
        '"""Parses command line options."""\n\ndef split_arg_string(s):\n    return s.split()\n',
      );
      sh(td.dir, 'add', '.');
      sh(td.dir, 'commit', '-q', '-m', 'add the parser');
      expect((await zz(td.dir, env, ['login'])).code).toBe(0);
      const built = await zz(td.dir, env, ['ladder', 'build']);
      expect(built.code, built.stderr).toBe(0);
      const found = await zz(td.dir, env, ['ladder', 'search', '--query', 'parser', '--json']);
      expect(found.code, found.stderr).toBe(0);
      expect(found.json().hits.map((h: { path: string }) => h.path)).toContain('src/parser.py');
      // It was the daemon's index that answered, not a one-off index in the CLI.
      expect(td.logs.some((l) => / ladder_search owner@example\.com 200 /.test(l))).toBe(true);
    } finally {
      await td.close();
    }
  });

  it('outside a checkout, says where zz looked and where it must run instead', async () => {
    // `zz lane list` in a home folder printed "not a git repository: /tmp" and nothing more.
    const outside = tempDir('zz-nogit-');
    const env = privateEnv({ GIT_CEILING_DIRECTORIES: tmpdir() });
    for (const args of [['lane', 'list'], ['init'], ['serve'], ['sync'], ['mcp']]) {
      const r = await zz(outside, env, args);
      expect(r.code, args.join(' ')).toBe(6);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toEqual([
        `zz: not a git repository: ${outside}; zz works inside a git checkout: cd into one (or give an MCP client the checkout as its cwd), or make one with git clone or git init`,
      ]);
    }
  });

  it('lines tables up by terminal columns and cuts a long path in the middle, keeping its file', async () => {
    // Real names from prettier/prettier and expressjs/express: wide characters and emoji take
    // two columns, and padding by string length pushed every column after them out of line;
    // a long path cut at its end hid the file's name (every search hit read the same).
    const { dir } = makeRepo('zz-wide-');
    const env = privateEnv();
    const folder = 'tests/integration/cli/special-characters-in-path/ignore-emoji/ignored';
    mkdirSync(join(dir, folder), { recursive: true });
    for (const name of ['中文.js', '😁.js', 'a.js'])
      writeFileSync(join(dir, folder, name), `// ${name}\nexport default 1;\n`);
    sh(dir, 'add', '.');
    sh(dir, '-c', 'user.name=刘星', 'commit', '-q', '-m', 'Fix res.attachment Unicode filenames');
    expect((await zz(dir, env, ['init'])).code).toBe(0);
    expect((await zz(dir, env, ['ladder', 'build'])).code).toBe(0);
    const tree = await zz(dir, env, ['ladder', 'tree', '--under', folder]);
    expect(tree.code, tree.stderr).toBe(0);
    const rows = tree.stdout.split('\n');
    const header = rows.find((l) => l.startsWith('PATH'))!;
    expect(header).toMatch(/^PATH {42}KIND {7}STALE {2}SUMMARY$/);
    // Each path cell is 44 columns, as the header's PATH, whatever its characters take.
    expect(rows).toEqual(
      expect.arrayContaining([
        'tests/integrat…-in-path/ignore-emoji/ignored  directory  false  3 files (.js). …',
        'tests/integrat…ath/ignore-emoji/ignored/a.js  file       false  Tests for a, 2 lines.',
        'tests/integrat…/ignore-emoji/ignored/中文.js  file       false  Tests for 中文, 2 lines.',
        'tests/integrat…th/ignore-emoji/ignored/😁.js  file       false  Tests for 😁, 2 lines.',
      ]),
    );
    const log = await zz(dir, env, ['git', 'log', '--direction', 'newest', '--limit', '1']);
    expect(log.code, log.stderr).toBe(0);
    const oid = sh(dir, 'rev-parse', 'HEAD');
    expect(log.stdout.split('\n')).toContain(
      `${oid}  刘星    Fix res.attachment Unicode filenames`,
    );
  });

  it('says where the next page starts once, under the page, and no empty paging fields above it', async () => {
    // `zz lane list` opened with `next_cursor: -` and `corrupt_more: 0`, and `zz git log`
    // printed its 150-character cursor twice: once as a field, once in the hint.
    const { dir } = makeRepo('zz-paging-');
    const env = privateEnv();
    expect((await zz(dir, env, ['init'])).code).toBe(0);
    const lanes = await zz(dir, env, ['lane', 'list']);
    expect(lanes.code, lanes.stderr).toBe(0);
    expect(lanes.stdout.split('\n').slice(0, 3)).toEqual(['total: 1', 'corrupt: -', 'lanes (1)']);
    sh(dir, 'commit', '-q', '--allow-empty', '-m', 'second');
    const log = await zz(dir, env, ['git', 'log', '--limit', '1']);
    expect(log.code, log.stderr).toBe(0);
    const cursor = (await zz(dir, env, ['git', 'log', '--limit', '1', '--json'])).json()
      .next_cursor as string;
    expect(log.stdout.split(cursor)).toHaveLength(2);
    expect(log.stdout).toContain(`(more: pass --cursor ${cursor} for the next page)`);
    // One file is one file (the build said "1 files").
    const built = await zz(dir, env, ['ladder', 'build']);
    expect(built.stdout).toMatch(/; 1 file in \d+\.\ds \(revision /);
    const state = await zz(dir, env, ['repo', 'state']);
    expect(state.code, state.stderr).toBe(0);
    expect(state.stdout).not.toMatch(/_more: 0|lanes_next_cursor/);
  });

  it('whoami names the MCP endpoint a client configured by URL needs, and it answers', async () => {
    // Walkthrough §10 gave `http://127.0.0.1:7433/api/repos/local/webapp/mcp`: a user's port
    // and repository key differ, and nothing printed theirs.
    const { dir } = makeRepo('zz-mcp-url-');
    const env = privateEnv();
    expect((await zz(dir, env, ['init'])).code).toBe(0);
    const served = await serve(dir, env);
    expect((await zz(dir, env, ['login'])).code).toBe(0);
    const who = await zz(dir, env, ['whoami']);
    expect(who.code, who.stderr).toBe(0);
    const url = `${served.url}/api/repos/${served.repoKeys[0]}/mcp`;
    expect(who.stdout).toContain(`\n  MCP over HTTP: ${url}\n`);
    expect((await zz(dir, env, ['whoami', '--json'])).json().mcp_url).toBe(url);
    expect((await zz(dir, env, ['agent', 'create', 'claude'])).code).toBe(0);
    const token = (await zz(dir, env, ['agent', 'token', 'claude'])).stdout.trim();
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(initializeRequest()),
    });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('"serverInfo":{"name":"zz"');
  });

  it("registers a second machine's key by the steps its zz init prints, and says to sync", async () => {
    // Walkthrough §9, two people on two machines through one bare remote: Bob's `zz init`
    // names the command for an owner; `zz key add` then printed a revision alone, and the
    // key reached Bob's clone only after two syncs nobody was told about.
    const { dir: a, remote } = makeProject('first-hour');
    const envA = privateEnv();
    expect((await zz(a, envA, ['init'])).code).toBe(0);
    const pushed = await zz(a, envA, ['sync']);
    expect(pushed.code, pushed.stderr).toBe(0);
    const b = tempDir('zz-first-hour-bob-');
    sh(b, 'clone', '-q', remote, '.');
    sh(b, 'config', 'user.email', 'bob@example.com');
    const envB = privateEnv();
    const init = await zz(b, envB, ['init']);
    expect(init.code, init.stderr).toBe(0);
    const told = /run: zz key add --actor (\S+) --key "([^"]+)"/.exec(init.stdout + init.stderr);
    expect(told, init.stdout + init.stderr).not.toBeNull();
    const added = await zz(a, envA, ['key', 'add', '--actor', told![1]!, '--key', told![2]!]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(/^revision: [0-9a-f]{40}\n$/);
    expect(added.stderr).toBe(
      'zz: the key is registered in this clone; run `zz sync` here, then `zz sync` on the machine whose key it is\n',
    );
    expect((await zz(a, envA, ['sync'])).code).toBe(0);
    expect((await zz(b, envB, ['sync'])).code).toBe(0);
    const keys = (await zz(b, envB, ['key', 'list', '--json'])).json() as {
      keys: Array<{ actor: string }>;
    };
    expect(keys.keys.map((k) => k.actor)).toContain('bob@example.com');
  });

  it('zz serve before zz init warns that every call will be refused, and serves it once initialised', async () => {
    // README's Quick start has `zz init` first; started the other way round, the daemon
    // printed its URL alone and every agent's call was refused with 412.
    const { dir } = makeRepo('zz-serve-first-');
    const env = privateEnv();
    const served = await serve(dir, env);
    const warning = await served.waitForLog(/not initialised/, 15_000);
    expect(warning).toBe(
      `zz: warning: ${served.repoKeys[0]} is not initialised for zz, so its tools refuse every call; run \`zz init\` in it (this daemon serves it from then on)`,
    );
    expect((await zz(dir, env, ['init'])).code).toBe(0);
    expect((await zz(dir, env, ['login'])).code).toBe(0);
    const lanes = await zz(dir, env, ['lane', 'list', '--json']);
    expect(lanes.code, lanes.stderr).toBe(0);
    expect(lanes.json().lanes.map((l: { lane_id: string }) => l.lane_id)).toEqual(['_repo']);
    await served.waitForLog(/ lane_list owner@example\.com 200 /);
  });

  it('a wrong or missing Lane id, Ask id or tool name says what to run instead', async () => {
    const { dir } = makeRepo('zz-no-lane-');
    const env = privateEnv();
    expect((await zz(dir, env, ['init'])).code).toBe(0);
    for (const args of [
      ['lane', 'get', '--lane-id', 'dcos'],
      ['ask', 'post', '--lane-id', 'dcos', '--kind', 'work', '--title', 'T'],
      ['ask', 'query-claimable', '--lane-id', 'dcos'],
    ]) {
      const r = await zz(dir, env, args);
      expect(r.code, args.join(' ')).toBe(4);
      expect(r.stderr, args.join(' ')).toBe(
        'zz: lane dcos does not exist; lane_list (zz lane list) names the Lanes there are\n',
      );
    }
    // Left out, the flag is named with where its values are listed.
    const work = await zz(dir, env, ['work', '--model', 'exec:false']);
    expect([work.code, work.stderr]).toEqual([
      2,
      'zz: missing required flag --lane; zz lane list names the Lanes\n',
    ]);
    // A misspelt tool name for `zz call` is pointed at the one meant.
    const call = await zz(dir, env, ['call', 'lane_lsit']);
    expect([call.code, call.stderr]).toEqual([
      4,
      'zz: unknown tool "lane_lsit"; did you mean lane_list?\n',
    ]);
    const claim = await zz(dir, env, ['ask', 'claim', '--lane-id', '_repo']);
    expect([claim.code, claim.stderr]).toEqual([
      2,
      'zz: missing required flag --ask-id; zz ask list names the Asks\n',
    ]);
  });
});
