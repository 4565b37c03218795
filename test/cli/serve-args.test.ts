import { describe, expect, it } from 'vitest';
import { parseServeArgs } from '../../src/cli/serve.js';
import { DEFAULT_HOST } from '../../src/local/paths.js';

// The fast path's reading of `zz serve …` (src/cli/serve.ts): the command lines yargs reads
// the same way, and null for anything it would explain or refuse itself.

describe('parseServeArgs', () => {
  it('reads what the serve command takes, in both of yargs forms', () => {
    // No --port: unset, so the daemon may take the next port when the default is in use.
    expect(parseServeArgs([])).toEqual({ host: DEFAULT_HOST, repos: [] });
    expect(parseServeArgs(['--port', '0'])).toEqual({ port: 0, host: DEFAULT_HOST, repos: [] });
    expect(parseServeArgs(['--port=8080', '--host=::1'])).toEqual({
      port: 8080,
      host: '::1',
      repos: [],
    });
    // --repo is an array: every value up to the next flag, and it may repeat.
    expect(parseServeArgs(['--repo', 'a', 'b', '--port', '1', '--repo=c'])).toEqual({
      port: 1,
      host: DEFAULT_HOST,
      repos: ['a', 'b', 'c'],
    });
  });

  it('leaves to the command table what is not a plain serve command line', () => {
    for (const argv of [
      ['--port'],
      ['--port', 'abc'],
      ['--port', '-1'],
      ['--port', '70000'],
      ['--port', '1', '2'],
      ['--host'],
      ['--host='],
      ['--repo'],
      ['--bogus'],
      ['-p', '1'],
      ['extra'],
      ['--port', '1', '--json'],
    ]) {
      expect(parseServeArgs(argv), argv.join(' ')).toBeNull();
    }
  });
});
