import { renameSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { initRepo, ZzRepo } from '../../src/core/index.js';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo, sh } from '../helpers/temp-repo.js';
import { fakeModelServer, type FakeModelServer } from '../models/fake-model-server.js';

// Text from elsewhere reaches the terminal shown, never obeyed: a model endpoint's error in
// `zz ladder build`'s "Last failure" (C1 controls and bidi marks, not only C0), and the paths
// and names `zz whoami` prints.

const HOSTILE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]/;

let server: FakeModelServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function initialised(dir: string): Promise<void> {
  const repo = await ZzRepo.open(dir);
  await initRepo(repo, { owner: 'owner@example.com', default_branch: 'main' });
  repo.close();
}

describe('terminal output of remote and stored text', () => {
  it("zz ladder build shows a model endpoint's control characters and bidi marks as escapes", async () => {
    const { dir } = makeRepo('zz-term-build-');
    await initialised(dir);
    server = await fakeModelServer(() => ({
      status: 400,
      body: { error: { message: 'bad \x9b31m request \u202e gnp.exe \x1b]0;owned\x07' } },
    }));
    const env = { ...cliEnv(), OPENAI_BASE_URL: `${server.url}/v1`, OPENAI_API_KEY: 'k' };
    const r = await zz(dir, env, 'ladder', 'build', '--model', 'openai:m');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('Last failure');
    expect(r.stdout).toContain('<U+202E>');
    expect(r.stdout).not.toMatch(HOSTILE);
  });

  it('zz whoami neutralises the git dir it prints', async () => {
    // A checkout in a directory whose name holds an escape sequence and a bidi override: the
    // git dir printed is under it.
    const dir = join(tempDir('zz-term-parent-'), 'a\x1b[2Jb\u202ec');
    renameSync(makeRepo('zz-term-whoami-').dir, dir);
    await initialised(dir);
    const r = await zz(dir, cliEnv(), 'whoami');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('repository:');
    expect(r.stdout).not.toMatch(HOSTILE);
  });

  it('zz whoami shows a newline in user.email as \\n: it forges no line', async () => {
    const { dir } = makeRepo('zz-term-email-');
    await initialised(dir);
    sh(dir, 'config', 'user.email', 'me@example.com\n  acting as: forged');
    const who = await zz(dir, cliEnv(), 'whoami');
    expect(who.code, who.stderr).toBe(0);
    const acting = who.stdout.split('\n').filter((l) => l.trimStart().startsWith('acting as:'));
    expect(acting).toHaveLength(1);
    expect(acting[0]).not.toContain('forged');
    expect(who.stdout).toContain('me@example.com\\n  acting as: forged');
  });
});
