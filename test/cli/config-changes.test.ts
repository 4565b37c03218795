import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { ensureBuilt, killAll, privateEnv, zz as zzProcess } from '../e2e/zz-process.js';

// The CLI reads git config once per process (src/git/git-config.ts) and finds the checkout
// once (src/git/discover.ts). What it answers must follow the config as it is when asked:
// between two commands of one process (the in-process harness, as `zz mcp --local` or an
// embedder runs them) and between two `zz` processes.

describe('git config changed between two commands', () => {
  it('in one process: the next command acts as the new user.email, under the new zz.repo', async () => {
    const { dir } = makeRepo();
    const env = cliEnv();
    const first = await zz(dir, env, 'whoami', '--json');
    expect(first.code, first.stderr).toBe(0);
    expect(first.json()).toMatchObject({ actor: 'owner@example.com' });
    expect(first.json().repo).toMatch(/^local\//);
    sh(dir, 'config', 'user.email', 'second@example.com');
    sh(dir, 'config', 'zz.repo', 'acme/widgets');
    const second = await zz(dir, env, 'whoami', '--json');
    expect(second.code, second.stderr).toBe(0);
    expect(second.json()).toMatchObject({ actor: 'second@example.com', repo: 'acme/widgets' });
  });

  it('between two zz processes', async () => {
    ensureBuilt();
    const { dir } = makeRepo();
    const env = privateEnv();
    try {
      const first = await zzProcess(dir, env, ['whoami', '--json']);
      expect(first.code, first.stderr).toBe(0);
      expect(first.json()).toMatchObject({ actor: 'owner@example.com' });
      sh(dir, 'config', 'user.email', 'second@example.com');
      sh(dir, 'remote', 'add', 'origin', 'https://example.com/acme/gadgets.git');
      const second = await zzProcess(dir, env, ['whoami', '--json']);
      expect(second.code, second.stderr).toBe(0);
      expect(second.json()).toMatchObject({ actor: 'second@example.com', repo: 'acme/gadgets' });
    } finally {
      await killAll();
    }
  }, 60_000);
});
