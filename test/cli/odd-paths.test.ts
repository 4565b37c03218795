import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { sh } from '../helpers/temp-repo.js';

// A checkout whose path git cannot print unambiguously (a line break in a folder name, with an
// ANSI escape for good measure) is refused in one line that says what to do; it was an
// "internal error" with realpath's ENOENT stack from every command. A path with spaces and
// non-ASCII letters works, also without a remote, where the key comes from the folder's name
// (it was "invalid repo key \"local/dépôt avec espaces\"" from every command).

function repoAt(name: string): string {
  const dir = join(tempDir('zz-odd-path-'), name);
  mkdirSync(dir);
  sh(dir, 'init', '-q', '-b', 'main');
  sh(dir, 'config', 'user.email', 'owner@example.com');
  writeFileSync(join(dir, 'a.txt'), 'a\n');
  sh(dir, 'add', '.');
  sh(dir, 'commit', '-q', '-m', 'a');
  return dir;
}

describe('checkouts at odd paths', () => {
  it('refuses a path with a line break in one line, exit 6, for init, lists and serve', async () => {
    const dir = repoAt('evil \x1b[31mred\nline');
    const env = cliEnv();
    for (const args of [['init'], ['lane', 'list'], ['serve', '--port', '0']]) {
      const r = await zz(dir, env, ...args);
      expect(r.code, args.join(' ')).toBe(6);
      expect(r.stderr, args.join(' ')).toMatch(
        /^zz: the path of this repository has a line break in it, which zz does not support; rename the folder \(".*evil \\u001b\[31mred\\nline"\)\n$/,
      );
    }
  });

  it('works at a path with spaces and non-ASCII letters', async () => {
    const dir = repoAt('dépôt avec espaces');
    const env = cliEnv();
    const init = await zz(dir, env, 'init');
    expect(init.code, init.stderr).toBe(0);
    const r = await zz(dir, env, 'lane', 'list');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^_repo /m);
    // Without a remote the key comes from the folder, made a valid key part.
    const state = await zz(dir, env, 'repo', 'state', '--json');
    expect(state.json().repo).toBe('local/depot-avec-espaces');
  });
});
