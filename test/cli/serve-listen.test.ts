import { afterAll, describe, expect, it } from 'vitest';
import { cliEnv, zz } from '../helpers/cli-harness.js';
import { makeRepo } from '../helpers/temp-repo.js';

// `zz serve --host H` where H cannot be listened on is the user's mistake, said in one line
// with exit 2, not an "internal error" with node's stack (getaddrinfo ENOTFOUND).

const { dir, cleanup } = makeRepo();
afterAll(() => cleanup());

describe('zz serve --host that cannot be bound', () => {
  it('refuses a name that does not resolve in one line, exit 2', async () => {
    const env = cliEnv();
    expect((await zz(dir, env, 'init')).code).toBe(0);
    const r = await zz(dir, env, 'serve', '--host', 'no-such-host.invalid', '--port', '0');
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      /^zz: cannot listen on no-such-host\.invalid: no such host \((?:ENOTFOUND|EAI_AGAIN)\); pass an address of this machine, e\.g\. --host 127\.0\.0\.1$/,
    );
    expect(r.stderr).not.toMatch(/internal|\n\s+at /);
  });
});
