import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { makeRepo } from '../helpers/temp-repo.js';

// XDG_CONFIG_HOME (or HOME) naming a file rather than a folder is the machine's setup: one line
// naming the path and what to check (exit 6), not "internal error" with node's ENOTDIR stack.

const { dir, cleanup } = makeRepo();
afterAll(() => cleanup());

describe('a config home that is a file', () => {
  it.each([['init'], ['login']])('zz %s says which path cannot be used', async (cmd) => {
    const file = join(tempDir('zz-cfg-file-'), 'not-a-folder');
    writeFileSync(file, 'x');
    const env = { ...cliEnv(), XDG_CONFIG_HOME: file };
    const r = await zz(dir, env, cmd);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(
      new RegExp(
        `^zz: ${file}/zz/\\S+ cannot be used: a part of it is a file, not a folder \\(ENOTDIR\\); check that path \\(and HOME, XDG_CONFIG_HOME\\)\\n$`,
      ),
    );
  });
});
