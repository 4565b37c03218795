import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync, chmodSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';

describe('zz init', () => {
  it('creates config and lane _repo, adds no refspec without remotes, installs the hook, and is idempotent', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      const r = await zz(dir, env, 'init', '--json');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      const rep = r.json();
      expect(rep.created_config).toBe(true);
      expect(rep.hooks_installed).toEqual(['post-merge', 'post-rewrite']);
      expect(sh(dir, 'for-each-ref', '--format=%(refname)', 'refs/zz').split('\n').sort()).toEqual([
        'refs/zz/config',
        'refs/zz/lanes/_repo',
      ]);
      const cfg = JSON.parse(sh(dir, 'show', 'refs/zz/config:config.json'));
      expect(cfg.owners).toEqual(['owner@example.com']);
      expect(cfg.default_branch).toBe('main');
      const hook = readFileSync(join(dir, '.git/hooks/post-merge'), 'utf8');
      expect(hook).toContain('hook post-merge');
      const before = sh(dir, 'for-each-ref', 'refs/zz');
      const again = await zz(dir, env, 'init');
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/already initialised/);
      expect(sh(dir, 'for-each-ref', 'refs/zz')).toBe(before);
    } finally {
      cleanup();
    }
  });

  it('fails with one line and a non-zero exit outside a repository, and without user.email', async () => {
    const env = cliEnv();
    const outside = mkdtempSync(join(tmpdir(), 'zz-nogit-'));
    const r = await zz(outside, { ...env, GIT_CEILING_DIRECTORIES: tmpdir() }, 'init');
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/not a git repository/);
    const { dir, cleanup } = makeRepo();
    try {
      sh(dir, 'config', '--unset', 'user.email');
      const r2 = await zz(
        dir,
        {
          ...env,
          HOME: outside,
          XDG_CONFIG_HOME: join(outside, 'cfg'),
          GIT_CONFIG_NOSYSTEM: '1',
          GIT_CONFIG_GLOBAL: '/dev/null',
        },
        'init',
      );
      expect(r2.code).not.toBe(0);
      expect(r2.stderr).toMatch(/user.email/);
      expect(sh(dir, 'for-each-ref', 'refs/zz')).toBe('');
    } finally {
      cleanup();
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("never overwrites the user's own hook", async () => {
    const { dir, cleanup } = makeRepo();
    try {
      writeFileSync(join(dir, '.git/hooks/post-merge'), '#!/bin/sh\necho mine\n');
      chmodSync(join(dir, '.git/hooks/post-merge'), 0o755);
      const r = await zz(dir, cliEnv(), 'init', '--json');
      expect(r.json().hooks_skipped[0].reason).toMatch(/zz hook post-merge/);
      expect(readFileSync(join(dir, '.git/hooks/post-merge'), 'utf8')).toBe(
        '#!/bin/sh\necho mine\n',
      );
    } finally {
      cleanup();
    }
  });

  it('a clone adopts the state its remote holds; the post-merge hook fast-forwards it', async () => {
    const origin = makeRepo();
    const clone = mkdtempSync(join(tmpdir(), 'zz-clone-'));
    const env = cliEnv();
    try {
      expect((await zz(origin.dir, env, 'init')).code).toBe(0);
      execFileSync('git', ['clone', '-q', origin.dir, clone]);
      sh(clone, 'config', 'user.email', 'second@example.com');
      const r = await zz(clone, env, 'init', '--json');
      expect(r.code).toBe(0);
      const rep = r.json();
      expect(rep.refspecs_added).toEqual(['origin']);
      expect(rep.adopted.sort()).toEqual(['refs/zz/config', 'refs/zz/lanes/_repo']);
      expect(rep.created_config).toBe(false);
      expect(sh(clone, 'rev-parse', 'refs/zz/config')).toBe(
        sh(origin.dir, 'rev-parse', 'refs/zz/config'),
      );
      expect(sh(clone, 'config', '--get-all', 'remote.origin.fetch')).toContain(
        '+refs/zz/*:refs/zz-remotes/origin/*',
      );
      // New state on the origin arrives with a plain fetch and the hook fast-forwards it.
      expect(
        (await zz(origin.dir, env, 'lane', 'propose', '--lane-id', 'shared', '--title', 'Shared'))
          .code,
      ).toBe(0);
      sh(clone, 'fetch', '-q', 'origin');
      const h = await zz(clone, env, 'hook', 'post-merge');
      expect(h.code).toBe(0);
      expect(sh(clone, 'rev-parse', 'refs/zz/lanes/shared')).toBe(
        sh(origin.dir, 'rev-parse', 'refs/zz/lanes/shared'),
      );
    } finally {
      origin.cleanup();
      rmSync(clone, { recursive: true, force: true });
    }
  });
});

describe('tool commands (in-process, no daemon)', () => {
  it('one subcommand per tool with options from the schema; --json; readable tables; exit codes', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      const p = await zz(
        dir,
        env,
        'lane',
        'propose',
        '--lane-id',
        'docs',
        '--title',
        'Docs',
        '--json',
      );
      expect(p.code).toBe(0);
      expect(p.json().lane.coordinators).toEqual(['owner@example.com']);
      const post = await zz(
        dir,
        env,
        'ask',
        'post',
        '--lane-id',
        'docs',
        '--kind',
        'work',
        '--title',
        'Write the guide',
        '--priority',
        '1',
        '--json',
      );
      const askId = post.json().ask.ask_id;
      const list = await zz(dir, env, 'lane', 'list');
      expect(list.stdout).toMatch(/LANE_ID\s+TITLE/);
      expect(list.stdout).toMatch(/docs\s+Docs/);
      const q = await zz(dir, env, 'ask', 'query-claimable', '--lane-id', 'docs');
      expect(q.stdout).toContain(askId);
      const c = await zz(
        dir,
        env,
        'call',
        'ask_claim',
        '--args',
        JSON.stringify({ lane_id: 'docs', ask_id: askId }),
      );
      expect(c.json().ask.holder).toBe('owner@example.com');
      const bad = await zz(
        dir,
        env,
        'ask',
        'claim',
        '--lane-id',
        'docs',
        '--ask-id',
        'ask-0000000000',
      );
      expect(bad.code).toBe(4);
      expect(bad.stderr).toMatch(/^zz: ask ask-0000000000 does not exist/);
      const invalid = await zz(dir, env, 'call', 'lane_get', '--args', '{"lane_id": "../x"}');
      expect(invalid.code).toBe(2);
      const notJson = await zz(dir, env, 'call', 'lane_get', '--args', '{oops');
      expect(notJson.code).toBe(2);
      expect(notJson.stderr).toMatch(/not valid JSON/);
      const unknown = await zz(dir, env, 'call', 'nope_tool');
      expect(unknown.code).toBe(4);
      const help = await zz(dir, env, 'ask', 'claim', '--help');
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/--lane-id/);
    } finally {
      cleanup();
    }
  });

  it('agent create/token/revoke manage tokens without ever storing them on refs', async () => {
    const { dir, cleanup } = makeRepo();
    const env = cliEnv();
    try {
      await zz(dir, env, 'init');
      const login = await zz(dir, env, 'login', '--json');
      expect(login.code).toBe(0);
      expect(login.json().token).toMatch(/^zzt_[A-Za-z0-9_-]{43}$/);
      const a = await zz(dir, env, 'agent', 'create', 'claude', '--json');
      expect(a.json().actor).toBe('owner@example.com[claude]');
      const t = await zz(dir, env, 'agent', 'token', 'claude', '--json');
      expect(t.json().token).toBe(a.json().token);
      const credsFile = join(env.XDG_CONFIG_HOME!, 'zz', 'credentials.json');
      expect(existsSync(credsFile)).toBe(true);
      expect((await import('node:fs')).statSync(credsFile).mode & 0o777).toBe(0o600);
      const tokens = readFileSync(join(dir, '.git/zz/tokens.json'), 'utf8');
      expect(tokens).not.toContain(a.json().token);
      expect(
        execFileSync('git', ['log', '-p', '--all'], { cwd: dir, encoding: 'utf8' }),
      ).not.toContain('zzt_');
      const rv = await zz(dir, env, 'agent', 'revoke', 'claude');
      expect(rv.code).toBe(0);
      const bad = await zz(dir, env, 'agent', 'create', '../x');
      expect(bad.code).toBe(2);
    } finally {
      cleanup();
    }
  });
});
