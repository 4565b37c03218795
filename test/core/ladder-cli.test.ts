import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/index.js';
import { zz, cliEnv } from '../helpers/cli-harness.js';
import {
  commitFile,
  ladderDir as dir,
  ladderTestRepo,
  revParse,
} from '../helpers/ladder-fixture.js';

// `zz ladder build` on the Ladder's small real repository (helpers/ladder-fixture.ts): its
// output, its refusal of a malformed --model, its progress bar. The build itself: ladder.test.ts.

ladderTestRepo();

describe('zz ladder build (CLI)', () => {
  it('prints the result with --json and refuses a malformed --model', async () => {
    const env = cliEnv();
    commitFile(
      dir,
      'src/util/clock.ts',
      'export const now = () => Date.now();\n',
      'chore: simpler clock',
    );
    const r = await zz(dir, env, 'ladder', 'build', '--json');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    const out = r.json();
    expect(out).toMatchObject({
      committed: true,
      head: revParse('HEAD'),
      files: expect.any(Number),
    });
    expect(out.written).toBeGreaterThanOrEqual(3);
    const again = await zz(dir, env, 'ladder', 'build');
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(/is up to date/);
    const m = await zz(dir, env, 'ladder', 'build', '--model', 'gpt-4o');
    expect(m.code).toBe(2);
    expect(m.stderr).toMatch(/is not one of openai:<model>/);
  });

  it('draws a progress bar on stderr when it is a terminal, and clears it', async () => {
    commitFile(dir, 'src/util/clock.ts', 'export const now = () => 0;\n', 'chore: frozen clock');
    let stdout = '';
    let stderr = '';
    const code = await run(['ladder', 'build'], {
      stdout: (x) => (stdout += x),
      stderr: (x) => (stderr += x),
      env: cliEnv(),
      cwd: dir,
      isTTY: false,
      stderrIsTTY: true,
    });
    expect(code, stderr).toBe(0);
    expect(stderr).toMatch(/Ladder \[#+-*\] files \d+\/\d+/);
    expect(stderr.endsWith('\r\x1b[K')).toBe(true);
    expect(stdout).toMatch(/rungs written/);
  });
});
