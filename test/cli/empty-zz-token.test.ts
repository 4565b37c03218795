import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, zz, zzMain } from '../helpers/cli-harness.js';
import { startTestDaemon, type TestDaemon } from '../helpers/test-daemon.js';
import { makeRepo } from '../helpers/temp-repo.js';
import { initRepo, ZzRepo } from '../../src/core/index.js';

// ZZ_TOKEN set but empty is a mistake said as such, never a silent fall back to the stored
// login (review M2): an MCP config's `"ZZ_TOKEN": "${env:ZZ_TOKEN}"` gives "" when the variable
// is not exported, and the agent ran with every one of the owner's tools. Every path that picks
// the token is tried: the fast path and the command table through a daemon, `zz whoami`,
// `zz dashboard`, and in-process without a daemon.

const OWNER = 'owner@example.com';
const EMPTY = /ZZ_TOKEN is set but empty/;

let t: TestDaemon;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  t = await startTestDaemon({ prefix: 'zz-empty-token-', owner: OWNER });
  env = cliEnv();
  const login = await zz(t.dir, env, 'login', '--json');
  expect(login.code, login.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  await t?.close();
});

describe('an empty ZZ_TOKEN', () => {
  it('the stored login works when ZZ_TOKEN is not set at all', async () => {
    expect(env.ZZ_TOKEN).toBeUndefined();
    const r = await zzMain(t.dir, env, ['repo', 'state']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`actor: ${OWNER}`);
  });

  for (const value of ['', '   ', '\t']) {
    it(`${JSON.stringify(value)} is refused by every path through the daemon, naming the mistake`, async () => {
      const bad = { ...env, ZZ_TOKEN: value };
      // The built zz: the fast path first, then the command table.
      for (const args of [['repo', 'state'], ['lane', 'list'], ['whoami']]) {
        const r = await zzMain(t.dir, bad, args);
        expect(r.code, args.join(' ')).not.toBe(0);
        expect(r.stderr, args.join(' ')).toMatch(EMPTY);
        expect(r.stdout, args.join(' ')).not.toContain(OWNER);
      }
      const dash = await zz(t.dir, bad, 'dashboard', '--no-open', '--json');
      expect(dash.code).not.toBe(0);
      expect(dash.stderr).toMatch(EMPTY);
      expect(dash.stdout).not.toContain('#code=');
    });
  }

  it('is refused in-process too (no daemon for the checkout)', async () => {
    const { dir } = makeRepo('zz-empty-token-local-');
    const repo = await ZzRepo.open(dir);
    await initRepo(repo, { owner: OWNER, default_branch: 'main' });
    repo.close();
    const fine = await zz(dir, env, 'repo', 'state');
    expect(fine.code, fine.stderr).toBe(0);
    expect(fine.stdout).toContain(`actor: ${OWNER}`);
    const r = await zz(dir, { ...env, ZZ_TOKEN: '' }, 'repo', 'state');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(EMPTY);
    expect(r.stdout).toBe('');
  });
});
